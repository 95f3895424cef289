// A scripted CUDA runtime client for fault-mode tests: each argument is one step, and each step
// prints what the program saw, one line per call, so a test can compare runs and check the
// error state call by call.
//
//   malloc:SIZE    cudaMalloc          -> "malloc SIZE RET PTR"   (PTR: "null" or "set"; a sentinel
//                                          is written first, "kept" when the call left it alone)
//   async:SIZE     cudaMallocAsync     -> "async SIZE RET PTR"
//   host:SIZE      cudaMallocHost      -> "host SIZE RET PTR"
//   free           cudaFree of the newest live allocation -> "free RET"
//   freeall        cudaFree of every live allocation       -> "freeall RET"
//   last / peek    cudaGetLastError / cudaPeekAtLastError  -> "last RET" / "peek RET"
//   meminfo        cudaMemGetInfo      -> "meminfo RET FREE TOTAL"
//   sync           cudaDeviceSynchronize -> "sync RET"
//   launch         cudaLaunchKernel of a dummy kernel -> "launch RET"
//   memcpy:SIZE    cudaMemcpy host to host -> "memcpy SIZE RET"
//   device:D       cudaSetDevice       -> "device D RET"
//   sleep:MS       sleep
//   threads:T:N:SIZE  T threads, each N cudaMalloc(SIZE)+cudaFree pairs -> per thread
//                  "thread I: R R R ..." (the cudaMalloc return codes), printed in thread order
//   loop:N:SIZE    N cudaMalloc(SIZE)+cudaFree pairs -> "loop: R R R ..."
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

void* const kSentinel = reinterpret_cast<void*>(uintptr_t(0x5e5e5e5e));

const char* ptr_state(void* p) { return p == kSentinel ? "kept" : p == nullptr ? "null" : "set"; }

size_t num(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 10); }

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t e; (e = s.find(':', b)) != std::string::npos; b = e + 1) out.push_back(s.substr(b, e - b));
  out.push_back(s.substr(b));
  return out;
}

std::string malloc_loop(int n, size_t size) {
  std::string codes;
  for (int i = 0; i < n; ++i) {
    void* p = nullptr;
    cudaError_t r = cudaMalloc(&p, size);
    codes += " " + std::to_string(int(r));
    if (r == cudaSuccess) cudaFree(p);
    else cudaGetLastError();
  }
  return codes;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<void*> live;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::string> a = split(argv[i]);
    const std::string& op = a[0];
    if (op == "malloc" || op == "async" || op == "host") {
      void* p = kSentinel;
      size_t size = num(a.at(1));
      cudaError_t r = op == "malloc" ? cudaMalloc(&p, size)
                      : op == "async" ? cudaMallocAsync(&p, size, nullptr)
                                      : cudaMallocHost(&p, size);
      std::printf("%s %zu %d %s\n", op.c_str(), size, int(r), ptr_state(p));
      if (r == cudaSuccess && op != "host") live.push_back(p);
    } else if (op == "free") {
      cudaError_t r = cudaSuccess;
      if (!live.empty()) {
        r = cudaFree(live.back());
        live.pop_back();
      }
      std::printf("free %d\n", int(r));
    } else if (op == "freeall") {
      cudaError_t r = cudaSuccess;
      for (void* p : live) {
        cudaError_t e = cudaFree(p);
        if (e != cudaSuccess) r = e;
      }
      live.clear();
      std::printf("freeall %d\n", int(r));
    } else if (op == "last") {
      std::printf("last %d\n", int(cudaGetLastError()));
    } else if (op == "peek") {
      std::printf("peek %d\n", int(cudaPeekAtLastError()));
    } else if (op == "meminfo") {
      size_t f = 0, t = 0;
      cudaError_t r = cudaMemGetInfo(&f, &t);
      std::printf("meminfo %d %zu %zu\n", int(r), f, t);
    } else if (op == "sync") {
      std::printf("sync %d\n", int(cudaDeviceSynchronize()));
    } else if (op == "launch") {
      static int kernel;
      std::printf("launch %d\n", int(cudaLaunchKernel(&kernel, dim3(1), dim3(32), nullptr, 0, nullptr)));
    } else if (op == "memcpy") {
      size_t n = num(a.at(1));
      std::vector<char> src(n, 1), dst(n, 0);
      std::printf("memcpy %zu %d\n", n, int(cudaMemcpy(dst.data(), src.data(), n, cudaMemcpyHostToHost)));
    } else if (op == "device") {
      int d = int(num(a.at(1)));
      std::printf("device %d %d\n", d, int(cudaSetDevice(d)));
    } else if (op == "sleep") {
      usleep(useconds_t(num(a.at(1)) * 1000));
    } else if (op == "loop") {
      std::printf("loop:%s\n", malloc_loop(int(num(a.at(1))), num(a.at(2))).c_str());
    } else if (op == "threads") {
      int t = int(num(a.at(1)));
      int n = int(num(a.at(2)));
      size_t size = num(a.at(3));
      std::vector<std::string> results(static_cast<size_t>(t));
      std::vector<std::thread> threads;
      for (int k = 0; k < t; ++k) threads.emplace_back([&, k] { results[size_t(k)] = malloc_loop(n, size); });
      for (auto& th : threads) th.join();
      for (int k = 0; k < t; ++k) std::printf("thread %d:%s\n", k, results[size_t(k)].c_str());
    } else {
      std::fprintf(stderr, "fault_probe: unknown step %s\n", argv[i]);
      return 2;
    }
    std::fflush(stdout);
  }
  return 0;
}
