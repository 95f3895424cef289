// THREADS threads each make CALLS recorded calls (cudaStreamSynchronize), all started together.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 16;
  long calls = argc > 2 ? std::atol(argv[2]) : 100000;
  std::atomic<int> ready{0};
  std::atomic<long> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      for (long i = 0; i < calls; ++i) {
        if (cudaStreamSynchronize(nullptr) != cudaSuccess) failures.fetch_add(1);
      }
    });
  }
  for (auto& th : pool) th.join();
  std::printf("%ld\n", failures.load());
  return failures.load() == 0 ? 0 : 1;
}
