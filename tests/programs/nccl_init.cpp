// Opens libnccl_user.so with dlopen (RTLD_LOCAL by default, RTLD_GLOBAL with "global") and runs
// its communicator set-up: NCCL reached the way PyTorch reaches it, from a library that needs it.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  std::string lib = argc > 1 ? argv[1] : "libnccl_user.so";
  bool global = argc > 2 && std::strcmp(argv[2], "global") == 0;
  void* h = dlopen(lib.c_str(), RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
  if (h == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 10;
  }
  auto run = reinterpret_cast<int (*)()>(dlsym(h, "nccl_user_run"));
  if (run == nullptr) return 11;
  return run();
}
