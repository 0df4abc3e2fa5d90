// How many threads the CPU kernels (kiln's loops and oneDNN's, one OpenMP pool) use: by
// default the physical cores this process may run on, fewer where a cgroup CPU quota allows
// fewer, or OMP_NUM_THREADS where it is set; set_threads overrides it for the process.
#pragma once

namespace kiln::cpu {

int threads();
void set_threads(int n);  // 1..4096

// The default, worked out from what the system allows this process (see above).
int default_threads();

// Applies threads() to the calling thread's OpenMP setting (each thread that runs CPU kernels
// has its own: an engine may run on any thread), and has that thread's OpenMP team flush
// denormals (see FlushDenormals; the team's threads belong to the OpenMP runtime and keep the
// mode). Cheap when nothing changed.
void use_threads();

// While alive, the calling thread computes with denormal floats flushed to zero and read as zero
// (x86's FTZ and DAZ); its mode before is restored after. Why: on Intel cores an instruction
// that reads or makes a denormal takes a microcode assist of about a hundred cycles, and SiLU
// activations make some (from very negative inputs): an image classifier at batch 1 on 2 threads
// of a Xeon took 20-24 ms per call instead of 7-9 (bench/results/2026-12-03-cpu-denormals.md).
// Denormals are below 1.2e-38 in magnitude; no result kiln checks moves. Elsewhere than x86 it
// does nothing.
class FlushDenormals {
 public:
  FlushDenormals();
  ~FlushDenormals();
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  [[maybe_unused]] unsigned saved_ = 0;  // the mode before (x86)
};

}  // namespace kiln::cpu
