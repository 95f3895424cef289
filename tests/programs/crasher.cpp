// Makes a few calls, then dies: "segv" by a bad write, "abort" by abort().
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  void* p = nullptr;
  cudaMalloc(&p, 1024);
  cudaDeviceSynchronize();
  if (argc > 1 && std::strcmp(argv[1], "abort") == 0) std::abort();
  volatile int* bad = nullptr;
  if (argc > 99) bad = reinterpret_cast<volatile int*>(argv);
  *bad = 1;
  return 0;
}
