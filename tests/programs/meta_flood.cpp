// Writes many process-wide records (distinct stacks: the meta writer's chunks fill up and roll
// over) between bursts of routine calls (cudaStreamSynchronize), in a process that carries the
// shim itself (linked in, as intern_collision does, to reach intern_stack). Under a small
// flight-recorder ring (CUPROBE_KEEP=last:1MiB) the routine calls wrap the ring many times; the
// meta records must all survive. Usage: meta_flood STACKS CALLS_BETWEEN. Prints
// "stack ID FIRST_PC" per stack.
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "recorder.h"
#include "stacks.h"

using namespace cuprobe;

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  int stacks = atoi(argv[1]);
  int between = atoi(argv[2]);
  if (shim::thread_setup(shim::t_state) != shim::kThreadReady) return 2;
  constexpr int kDepth = 24;
  for (int s = 0; s < stacks; ++s) {
    uint64_t pcs[kDepth];
    for (int k = 0; k < kDepth; ++k) pcs[k] = 0x400000u + uint64_t(s) * 0x1000u + uint64_t(k) * 8u;
    uint32_t id = shim::intern_stack(pcs, kDepth, nullptr, 0);
    printf("stack %u %llu\n", id, (unsigned long long)pcs[0]);
    for (int c = 0; c < between; ++c) {
      if (cudaStreamSynchronize(nullptr) != cudaSuccess) return 3;
    }
  }
  return 0;
}
