// Pushes NVTX ranges around part of its work, as a job marks the steps it wants recorded: CALLS
// cudaStreamSynchronize calls in three parts; the middle one inside a pushed range named
// "cuprobe-window" (with a nested range of another name in it), and the last one inside a range
// of that name started on this thread and ended on another. Prints "inside N" (calls made while
// one of the ranges was open) and "outside N". Uses NVTX v3, header-only, as PyTorch does: the
// tool is whatever NVTX_INJECTION64_PATH names.
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

int main(int argc, char** argv) {
  long calls = argc > 1 ? std::atol(argv[1]) : 3000;
  long inside = 0, outside = 0;
  auto sync = [](long n, long* count) {
    for (long i = 0; i < n; ++i) {
      if (cudaStreamSynchronize(nullptr) != cudaSuccess) std::exit(3);
      ++*count;
    }
  };
  sync(calls / 3, &outside);
  nvtxRangePushA("cuprobe-window");
  sync(calls / 6, &inside);
  nvtxRangePushA("forward");  // nested, of another name: the window stays open
  sync(calls / 6, &inside);
  nvtxRangePop();
  nvtxRangePop();
  sync(calls / 3, &outside);
  nvtxRangeId_t id = nvtxRangeStartA("cuprobe-window");
  sync(calls / 3, &inside);
  std::thread([id] { nvtxRangeEnd(id); }).join();
  nvtxMarkA("after");  // a mark: not a range
  sync(calls / 3, &outside);
  std::printf("inside %ld\noutside %ld\n", inside, outside);
  return 0;
}
