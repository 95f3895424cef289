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
#include "recorder.h"

namespace cuprobe::shim {

enum StackMode : uint32_t { kStacksOff = 0, kStacksErrors = 1, kStacksAlloc = 2, kStacksAll = 3 };
extern uint32_t g_stack_mode;
extern uint64_t g_stack_min_bytes;

void stacks_configure();
void stacks_after_fork();

// The id of the calling thread's current stack (0 when it cannot be had). Call on the thread
// that made the hooked call, with its guard held.
uint32_t capture_stack();

}  // namespace cuprobe::shim
