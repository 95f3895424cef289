// libFuzzer target: the plan-file reader the shim runs on CUPROBE_PIN_PLANS inside the job, and
// `cuprobe record --pin-plans` before it (common/plan_pin_text.cpp), on arbitrary bytes. The
// input is read as a plan file's text: a counting pass, then a pass that parses into memory of
// that count. A crash, a sanitizer report, two passes that disagree, or a pin that breaks what
// the shim relies on (at most kMaxPinKnobs knobs, knob answers
// only for backend pins) is a finding.
//
//   scripts/fuzz.sh 60 plan_file_fuzz
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "plan_pin_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cuprobe::pins;
  const char* text = reinterpret_cast<const char*>(data);
  size_t n = 0, bad_at = 0;
  bool ok = parse_pins(text, size, nullptr, &n, &bad_at);
  if (!ok && bad_at >= size) abort();
  if (!ok || n == 0) return 0;
  std::vector<Pin> pins(n);
  size_t again = 0;
  if (!parse_pins(text, size, pins.data(), &again, &bad_at) || again != n) abort();
  for (const Pin& p : pins) {
    if (p.n_knobs > kMaxPinKnobs) abort();
    if (p.answerable && p.legacy) abort();
  }
  sort_pins(pins.data(), n);
  for (size_t i = 1; i < n; ++i) {
    if (pins[i - 1].hash > pins[i].hash) abort();
  }
  return 0;
}
