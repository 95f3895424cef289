// What the shim asks the CUDA driver (libcuda) itself, for the trace's process header: a device's
// description and the driver's version. These come from the driver's stable query functions
// (cuDeviceGet, cuDeviceGetName, cuDeviceTotalMem_v2, cuDeviceGetUuid_v2, cuDeviceGetAttribute,
// cuDriverGetVersion), whose signatures have not changed since CUDA 4, so the answer depends on
// no structure layout of any runtime version (cudaDeviceProp lost fields in CUDA 13: issue 25),
// and a process that uses only the driver (JAX) is described as well as one that uses the runtime.
//
// Contract: the functions are the mapped libcuda's own (resolve_in_library), never the shim's
// wrappers, and libcuda is never loaded here: a process without one gets no answer. Call only
// where a context of the device is known to exist (after a successful call that implies it) and
// outside the real call of any wrapped function. A query that is missing or fails leaves its
// field unknown (-1, zero bytes, empty name), never a guess.
#pragma once

#include <stdint.h>

#include "cuprobe/trace_format.h"

namespace cuprobe::shim {

// Fills everything of `out` but its header from the driver's answers about device `ordinal`
// (the runtime's device index, which is the driver's ordinal under the same
// CUDA_VISIBLE_DEVICES). False when the driver gave no answer at all (not loaded, not
// initialised, no such device): nothing worth a record.
bool describe_device(int ordinal, trace::DeviceInfo* out);

// The device's name (cuDeviceGetName) into `out` (NUL-terminated); false, with `out` empty, when
// the driver does not say.
bool device_name(int ordinal, char* out, int cap);

// cuDriverGetVersion (13000 for a CUDA 13.0 driver), 0 when unknown.
int driver_version();

}  // namespace cuprobe::shim
