// The "pin" strings of a plan file (docs/plan-pinning.md gives their grammar): parsed by the
// shim when CUPROBE_PIN_PLANS names a file, and by `cuprobe record` before the job starts, so
// that both accept exactly the same files. No allocation: the shim parses inside the job.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace cuprobe::pins {

inline constexpr int kMaxPinKnobs = 10;  // the shim's cudnn_mirror.h kMaxKnobs
// The largest plan file read (a plan is about 600 bytes: 100,000 plans fit).
inline constexpr uint64_t kMaxPlanFileBytes = uint64_t(64) << 20;

struct Pin {
  uint64_t hash;    // problem
  uint64_t key;     // plan_key(engine, knobs) of the pinned configuration (backend)
  int64_t engine;   // engine global index (backend) or algorithm (legacy)
  int64_t cudnn;    // cuDNN version the plan was chosen with, 0 any
  uint32_t align;   // smallest data alignment of the problem (backend), 0 any
  uint32_t gpu;     // FNV-1a of the device name, 0 any
  int32_t math;     // legacy math type
  int32_t determinism;
  float time_ms;
  float search_ms;
  uint8_t legacy;
  uint8_t answerable;  // the knob text names known knobs: the shim can build the configuration
  uint8_t n_knobs;
  uint32_t broken;     // set once the pinned plan failed for real in this process
  uint32_t filtered;   // set once the application passed the pinned configuration by (its filters)
  int32_t knob_types[kMaxPinKnobs];
  int64_t knob_values[kMaxPinKnobs];
};

// The identity of a backend plan: FNV-1a over the engine index and the knob text (as
// render_knobs writes it).
uint64_t plan_key(int64_t engine, const char* knobs_text);

// One "pin" string (`s` to `end`, without the quotes); false when it is not one cuprobe writes.
bool parse_pin(const char* s, const char* end, Pin* p);

// The pins of a plan file's text: counts them into *n (and parses them into `out` when it is not
// nullptr, which must hold *n from a counting pass). false when a "pin" string is malformed
// (*bad_at: its byte offset in the text).
bool parse_pins(const char* text, size_t len, Pin* out, size_t* n, size_t* bad_at);

// Sorts pins by problem hash (no allocation).
void sort_pins(Pin* p, size_t n);

}  // namespace cuprobe::pins
