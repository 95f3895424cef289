// The fork-child reset registry: see fork.h.
#include "fork.h"

// The linker defines these around the section (weak: a program that links none of the modules
// has no section at all).
extern "C" {
extern ::cuprobe::shim::ForkChildReset __start_cuprobe_fork_child[] __attribute__((weak, visibility("hidden")));
extern ::cuprobe::shim::ForkChildReset __stop_cuprobe_fork_child[] __attribute__((weak, visibility("hidden")));
}

namespace cuprobe::shim {

void run_fork_child_resets() {
  for (ForkChildReset* f = __start_cuprobe_fork_child; f != nullptr && f < __stop_cuprobe_fork_child; ++f) {
    if (*f != nullptr) (*f)();
  }
}

int fork_child_reset_count() {
  if (__start_cuprobe_fork_child == nullptr) return 0;
  return int(__stop_cuprobe_fork_child - __start_cuprobe_fork_child);
}

}  // namespace cuprobe::shim
