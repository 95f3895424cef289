// A call made from inlined code, for the symbolizer's tests (tests/unit/symbolize_test.cpp): main ->
// outer_step -> inlined_step (always inlined into outer_step) -> probe_mark. It prints two return
// addresses as the program's own virtual addresses (what a trace's module map gives: address minus
// load bias), each with the source lines the symbolizer must find there:
//   <return address in outer_step, hex> <line of the call in inlined_step> <line of the call in outer_step>
//   <return address in main, hex> <line of main's call of outer_step>
// Built with -g (tests/programs/CMakeLists.txt), with a stripped copy and its separate debug file.
#include <link.h>

#include <cstdint>
#include <cstdio>

namespace {

uintptr_t load_bias = 0;
uintptr_t return_to_main = 0;

int first_object(struct dl_phdr_info* info, size_t, void*) {
  load_bias = info->dlpi_addr;  // the program itself comes first
  return 1;
}

}  // namespace

extern "C" __attribute__((noinline)) void probe_mark(int inner_line, int outer_line) {
  auto ret = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  dl_iterate_phdr(first_object, nullptr);
  std::printf("%zx %d %d\n", size_t(ret - load_bias), inner_line, outer_line);
  asm volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) void inlined_step(int outer_line) { probe_mark(__LINE__, outer_line); }

extern "C" __attribute__((noinline)) void outer_step() {
  return_to_main = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  inlined_step(__LINE__);
  asm volatile("" ::: "memory");  // no tail call: the return address stays in outer_step
}

int main() {
  outer_step();
  std::printf("%zx %d\n", size_t(return_to_main - load_bias), __LINE__ - 1);
  return 0;
}
