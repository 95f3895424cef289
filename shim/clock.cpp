// Clock selection and calibration; see clock.h.
#include "clock.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace cuprobe::shim {

trace::ClockKind g_clock_kind = trace::ClockKind::kMonotonicNs;
static double g_ticks_per_ns = 1.0;

static bool invariant_counter_available() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000007u) return false;
  __cpuid(0x80000007u, a, b, c, d);
  return (d & (1u << 8)) != 0;  // "TscInvariant"
#elif defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

void clock_init(const char* requested) {
  bool want_counter = requested == nullptr || strcmp(requested, "monotonic") != 0;
  bool forced = requested != nullptr && (strcmp(requested, "tsc") == 0 || strcmp(requested, "counter") == 0);
  if (!want_counter || (!forced && !invariant_counter_available())) {
    g_clock_kind = trace::ClockKind::kMonotonicNs;
    g_ticks_per_ns = 1.0;
    return;
  }
#if defined(__x86_64__)
  g_clock_kind = trace::ClockKind::kX86Tsc;
#elif defined(__aarch64__)
  g_clock_kind = trace::ClockKind::kArmCntvct;
  uint64_t freq;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(freq));
  if (freq != 0) {
    g_ticks_per_ns = double(freq) / 1e9;
    return;
  }
#else
  g_clock_kind = trace::ClockKind::kMonotonicNs;
  return;
#endif
  // 200 us against CLOCK_MONOTONIC: good to a few parts in 10^4, enough for durations of one
  // call; readers refine the rate with the anchors written while the process runs.
  uint64_t m0 = mono_ns();
  uint64_t t0 = now_ticks();
  uint64_t m1 = m0;
  while (m1 - m0 < 200000) m1 = mono_ns();
  uint64_t t1 = now_ticks();
  g_ticks_per_ns = double(t1 - t0) / double(m1 - m0);
  if (!(g_ticks_per_ns > 0.01 && g_ticks_per_ns < 100.0)) {
    g_clock_kind = trace::ClockKind::kMonotonicNs;
    g_ticks_per_ns = 1.0;
  }
}

double clock_ticks_per_ns() { return g_ticks_per_ns; }

}  // namespace cuprobe::shim
