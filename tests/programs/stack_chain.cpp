// A known call chain for stack capture tests: main -> chain_one -> chain_two -> chain_three ->
// cudaMalloc, the same from three threads, and once from a library loaded with dlopen
// (libstack_plugin.so beside this program: plugin_alloc -> cudaMalloc). Sizes tell the calls apart:
// 2 MiB from main's chain, 3 MiB from the threads, 4 MiB from the plugin.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

extern "C" {
__attribute__((noinline)) void chain_three(size_t n) {
  void* p = nullptr;
  cudaMalloc(&p, n);
  asm volatile("" ::: "memory");  // no tail call: every frame stays on the stack
}
__attribute__((noinline)) void chain_two(size_t n) {
  chain_three(n);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void chain_one(size_t n) {
  chain_two(n);
  asm volatile("" ::: "memory");
}
}

int main() {
  chain_one(2 << 20);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back([] { chain_one(3 << 20); });
  for (auto& t : threads) t.join();
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 1;
  std::string dir(exe, size_t(n));
  dir.resize(dir.rfind('/'));
  void* h = dlopen((dir + "/libstack_plugin.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "stack_chain: %s\n", dlerror());
    return 1;
  }
  auto plugin_alloc = reinterpret_cast<void (*)(size_t)>(dlsym(h, "plugin_alloc"));
  if (plugin_alloc == nullptr) return 1;
  plugin_alloc(4 << 20);
  std::puts("stack_chain done");
  return 0;
}
