// The calling thread's innermost Python frames, for the call stacks of stacks.h: file and function
// as interned string ids, and the line. They stop at the first frame of the application's own code
// (not an installed package or the standard library: common/python_paths.h), the line a user can
// change. Nothing here faults or blocks: without an interpreter, or with a CPython whose frame
// layout is unknown (python_layout.h) while the thread has released the GIL, there are simply no
// frames; a free-threaded CPython gets none at all. Either is said once (a line on stderr and the
// trace's python_frames_refused statistic).
#pragma once

#include <stdint.h>

#include "cuprobe/trace_format.h"

namespace cuprobe::shim {

inline constexpr int kMaxPython = 24;  // deep enough to reach the script through nested nn.Modules

// Fills out[0, n) with the calling thread's frames, innermost first, and returns n (at most
// kMaxPython). Call on the thread whose stack is taken, inside a hooked call.
int python_frames(trace::PyFrame* out);

}  // namespace cuprobe::shim
