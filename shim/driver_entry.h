// Handing out recording wrappers for driver functions that a program looks up by name instead of
// linking: the pointers cudaGetDriverEntryPoint[ByVersion] and cuGetProcAddress return, and what
// dlsym returns for a handle of libcuda (the dlsym interposer, dlsym_stub.S).
//
// Contract: a lookup of a function cuprobe does not wrap, of another version or variant than the
// wrapper's, or that failed, gets the driver's own pointer back unchanged. A wrapper forwards to
// the pointer the driver returned (the first one, when several lookups of one function return
// different addresses of the same function), never to a copy found by name. Never returns a
// pointer into the shim for a function the shim does not define.
#pragma once

#include <stdint.h>

namespace cuprobe::shim {

// `symbol` as cuGetProcAddress takes it ("cuMemAlloc"), for `version` and the lookup's flags
// (the per-thread-default-stream bit, 2, is the same in the runtime's and the driver's flags).
void* driver_entry_for_lookup(const char* symbol, void* real, int version, uint64_t flags);

// `name` as libcuda exports it ("cuMemAlloc_v2"), from dlsym on a libcuda handle.
void* driver_entry_for_export(const char* name, void* real);

}  // namespace cuprobe::shim
