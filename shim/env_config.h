// The shim's reading of its CUPROBE_* variables, each by its entry in common/env_vars.h (the one
// table of names, grammars, ranges and defaults that `cuprobe record` and the docs use too).
//
// A value the shim does not take is never half-read (strtoull of "-1" or "1MiB"): it is reported
// once on stderr ("cuprobe: CUPROBE_MAX_MB=abc is not a number of MiB; using the default 4096",
// unless CUPROBE_QUIET) and removed from this process's environment, so that every later reader
// and every program this one runs take the default, and a job says it once rather than once per
// process. Called while the shim configures itself (getenv, no allocation); never on a hot path.
//
// Removing is the one change the shim makes to its environment for this, and it runs while the
// shim configures itself at load (the constructor, before main and before the program can start
// threads): unsetenv only moves entries within the existing array, where a setenv (a marker
// naming what was said) could reallocate it under another reader. Within a job under `cuprobe
// record` nothing is left to say: record refuses every value the shim would not take before the
// job starts (cli/cmds/record.cpp), so the shim warns only about values the job set itself.
#pragma once

#include <stdint.h>

#include "env_vars.h"

namespace cuprobe::shim {

// The value when the shim takes it; nullptr when unset or empty, or after the warning above.
const char* env_value(env::Id id);
// A kFlag variable: false when unset, empty or not taken.
bool env_flag(env::Id id);
// A kNumber variable (kPercent: in hundredths of a percent): its entry's default when unset, empty or
// not taken.
uint64_t env_number(env::Id id);
// For a kText variable whose own reader refused the value and said why (a fault plan or memory
// cap that does not parse, an NVTX window the shim cannot open): removed, as env_value removes
// the values it refuses, so that the programs this process runs do not say it again.
void env_not_taken(env::Id id);

}  // namespace cuprobe::shim
