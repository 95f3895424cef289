// Opens libprivate_user.so with RTLD_LOCAL (its CUDA runtime stays out of the global scope),
// calls into it, and prints the runtime version it saw and the double's call count.
#include <dlfcn.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  std::string lib = argc > 1 ? argv[1] : "libprivate_user.so";
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 10;
  }
  using Fn = int (*)(int*);
  auto fn = reinterpret_cast<Fn>(dlsym(h, "private_use_cuda"));
  if (fn == nullptr) return 11;
  int version = 0;
  int rc = fn(&version);
  std::printf("rc %d version %d\n", rc, version);
  return rc;
}
