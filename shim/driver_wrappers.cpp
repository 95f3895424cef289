// The exported CUDA driver wrappers and their argument-field table, expanded from
// driver_hooks.h (each wrapper's type checked against cuda.h here); the wrappers handed out for
// entry-point lookups and for dlsym on a libcuda handle (driver_entry.h, dlsym_stub.S); and
// PyTorch's out-of-memory report (CUPROBE_TORCH_HOOKS).
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include <type_traits>

#include "alerts.h"
#include "capture_driver.h"
#include "driver_entry.h"
#include "hook.h"

namespace cuprobe::shim {

#define CUPROBE_DRIVER_WRAPPER(ret, name, sig, params, args, flags)                                        \
  static_assert(std::is_same_v<decltype(&::sig), ret(*) params>,                                           \
                "driver_hooks.h: " #name " does not match the declaration of " #sig " in cuda.h");         \
  CUPROBE_EXPORT ret name params CUPROBE_WRAPPER_BODY(name, sig, args)
CUPROBE_DRIVER_HOOKS(CUPROBE_DRIVER_WRAPPER)
#undef CUPROBE_DRIVER_WRAPPER

#define CUPROBE_DRIVER_FIELDS(ret, name, sig, params, args, flags) \
  g_api_fields[int(ApiId::name)] = Capture<ApiId::sig>::kFields;
void register_driver_fields() {
  CUPROBE_DRIVER_HOOKS(CUPROBE_DRIVER_FIELDS)
  g_api_fields[int(ApiId::_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE)] =
      "size:u,allocated:u,reserved:u,device_type:i";
}
#undef CUPROBE_DRIVER_FIELDS

namespace {

void* g_ctx_get_device;  // cuCtxGetDevice, found on first use

void* wrapper_address(ApiId api) {
  switch (api) {
#define CUPROBE_DRIVER_ADDRESS(ret, name, sig, params, args, flags) \
  case ApiId::name:                                                 \
    return reinterpret_cast<void*>(&name);
    CUPROBE_DRIVER_HOOKS(CUPROBE_DRIVER_ADDRESS)
#undef CUPROBE_DRIVER_ADDRESS
    default:
      return nullptr;
  }
}

// The wrapper of `api` for a driver function the program found itself: it forwards to `real`
// (or to the first address found for that function). With tracing off (CUPROBE_DISABLE=1) the
// program gets the driver's own function, as if cuprobe were not there.
void* adopt(ApiId api, void* real) {
  if (real == nullptr || in_shim(real) || !tracing_on()) return real;
  void* expected = nullptr;
  __atomic_compare_exchange_n(&g_real[int(api)], &expected, real, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return wrapper_address(api);
}

constexpr uint64_t kPerThreadStream = 2;  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, cudaEnablePerThreadDefaultStream

bool is_libcuda(void* handle) {
  static void* known;  // the libcuda handle, once seen (plain pointer: no guard needed)
  if (handle == __atomic_load_n(&known, __ATOMIC_RELAXED)) return true;
  // A glibc dlopen handle is the object's link_map; dlsym has just accepted it.
  const char* name = static_cast<struct link_map*>(handle)->l_name;
  if (name == nullptr) return false;
  const char* base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (strncmp(base, "libcuda.so", 10) != 0 || (base[10] != 0 && base[10] != '.')) return false;
  __atomic_store_n(&known, handle, __ATOMIC_RELAXED);
  return true;
}

}  // namespace

void* driver_entry_for_lookup(const char* symbol, void* real, int version, uint64_t flags) {
  if (symbol == nullptr || real == nullptr) return real;
  const DriverQuery* plain = nullptr;
  const DriverQuery* per_thread = nullptr;
  for (const DriverQuery& q : kDriverQueries) {
    if (strcmp(q.name, symbol) == 0) (q.per_thread ? per_thread : plain) = &q;
  }
  // A function without a per-thread variant is the same function whichever the lookup asked for.
  const DriverQuery* q = (flags & kPerThreadStream) && per_thread ? per_thread : plain;
  if (q == nullptr || version < q->min_version) return real;
  return adopt(q->api, real);
}

void* driver_entry_for_export(const char* name, void* real) {
  if (name == nullptr || real == nullptr) return real;
  for (const DriverQuery& q : kDriverQueries) {
    if (strcmp(api_static(q.api).name, name) == 0) return adopt(q.api, real);
  }
  return real;
}

int driver_device(ThreadState& t) {
  // Never the runtime's cudaGetDevice: see driver_hooks.h. A device the runtime reported on this
  // thread is the current context's device too.
  if (t.device >= 0) return t.device;
  using Fn = CUresult (*)(CUdevice*);
  void* p = __atomic_load_n(&g_ctx_get_device, __ATOMIC_ACQUIRE);
  if (p == nullptr) {
    p = resolve_in_library(trace::Library::kDriver, "cuCtxGetDevice");
    if (p == nullptr) return -1;
    __atomic_store_n(&g_ctx_get_device, p, __ATOMIC_RELEASE);
  }
  CUdevice dev = -1;
  return reinterpret_cast<Fn>(p)(&dev) == CUDA_SUCCESS ? int(dev) : -1;
}

}  // namespace cuprobe::shim

using cuprobe::ApiId;
using namespace cuprobe::shim;

// dlsym_stub.S's helpers.
extern "C" {
__attribute__((visibility("hidden"))) void* cuprobe_real_dlsym = nullptr;
}

// Not instrumented by ThreadSanitizer: see real_dlsym_address.
extern "C" __attribute__((visibility("hidden"), no_sanitize("thread"))) void* cuprobe_dlsym_init() {
  void* p = __atomic_load_n(&cuprobe_real_dlsym, __ATOMIC_ACQUIRE);
  if (p == nullptr) {
    p = real_dlsym_address();
    __atomic_store_n(&cuprobe_real_dlsym, p, __ATOMIC_RELEASE);
  }
  return p;
}

extern "C" __attribute__((visibility("hidden"))) void* cuprobe_dlsym_handle(void* handle, const char* name) {
  void* p = real_dlsym(handle, name);
  if (p != nullptr && name != nullptr && name[0] == 'c' && name[1] == 'u' && is_libcuda(handle)) {
    p = driver_entry_for_export(name, p);
  }
  return p;
}

// PyTorch's out-of-memory report: recorded (with a stack unless stacks are off), then passed on.
CUPROBE_EXPORT void _ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE(int64_t alloc_size, size_t total_allocated,
                                                                          size_t total_reserved,
                                                                          cuprobe::C10Device device) {
  constexpr ApiId kApi = ApiId::_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE;
  using Fn = void (*)(int64_t, size_t, size_t, cuprobe::C10Device);
  auto real = reinterpret_cast<Fn>(real_function(kApi));
  ThreadState& t = t_state;
  if (t.mode == kThreadUnset) thread_setup(t);
  if (t.mode == kThreadReady) {
    t.mode = kThreadBusy;
    uint64_t fields[4] = {uint64_t(alloc_size), total_allocated, total_reserved, uint64_t(int64_t(device.type))};
    write_plain_call(t, kApi, 0, now_ticks(), 0, fields, 4, device.index, g_stack_mode != kStacksOff);
    t.mode = kThreadReady;
  }
  alert_torch_oom(alloc_size, total_allocated, total_reserved, device.index);
  if (real != nullptr) real(alloc_size, total_allocated, total_reserved, device);
}
