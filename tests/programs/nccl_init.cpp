// Opens libnccl_user.so with dlopen (RTLD_LOCAL by default, RTLD_GLOBAL with "global") and runs
// its communicator set-up: NCCL reached the way PyTorch reaches it, from a library that needs it.
// `nccl_init LIB steps:N` runs N steps of collectives instead (nccl_user_steps); `groups:N`, N
// steps on two communicators (nccl_user_groups).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
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
  // "steps:N": a training loop's collectives instead (nccl_user_steps).
  if (argc > 2 && std::strncmp(argv[2], "steps:", 6) == 0) {
    auto steps = reinterpret_cast<int (*)(int)>(dlsym(h, "nccl_user_steps"));
    return steps == nullptr ? 11 : steps(std::atoi(argv[2] + 6));
  }
  // "groups:N": collectives on two communicators, the world and a split (nccl_user_groups).
  if (argc > 2 && std::strncmp(argv[2], "groups:", 7) == 0) {
    auto groups = reinterpret_cast<int (*)(int)>(dlsym(h, "nccl_user_groups"));
    return groups == nullptr ? 11 : groups(std::atoi(argv[2] + 7));
  }
  // "watchdog": a failed allreduce, then the communicator aborted from another thread and the
  // process torn down (nccl_user_watchdog).
  const char* entry = argc > 2 && std::strcmp(argv[2], "watchdog") == 0 ? "nccl_user_watchdog" : "nccl_user_run";
  auto run = reinterpret_cast<int (*)()>(dlsym(h, entry));
  if (run == nullptr) return 11;
  return run();
}
