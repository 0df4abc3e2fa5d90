#include "backends/cpu/threads.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define KILN_X86_MXCSR 1
#endif

#include "core/error.h"

namespace kiln::cpu {

namespace {

std::atomic<int> g_threads{0};  // 0: not chosen yet

#ifdef KILN_X86_MXCSR
// MXCSR's FTZ bit, and its DAZ bit where the processor has it (setting it elsewhere faults; every
// processor with SSE3 has it, as TensorFlow assumes too).
unsigned flush_bits() {
  static const unsigned bits = 0x8000 | (__builtin_cpu_supports("sse3") ? 0x0040 : 0);
  return bits;
}
#endif

[[maybe_unused]] void set_flush_denormals() {
#ifdef KILN_X86_MXCSR
  _mm_setcsr(_mm_getcsr() | flush_bits());
#endif
}

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// Physical cores among the CPUs this process may run on (hyperthread siblings counted once).
int physical_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  std::set<std::pair<std::string, std::string>> cores;
  int cpus = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    ++cpus;
    const std::string topo = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    const std::string core = read_first_line(topo + "core_id"), package = read_first_line(topo + "physical_package_id");
    cores.emplace(package, core.empty() ? "cpu" + std::to_string(c) : core);
  }
  return std::max<int>(1, cores.empty() ? cpus : static_cast<int>(cores.size()));
}

// CPUs a cgroup quota allows (v2 cpu.max "quota period", v1 cfs files), rounded up; 0: no limit.
int cgroup_cpu_limit() {
  double quota = -1, period = 0;
  const std::string v2 = read_first_line("/sys/fs/cgroup/cpu.max");
  if (!v2.empty()) {
    if (v2.rfind("max", 0) == 0) return 0;
    quota = std::atof(v2.c_str());
    const size_t space = v2.find(' ');
    period = space == std::string::npos ? 0 : std::atof(v2.c_str() + space + 1);
  } else {
    quota = std::atof(read_first_line("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").c_str());
    period = std::atof(read_first_line("/sys/fs/cgroup/cpu/cpu.cfs_period_us").c_str());
  }
  if (quota <= 0 || period <= 0) return 0;
  return std::max(1, static_cast<int>(std::ceil(quota / period)));
}

}  // namespace

int default_threads() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    // "4" or "4,2" (nested levels): the first level. Not a number: the default below, as OpenMP
    // ignores it too; more threads than kiln takes with --threads is refused, not attempted.
    const char* begin = env;
    const char* end = env + std::strlen(env);
    while (begin < end && std::isspace(static_cast<unsigned char>(*begin))) ++begin;
    while (end > begin && std::isspace(static_cast<unsigned char>(end[-1]))) --end;
    long n = 0;
    const auto [rest, ec] = std::from_chars(begin, end, n);
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && n > 4096))
      fail("[cpu] OMP_NUM_THREADS={} is more threads than kiln runs (1 to 4096)", env);
    if (ec == std::errc() && n >= 1 && (rest == end || *rest == ',')) return static_cast<int>(n);
  }
  int n = physical_cores();
  if (const int limit = cgroup_cpu_limit(); limit > 0) n = std::min(n, limit);
  return n;
}

int threads() {
  int n = g_threads.load();
  if (n == 0) {
    int expected = 0;
    g_threads.compare_exchange_strong(expected, default_threads());
    n = g_threads.load();
  }
  return n;
}

void set_threads(int n) {
  KILN_CHECK(n >= 1 && n <= 4096, "[cpu] threads must be 1..4096, not {}", n);
  g_threads.store(n);
}

void use_threads() {
#ifdef _OPENMP
  thread_local int applied = 0;
  const int want = threads();
  if (applied != want) {
    omp_set_num_threads(want);
    applied = want;
#pragma omp parallel num_threads(want)
    if (omp_get_thread_num() != 0) set_flush_denormals();  // the caller's own mode is scoped
  }
#endif
}

FlushDenormals::FlushDenormals() {
#ifdef KILN_X86_MXCSR
  saved_ = _mm_getcsr();
  set_flush_denormals();
#endif
}

FlushDenormals::~FlushDenormals() {
#ifdef KILN_X86_MXCSR
  _mm_setcsr(saved_);
#endif
}

}  // namespace kiln::cpu
