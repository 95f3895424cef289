// Parent, forked child and exec'd grandchild each make CUDA calls; each must get its own trace
// file. "forker exec-child" is the exec'd program.
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

static void calls(size_t size, int n) {
  for (int i = 0; i < n; ++i) {
    void* p = nullptr;
    cudaMalloc(&p, size);
    cudaFree(p);
  }
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "exec-child") == 0) {
    calls(3000, 3);
    return 0;
  }
  calls(1000, 1);
  pid_t pid = fork();
  if (pid == 0) {
    calls(2000, 2);
    execl("/proc/self/exe", argv[0], "exec-child", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  calls(1000, 1);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}
