// The CUPROBE_* environment variables the shim reads, declared once: name, grammar, range,
// default, the words of the messages about a value not taken, the `cuprobe record` option that
// sets it, and one line of help. Everything else follows from this table (the style of
// Perfetto's storage/stats.h): the shim reads each variable through its entry
// (shim/env_config.h), `cuprobe record` checks option values and inherited values with the same
// entry and the same value_ok() before the job starts (cli/cmds/record.cpp), and
// docs/commands/record.md's variables table is this table (tests/unit/env_vars_test.cpp checks
// it row by row).
//
// To add a variable: one entry here (and its Id, in the same place), read it in the shim with
// env_flag/env_number/env_value, and add the row the test prints to docs/commands/record.md.
//
// No allocation, no exceptions: the shim includes it and parses values while it loads.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "keep_spec.h"

namespace cuprobe::env {

enum class Kind : uint8_t {
  kFlag,     // 1, true, yes, on / 0, false, no, off, in any case
  kNumber,   // decimal digits only (no sign, space or unit), from `min` to `max`
  kWord,     // one of `words`
  kKeep,     // all, auto or last:SIZE (common/keep_spec.h)
  kAlerts,   // on, off, 1, 0, stderr, or file:PATH
  kText,     // any text, read (and checked, where at all) by the module that uses it
  kPercent,  // a share from 0 to 100, at most two decimals, with or without '%' (5, 5%, 2.5%)
};

// In the order of kVars below.
enum class Id : uint8_t {
  kOut,
  kQuiet,
  kDisable,
  kLaunchEvents,
  kMaxMb,
  kClock,
  kStacks,
  kStackDepth,
  kStackMinBytes,
  kMemSampleMs,
  kAlerts,
  kAlertsStormS,
  kAlertsStormNew,
  kKeep,
  kDelayS,
  kDurationS,
  kWindowNvtx,
  kFaults,
  kMemCap,
  kPinPlans,
  kSearchBudget,
};

struct Var {
  Id id;
  const char* name;
  Kind kind;
  uint64_t min = 0;           // kNumber
  uint64_t max = UINT64_MAX;  // kNumber
  uint64_t def = 0;           // kNumber: the value when unset, empty or not taken
  const char* words = "";     // kWord: the values taken, separated by '|'
  const char* def_text = "";  // the default in words, for the docs (kNumber: "" shows `def`)
  const char* expected = "";  // what a value must be: "CUPROBE_X=v is not <expected>"
  const char* fallback = "";  // what the shim does instead of a value it does not take
  const char* option = "";    // the `cuprobe record` option that sets it, "" when none
  const char* help = "";      // one line for the docs
};

inline constexpr const char* kFlagExpected = "1 or 0 (true/false, yes/no, on/off)";

// Checked against the variable in every message that names a value not taken, in the shim
// ("cuprobe: CUPROBE_MAX_MB=abc is not a number of MiB; using the default 4096") and in record
// ("CUPROBE_MAX_MB=abc in the environment is not a number of MiB; correct or unset it").
inline constexpr Var kVars[] = {
    {.id = Id::kOut,
     .name = "CUPROBE_OUT",
     .kind = Kind::kText,
     .def_text = "./cuprobe-trace",
     .expected = "a directory",
     .option = "--output",
     .help = "run directory; a relative one is made absolute when the shim loads"},
    {.id = Id::kQuiet,
     .name = "CUPROBE_QUIET",
     .kind = Kind::kFlag,
     .def_text = "0",
     .expected = kFlagExpected,
     .fallback = "using 0",
     .option = "--quiet",
     .help = "print nothing, even when events were lost"},
    {.id = Id::kDisable,
     .name = "CUPROBE_DISABLE",
     .kind = Kind::kFlag,
     .def_text = "0",
     .expected = kFlagExpected,
     .fallback = "using 0",
     .help = "load but record nothing"},
    {.id = Id::kLaunchEvents,
     .name = "CUPROBE_LAUNCH_EVENTS",
     .kind = Kind::kFlag,
     .def_text = "0",
     .expected = kFlagExpected,
     .fallback = "using 0",
     .option = "--launch-events",
     .help = "one event per kernel launch (default: counted per thread and device)"},
    {.id = Id::kMaxMb,
     .name = "CUPROBE_MAX_MB",
     .kind = Kind::kNumber,
     .def = 4096,
     .expected = "a number of MiB",
     .fallback = "using the default 4096",
     .option = "--max-mb",
     .help = "per-process trace size limit in MiB; what happens at it is CUPROBE_KEEP's choice"},
    {.id = Id::kClock,
     .name = "CUPROBE_CLOCK",
     .kind = Kind::kWord,
     .words = "auto|monotonic|tsc|counter",
     .def_text = "auto",
     .expected = "auto, monotonic or tsc",
     .fallback = "using auto",
     .option = "--clock",
     .help = "timestamp source: the invariant TSC when there is one, or CLOCK_MONOTONIC for every timestamp"},
    {.id = Id::kStacks,
     .name = "CUPROBE_STACKS",
     .kind = Kind::kWord,
     .words = "off|errors|alloc|all",
     .def_text = "alloc",
     .expected = "off, errors, alloc or all",
     .fallback = "using the default, alloc",
     .option = "--stacks",
     .help = "which calls carry their call stack (docs/stacks.md)"},
    {.id = Id::kStackDepth,
     .name = "CUPROBE_STACK_DEPTH",
     .kind = Kind::kNumber,
     .min = 1,
     .max = 64,
     .def = 32,
     .expected = "a number of frames from 1 to 64",
     .fallback = "using the default 32",
     .option = "--stack-depth",
     .help = "native frames kept per stack"},
    {.id = Id::kStackMinBytes,
     .name = "CUPROBE_STACK_MIN_BYTES",
     .kind = Kind::kNumber,
     .def = 1048576,
     .expected = "a number of bytes (digits only)",
     .fallback = "using the default 1048576",
     .option = "--stack-min-bytes",
     .help = "allocations that get a stack in alloc mode (the option takes units: 1MiB)"},
    {.id = Id::kMemSampleMs,
     .name = "CUPROBE_MEM_SAMPLE_MS",
     .kind = Kind::kNumber,
     .def = 500,
     .expected = "a number of milliseconds",
     .fallback = "using the default 500",
     .help = "at most how often (per device) an allocation is followed by a sample of the device's own memory "
             "account (0: only the first allocation, failures and exit)"},
    {.id = Id::kAlerts,
     .name = "CUPROBE_ALERTS",
     .kind = Kind::kAlerts,
     .def_text = "on",
     .expected = "on, off or file:PATH",
     .fallback = "alerts go to standard error",
     .option = "--alerts",
     .help = "live alerts: on (standard error), off, or appended to file:PATH (docs/alerts.md)"},
    {.id = Id::kAlertsStormS,
     .name = "CUPROBE_ALERTS_STORM_S",
     .kind = Kind::kNumber,
     .max = kMaxWindowSeconds,  // so that the shim's seconds * 1e9 cannot overflow
     .def = 20,
     .expected = CUPROBE_WINDOW_SECONDS_TEXT,
     .fallback = "using the default 20",
     .help = "seconds after the first cuDNN problem before new problems can make an alert"},
    {.id = Id::kAlertsStormNew,
     .name = "CUPROBE_ALERTS_STORM_NEW",
     .kind = Kind::kNumber,
     .def = 20,
     .expected = "a number of new problems",
     .fallback = "using the default 20",
     .help = "new problems in the last half of that time that make an alert (0 counts as 1)"},
    {.id = Id::kKeep,
     .name = "CUPROBE_KEEP",
     .kind = Kind::kKeep,
     .def_text = "auto",
     .expected = kKeepExpected,
     .fallback = "using the default, auto",
     .option = "--keep",
     .help = "what a long job's trace keeps at its size limit (docs/flight-recorder.md)"},
    {.id = Id::kDelayS,
     .name = "CUPROBE_DELAY_S",
     .kind = Kind::kNumber,
     .max = kMaxWindowSeconds,
     .expected = CUPROBE_WINDOW_SECONDS_TEXT,
     .fallback = "using no delay",
     .option = "--delay",
     .help = "record routine calls only from this many seconds after the process starts"},
    {.id = Id::kDurationS,
     .name = "CUPROBE_DURATION_S",
     .kind = Kind::kNumber,
     .min = 1,
     .max = kMaxWindowSeconds,
     .def_text = "no end",
     .expected = CUPROBE_WINDOW_SECONDS_TEXT ", from 1",
     .fallback = "using no end",
     .option = "--duration",
     .help = "... and only for this many seconds"},
    {.id = Id::kWindowNvtx,
     .name = "CUPROBE_WINDOW_NVTX",
     .kind = Kind::kText,
     .def_text = "none",
     .expected = "the name of an NVTX range",
     .option = "--window-nvtx",
     .help = "record routine calls only while an NVTX range of this name is open"},
    {.id = Id::kFaults,
     .name = "CUPROBE_FAULTS",
     .kind = Kind::kText,
     .def_text = "none",
     .expected = "fault rules separated by ';' (docs/faults.md)",
     .option = "--fault",
     .help = "fault mode; a malformed plan is reported on stderr and nothing is injected"},
    {.id = Id::kMemCap,
     .name = "CUPROBE_MEM_CAP",
     .kind = Kind::kText,
     .def_text = "none",
     .expected = "8GiB, 25% or 0=8GiB,1=16GiB",
     .option = "--mem-cap",
     .help = "device allocations fail with out-of-memory past this many live bytes"},
    {.id = Id::kPinPlans,
     .name = "CUPROBE_PIN_PLANS",
     .kind = Kind::kText,
     .def_text = "none",
     .expected = "a plan file (absolute path)",
     .option = "--pin-plans",
     .help = "replay its cuDNN plans; an unusable file is reported on stderr and nothing is steered"},
    {.id = Id::kSearchBudget,
     .name = "CUPROBE_SEARCH_BUDGET",
     .kind = Kind::kPercent,
     .max = 10000,
     .def_text = "none",
     .expected = "a share of the job's time from 0 to 100 (5 or 5%)",
     .fallback = "no search budget",
     .option = "--search-budget",
     .help = "cuDNN benchmark searches stay within this share of the job's time: past it, new selections take "
             "cuDNN's heuristic choice (docs/search-budget.md)"},
};

inline constexpr size_t kNumVars = sizeof kVars / sizeof kVars[0];

constexpr bool ids_in_order() {
  for (size_t i = 0; i < kNumVars; ++i) {
    if (size_t(kVars[i].id) != i) return false;
  }
  return true;
}
static_assert(ids_in_order(), "kVars: each entry at the index of its Id");

inline constexpr const Var& var(Id id) { return kVars[size_t(id)]; }

// A whole number in decimal digits only (no sign, space or unit) that fits in 64 bits.
bool parse_decimal(const char* s, uint64_t* out);
// A kPercent value in hundredths of a percent (5% -> 500): digits, at most two decimals after a
// '.', an optional '%', at most 100.
bool parse_percent(const char* s, uint64_t* hundredths);
// A kFlag value: true for 1, true, yes, on; false (in *on) for 0, false, no, off; the function
// returns false for anything else.
bool parse_flag(const char* s, bool* on);
// The position of `s` among a kWord variable's words, -1 when it is none of them.
int word_index(const Var& v, const char* s);
// Whether the shim takes `s` (not empty: an empty value is the same as unset) for `v`.
bool value_ok(const Var& v, const char* s);

}  // namespace cuprobe::env
