// Live alerts (issue 15): one line on standard error while the job runs, when the shim notices on
// paths it already takes (never on a hot path, no thread of its own):
//   - an out-of-memory failure: PyTorch's out-of-memory report (the caching allocator gave up),
//     or a device allocation the CUDA runtime or driver refused (not an injected one);
//   - a fault it injected (fault mode), per rule;
//   - a storm of new cuDNN problems: new problems still arriving 20 s and more after the job's
//     cuDNN work began (see alerts.cpp for the rule), the live sign of a cudnn.benchmark
//     re-search storm.
// Each line names the process (rank, pid, host) and the trace, and is rate-limited per kind.
// CUPROBE_ALERTS: unset or "on" (standard error), "off", or "file:PATH" (appended to PATH).
#pragma once

#include <stdint.h>

#include "api.h"

namespace cuprobe::shim {

struct FaultHit;

// Reads CUPROBE_ALERTS and the storm thresholds (configure(), once).
void alerts_configure();

// PyTorch's out-of-memory report (c10::reportOutOfMemoryToProfiler).
void alert_torch_oom(int64_t size, uint64_t total_allocated, uint64_t total_reserved, int device);
// A device allocation that failed for real.
void alert_allocation_failed(ApiId api, uint64_t size, int device, int code);
// A call fault mode failed on purpose.
void alert_fault_injected(ApiId api, const FaultHit& hit);
// A cuDNN problem seen for the first time (problem_table.cpp).
void alert_new_problem();

}  // namespace cuprobe::shim
