// Kernel launches on two devices from two threads: counted per thread and device.
#include <cuda_runtime_api.h>

#include <thread>

static int kernel_a;

static void launch(int device, int n) {
  cudaSetDevice(device);
  for (int i = 0; i < n; ++i) cudaLaunchKernel(&kernel_a, dim3(4), dim3(128), nullptr, 0, nullptr);
}

int main() {
  std::thread t0([] { launch(0, 1000); });
  std::thread t1([] { launch(1, 250); });
  t0.join();
  t1.join();
  cudaLaunchKernelExC(nullptr, &kernel_a, nullptr);  // a config-less launch still counts
  return 0;
}
