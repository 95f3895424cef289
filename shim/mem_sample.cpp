// Memory samples; see mem_sample.h. Also the writer of call records the shim composes itself.
#include "mem_sample.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <unistd.h>

#include "capture_driver.h"
#include "clock.h"
#include "env_config.h"
#include "fork.h"
#include "hook.h"
#include "process_info.h"
#include "resolve.h"

namespace cuprobe::shim {

namespace {

uint64_t g_interval_ticks;
bool g_periodic = true;
uint64_t g_last[trace::kMaxDevices];  // ticks of the device's last sample, 0 never
uint32_t g_atexit_registered;
int g_atexit_pid;  // the process that registered the handler (a forked child inherits it)
void* g_exchange_capture_mode[2];  // cudaThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode
// Pools (issue 28): whether the process allocated from the device's current pool, and the explicit
// pools it allocated from (first come, lock-free: a slot is claimed by compare-and-swap).
constexpr int kMaxSampledPools = 4;
uint32_t g_current_pool_used;
void* g_pools[kMaxSampledPools];
void* g_device_get_mem_pool;  // cudaDeviceGetMemPool (not hooked: resolved when first needed)

// A function of `lib` the shim calls itself, resolved once into `slot` (nullptr: not there yet).
void* lazy_symbol(void*& slot, trace::Library lib, const char* name) {
  void* p = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
  if (p == nullptr) {
    p = resolve_in_library(lib, name);
    if (p != nullptr) __atomic_store_n(&slot, p, __ATOMIC_RELEASE);
  }
  return p;
}

// While a stream is being captured into a CUDA graph in the global mode, calls that might
// synchronize are refused and invalidate the capture. A sample switches the calling thread to
// the relaxed mode around its query (as PyTorch does around cudaMalloc) and back.
int exchange_capture_mode(bool runtime, int mode) {
  using Fn = int (*)(int*);
  void* p = runtime ? lazy_symbol(g_exchange_capture_mode[0], trace::Library::kCudart,
                                  "cudaThreadExchangeStreamCaptureMode")
                    : lazy_symbol(g_exchange_capture_mode[1], trace::Library::kDriver,
                                  "cuThreadExchangeStreamCaptureMode");
  if (p == nullptr) return -1;
  int m = mode;
  return reinterpret_cast<Fn>(p)(&m) == 0 ? m : -1;
}

// Asks the device through the runtime when the process has one, else through the driver; writes
// the answer as a sample record. The memory cap is not applied: samples are the device's truth.
// The query a sample makes: the runtime's, unless `driver` or the process has no runtime.
ApiId sample_api(bool driver) {
  return !driver && real_function(ApiId::cudaMemGetInfo) != nullptr ? ApiId::cudaMemGetInfo : ApiId::cuMemGetInfo_v2;
}

// What each pool in use on `device` holds reserved and in use: one cudaMemPoolGetAttribute record
// per attribute, flagged as a sample. Runtime path only (pools are the runtime's here).
void sample_pools(ThreadState& t, int device) {
  using GetPoolFn = int (*)(cudaMemPool_t*, int);
  using GetAttrFn = int (*)(cudaMemPool_t, cudaMemPoolAttr, void*);
  // Hooked, so the real function is in the shim's table already.
  auto get_attr = reinterpret_cast<GetAttrFn>(real_function(ApiId::cudaMemPoolGetAttribute));
  if (get_attr == nullptr) return;
  void* pools[kMaxSampledPools + 1];
  int n = 0;
  if (__atomic_load_n(&g_current_pool_used, __ATOMIC_RELAXED)) {
    auto get_pool = reinterpret_cast<GetPoolFn>(
        lazy_symbol(g_device_get_mem_pool, trace::Library::kCudart, "cudaDeviceGetMemPool"));
    cudaMemPool_t current = nullptr;
    if (get_pool != nullptr && get_pool(&current, device) == 0 && current != nullptr) pools[n++] = current;
  }
  for (void*& slot : g_pools) {
    void* p = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
    if (p == nullptr) break;
    bool seen = false;
    for (int k = 0; k < n; ++k) seen = seen || pools[k] == p;
    if (!seen) pools[n++] = p;
  }
  for (int k = 0; k < n; ++k) {
    static constexpr cudaMemPoolAttr kAttrs[] = {cudaMemPoolAttrReservedMemCurrent, cudaMemPoolAttrUsedMemCurrent};
    for (cudaMemPoolAttr attr : kAttrs) {
      uint64_t value = 0;
      uint64_t start = now_ticks();
      int ret = get_attr(static_cast<cudaMemPool_t>(pools[k]), attr, &value);
      uint64_t fields[3] = {reinterpret_cast<uint64_t>(pools[k]), uint64_t(int64_t(attr)), ret == 0 ? value : 0};
      write_plain_call(t, ApiId::cudaMemPoolGetAttribute, ret, start, now_ticks() - start, fields, 3, device, false,
                       trace::kCallSample);
    }
  }
}

void sample(ThreadState& t, ApiId api) {
  using InfoFn = int (*)(size_t*, size_t*);  // cudaMemGetInfo and cuMemGetInfo_v2 alike
  auto fn = reinterpret_cast<InfoFn>(real_function(api));
  if (fn == nullptr) return;
  int device = api == ApiId::cudaMemGetInfo ? current_device(t) : driver_device(t);
  size_t free_bytes = 0, total = 0;
  bool runtime = api == ApiId::cudaMemGetInfo;
  int previous = exchange_capture_mode(runtime, int(cudaStreamCaptureModeRelaxed));
  if (runtime) sample_pools(t, device);
  uint64_t start = now_ticks();
  int ret = fn(&free_bytes, &total);
  uint64_t end = now_ticks();
  if (previous >= 0) exchange_capture_mode(runtime, previous);
  uint64_t fields[2] = {ret == 0 ? free_bytes : 0, ret == 0 ? total : 0};
  write_plain_call(t, api, ret, start, end - start, fields, 2, device, false, trace::kCallSample);
}

void sample_at_exit() {
  ThreadState& t = t_state;
  if (t.mode != kThreadReady || getpid() != g_atexit_pid) return;
  t.mode = kThreadBusy;
  sample(t, sample_api(false));
  t.mode = kThreadReady;
}

}  // namespace

void mem_sample_configure() {
  uint64_t ms = env_number(env::Id::kMemSampleMs);
  g_periodic = ms != 0;
  g_interval_ticks = uint64_t(double(ms) * 1e6 * clock_ticks_per_ns());
}

namespace {

}  // namespace

void note_pool_in_use(void* pool) {
  if (pool == nullptr) {
    if (!__atomic_load_n(&g_current_pool_used, __ATOMIC_RELAXED)) __atomic_store_n(&g_current_pool_used, 1u, __ATOMIC_RELAXED);
    return;
  }
  for (void*& slot : g_pools) {
    void* p = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
    if (p == pool) return;
    if (p == nullptr) {
      void* expected = nullptr;
      if (__atomic_compare_exchange_n(&slot, &expected, pool, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return;
      if (expected == pool) return;
    }
  }
}

namespace {

// The child's file has no sample yet: its first allocation on each device is a baseline again.
void mem_sample_after_fork() {
  for (auto& last : g_last) last = 0;
  g_atexit_registered = 0;  // the parent's handler is inherited but does nothing here (its pid)
}
CUPROBE_FORK_CHILD_RESET(mem_sample_after_fork);

}  // namespace

void maybe_sample_memory(ThreadState& t, int device, bool failed, bool driver) {
  if (device < 0 || device >= trace::kMaxDevices) return;
  uint64_t now = now_ticks();
  uint64_t last = __atomic_load_n(&g_last[device], __ATOMIC_RELAXED);
  if (!failed) {
    // The first allocation on a device is always sampled: it is the baseline.
    if (last != 0 && (!g_periodic || now - last < g_interval_ticks)) return;
    if (!__atomic_compare_exchange_n(&g_last[device], &last, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
  } else {
    __atomic_store_n(&g_last[device], now, __ATOMIC_RELAXED);
  }
  // Physical memory placed on another device than the thread's current one is not sampled there.
  ApiId api = sample_api(driver);
  int current = api == ApiId::cudaMemGetInfo ? current_device(t) : driver_device(t);
  if (current != device) return;
  sample(t, api);
  // Registered once the runtime has initialised (it registers its own teardown then), so that
  // this handler runs first. A forked child inherits the parent's registration.
  if (__atomic_exchange_n(&g_atexit_registered, 1u, __ATOMIC_ACQ_REL) == 0) {
    g_atexit_pid = getpid();
    atexit(sample_at_exit);
  }
}

void write_plain_call(ThreadState& t, ApiId api, int32_t ret, uint64_t start, uint64_t dur, const uint64_t* fields,
                      int n, int device, bool with_stack, uint8_t flags) {
  uint32_t max = uint32_t(sizeof(trace::CallRecord)) + 8u * uint32_t(n + 2);
  char* p = reserve_kept(t, trace::align8(max));
  if (p == nullptr) return;
  auto* rec = reinterpret_cast<trace::CallRecord*>(p);
  int k = 0;
  for (; k < n; ++k) rec->tail[k] = fields[k];
  if (dur > 0xfffffffeull) {
    rec->tail[k++] = dur;
    flags |= trace::kCallLongDuration;
  }
  if (with_stack) {
    if (uint32_t id = capture_stack()) {
      rec->tail[k++] = id;
      flags |= trace::kCallHasStack;
    }
  }
  uint32_t size = uint32_t(sizeof(trace::CallRecord)) + 8u * uint32_t(k);
  rec->h = trace::RecordHeader{uint8_t(trace::RecordType::kCall), flags, uint16_t(size), uint16_t(api), int16_t(device)};
  rec->ret = ret;
  rec->dur_ticks = (flags & trace::kCallLongDuration) ? 0xffffffffu : uint32_t(dur);
  rec->start_ticks = start;
  commit_kept(t, size);
}

}  // namespace cuprobe::shim
