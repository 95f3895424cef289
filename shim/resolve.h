// Finding the real functions behind the hooks, lazily, at the first call of each.
//
// A hooked name is looked up with dlsym(RTLD_NEXT) first (the library is in the global scope:
// linked by the program, or cudart in PyTorch's wheels). When that fails the library was loaded
// privately (RTLD_LOCAL; libcudnn.so.9 in PyTorch's wheels): the copy that is actually mapped is
// found with dl_iterate_phdr and opened by its exact path with RTLD_NOLOAD. Another copy is
// never loaded by name (a bare dlopen("libcudnn.so.9") can pick a different version from the
// loader cache). A name that cannot be found yields nullptr; the caller returns the API's own
// error code and counts it.
#pragma once

#include "api.h"

namespace cuprobe::shim {

extern void* g_real[kApiCount];

void* resolve_slot(ApiId id);

inline void* real_function(ApiId id) {
  void* p = __atomic_load_n(&g_real[int(id)], __ATOMIC_ACQUIRE);
  return __builtin_expect(p != nullptr, 1) ? p : resolve_slot(id);
}

// `name` from the mapped copy of `lib` (for functions the shim calls but does not hook).
void* resolve_in_library(trace::Library lib, const char* name);

// True when `p` points into the shim itself.
bool in_shim(const void* p);

// The C library's dlsym, never the shim's interposer (dlsym_stub.S): the shim's own lookups must
// not be handed its own wrappers. RTLD_NEXT in `handle` means "after the shim".
void* real_dlsym(void* handle, const char* name);
void* real_dlsym_address();

}  // namespace cuprobe::shim
