// The shim's reading of its CUPROBE_* variables, each by its entry in common/env_vars.h (the one
// table of names, grammars, ranges and defaults that `cuprobe record` and the docs use too).
//
// A value the shim does not take is never half-read (strtoull of "-1" or "1MiB"): it is reported
// once on stderr ("cuprobe: CUPROBE_MAX_MB=abc is not a number of MiB; using the default 4096",
// unless CUPROBE_QUIET) and removed from this process's environment, so that every later reader
// and every program this one runs take the default, and a job says it once rather than once per
// process. Called while the shim configures itself (getenv, no allocation); never on a hot path.
#pragma once

#include <stdint.h>

#include "env_vars.h"

namespace cuprobe::shim {

// The value when the shim takes it; nullptr when unset or empty, or after the warning above.
const char* env_value(env::Id id);
// A kFlag variable: false when unset, empty or not taken.
bool env_flag(env::Id id);
// A kNumber variable: its entry's default when unset, empty or not taken.
uint64_t env_number(env::Id id);

}  // namespace cuprobe::shim
