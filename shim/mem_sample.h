// Coverage of device memory, measured rather than assumed: the shim asks the device how much of
// its memory is in use (cudaMemGetInfo after runtime allocations, cuMemGetInfo after driver
// allocations and where the process has no runtime) and
// writes the answer as a call record flagged kCallSample, so the analyzer can compare what the
// device says is used with what cuprobe saw allocated.
//
// When: after an allocation call that genuinely failed (at once), after other allocation calls
// at most every CUPROBE_MEM_SAMPLE_MS milliseconds per device (default 500; 0 turns the periodic
// samples off), and once at exit (an atexit handler registered after the CUDA runtime's own, so
// it runs before the runtime tears down). Only the calling thread's current device is sampled:
// the shim never changes a thread's device.
#pragma once

#include "api.h"
#include "recorder.h"

namespace cuprobe::shim {

void mem_sample_configure();

// A stream-ordered pool the process allocates from (nullptr: the device's current pool, as
// cudaMallocAsync uses). Memory samples then also ask each pool what it holds reserved and in
// use (cudaMemPoolGetAttribute), written before the device's own account so that the analysis
// counts what pools keep after frees as seen. At most kMaxSampledPools explicit pools.
void note_pool_in_use(void* pool);

// After an allocation event on `device` (the thread's guard held). `driver`: the allocation was
// a driver call, which may come from inside the runtime: the sample then asks the driver only.
void maybe_sample_memory(ThreadState& t, int device, bool failed, bool driver);

// Writes a call record the shim composed itself (a sample, a report recorded by hand): `n`
// argument fields, then the optional words `flags` (trace::CallFlags) announce. With `with_stack`
// the calling thread's stack is taken. The thread's guard must be held.
void write_plain_call(ThreadState& t, ApiId api, int32_t ret, uint64_t start, uint64_t dur, const uint64_t* fields,
                      int n, int device, bool with_stack, uint8_t flags = 0);

}  // namespace cuprobe::shim
