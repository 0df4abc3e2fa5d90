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
// has its own: an engine may run on any thread). Cheap when nothing changed.
void use_threads();

}  // namespace kiln::cpu
