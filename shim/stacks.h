// Call-site capture: native stacks (glibc's backtrace, the unwinder of libgcc_s) and the calling
// thread's innermost Python frames, interned in the trace (StackRecord) with the map of loaded
// modules (ModuleRecord) that offline symbolization needs. Nothing is symbolized in the process.
//
// Which calls get a stack (CUPROBE_STACKS): off; errors (failed and injected calls); alloc (the
// default: errors, device allocations of at least CUPROBE_STACK_MIN_BYTES, and the calls that
// begin a cuDNN plan selection or search); all (every event). Stacks are taken on calls that are
// rare in a steady state, so the default costs nothing measurable per training step.
#pragma once

#include <stdint.h>

#include "api.h"
#include "python_frames.h"
#include "recorder.h"

namespace cuprobe::shim {

enum StackMode : uint32_t { kStacksOff = 0, kStacksErrors = 1, kStacksAlloc = 2, kStacksAll = 3 };
extern uint32_t g_stack_mode;
extern uint64_t g_stack_min_bytes;

void stacks_configure();

// The id of the calling thread's current stack (0 when it cannot be had). Call on the thread
// that made the hooked call, with its guard held.
uint32_t capture_stack();

// The id of a stack given as its native return addresses (innermost first, at most 64) and Python
// frames (at most kMaxPython of python_frames.h): capture_stack's second half, which tests also
// call with stacks of their own. Stacks are told apart by their content, not by a hash alone; one
// seen before costs a hash, a table look-up and a memcmp, no lock. 0 when the counts are too large.
uint32_t intern_stack(const uint64_t* pcs, int n_native, const trace::PyFrame* py, int n_py);

}  // namespace cuprobe::shim
