// Allocates and frees in a loop; prints "ready N" once N pairs are done, then keeps going
// until it is killed (tests send SIGKILL at that point).
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  long ready_after = argc > 1 ? std::atol(argv[1]) : 1000;
  for (long i = 0;; ++i) {
    void* p = nullptr;
    cudaMalloc(&p, 4096 + size_t(i % 7) * 512);
    cudaFree(p);
    if (i + 1 == ready_after) {
      std::printf("ready %ld\n", ready_after);
      std::fflush(stdout);
    }
    if (i + 1 >= ready_after) usleep(1000);
  }
}
