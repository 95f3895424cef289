// Calls the CUDA driver directly (linked against libcuda.so.1, as NCCL or a CUDA extension built
// against the driver API is): the driver sequence of driver_sequence.h, with the same output,
// through the functions' linked addresses (bound like a direct call: to the first definition in
// the global scope, the preloaded shim's).
#include "driver_sequence.h"

int main() {
  driver_test::Functions f;
#define DIRECT(name) f.name = &::name;
  DRIVER_TEST_SEQUENCE_FUNCTIONS(DIRECT)
#undef DIRECT
  driver_test::run_sequence(f);
  return 0;
}
