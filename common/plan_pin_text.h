// The "pin" strings of a plan file (docs/plan-pinning.md gives their grammar), read and written
// here only: written by `cuprobe plans export` (format_pin), parsed by the shim when
// CUPROBE_PIN_PLANS names a file and by `cuprobe record` before the job starts (parse_pin), so
// that both accept exactly the same files. No allocation: the shim parses inside the job.
//
// A pin string is space-separated KEY=VALUE words, in this order when written:
//   h=  problem hash, 16 hex digits          s=  backend or legacy        e=  engine (algorithm)
//   a=  smallest data alignment (backend)    g=  gpu_name_hash, 8 hex digits
//   v=  cuDNN version                        m=, d=  legacy math type and determinism (0 or 1)
//   k=  backend knob text                    t=  measured ms (6 decimals) c=  search ms (3 decimals)
// h, s and e are required; a word the reader does not know is skipped (newer writers).
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

// A device's name as the driver gives it (the trace's device record, the shim's driver query),
// hashed for a pin's g= word: FNV-1a, 32 bits.
inline uint32_t gpu_name_hash(const char* name) {
  uint32_t h = 2166136261u;
  for (; *name; ++name) h = (h ^ uint8_t(*name)) * 16777619u;
  return h;
}

// What format_pin writes. Optional words are left out when their field says "none".
struct PinWords {
  uint64_t hash = 0;
  bool legacy = false;
  int64_t engine = -1;
  uint32_t align = 0;          // 0 none
  const char* gpu = "";        // device name, "" none
  int64_t cudnn = 0;           // <= 0 none
  int32_t math = -1;           // legacy
  bool deterministic = true;   // legacy
  const char* knobs = "";      // backend knob text, "" none
  double time_ms = -1;         // < 0 none
  double search_ms = -1;       // < 0 none
};

// Writes the pin string of `w` into `out` (`cap` bytes with the terminating NUL, truncated when
// short); returns the string's whole length, as snprintf does.
size_t format_pin(const PinWords& w, char* out, size_t cap);

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
