// Timestamps for the hot path. Reading CLOCK_MONOTONIC through the vDSO costs about 25 ns on the
// development machine (kvm-clock), twice per event; the invariant TSC (aarch64: the virtual
// counter) costs about 10 ns. Records therefore carry raw ticks of the clock named in the file
// header; readers convert them through the (ticks, CLOCK_MONOTONIC) anchors the shim writes.
// Without an invariant counter, or with CUPROBE_CLOCK=monotonic, ticks are nanoseconds.
#pragma once

#include <stdint.h>
#include <time.h>

#include "cuprobe/trace_format.h"

namespace cuprobe::shim {

extern trace::ClockKind g_clock_kind;

inline uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

inline uint64_t real_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

inline uint64_t now_ticks() {
#if defined(__x86_64__)
  if (__builtin_expect(g_clock_kind == trace::ClockKind::kX86Tsc, 1)) return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
  if (__builtin_expect(g_clock_kind == trace::ClockKind::kArmCntvct, 1)) {
    uint64_t v;
    asm volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
  }
#endif
  return mono_ns();
}

// Chooses the clock (honouring CUPROBE_CLOCK) and measures ticks per nanosecond. Called once
// per process before the first trace is created.
void clock_init(const char* requested);
double clock_ticks_per_ns();

}  // namespace cuprobe::shim
