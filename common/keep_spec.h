// CUPROBE_KEEP (and `cuprobe record --keep`): what a trace keeps when it grows long.
//   all          every event until the size limit (CUPROBE_MAX_MB), none after it
//   auto         the default: every event until three quarters of the limit, then a flight
//                recorder over the last quarter
//   last:SIZE    a flight recorder from the start: routine events in a ring of SIZE bytes (at
//                least 1 MiB), written as every cuprobe size is: 512MiB, 2GiB, 1G (GiB), 2GB
//                (powers of 1000), 1048576
// Shared by the shim (read at load, no allocation) and `cuprobe record` (checked before the job
// starts), so that both take exactly the same values.
#pragma once

#include <stdint.h>

#include <string.h>

#include "cuprobe/trace_format.h"
#include "fault_plan.h"

namespace cuprobe {

inline constexpr uint64_t kMinRingBytes = 1ull << 20;

// CUPROBE_DELAY_S and CUPROBE_DURATION_S (record --delay, --duration): at most 100 years, so that
// the window's end in nanoseconds cannot overflow. The shim ignores a larger value (with a
// warning); record refuses it with the same words.
inline constexpr uint64_t kMaxWindowSeconds = 100ull * 365 * 24 * 3600;
#define CUPROBE_WINDOW_SECONDS_TEXT "a number of seconds up to 3153600000 (100 years)"

// Reads a CUPROBE_KEEP value; false (and nothing written) when it is not one of the forms above.
inline bool parse_keep(const char* s, trace::KeepMode* mode, uint64_t* ring_bytes) {
  if (s == nullptr) return false;
  auto is = [s](const char* w) {
    const char* a = s;
    while (*a && *w && *a == *w) ++a, ++w;
    return *a == 0 && *w == 0;
  };
  if (is("all")) {
    *mode = trace::KeepMode::kAll;
    *ring_bytes = 0;
    return true;
  }
  if (is("auto")) {
    *mode = trace::KeepMode::kAuto;
    *ring_bytes = 0;
    return true;
  }
  const char* p = "last:";
  const char* a = s;
  while (*p && *a == *p) ++a, ++p;
  uint64_t bytes = 0;
  if (*p != 0 || !faults::parse_bytes(a, strlen(a), &bytes) || bytes < kMinRingBytes) return false;
  *mode = trace::KeepMode::kLast;
  *ring_bytes = bytes;
  return true;
}

inline constexpr const char* kKeepExpected = "all, auto or last:SIZE (SIZE at least 1MiB, such as 512MiB or 2GiB)";

}  // namespace cuprobe
