// The body every generated wrapper shares: find the real function, pass through when the
// guard is held or tracing is off, otherwise time the real call and write one CallRecord whose
// argument fields the API's Capture<> specialization fills in.
//
// Manners: the real call always happens; nothing here allocates, locks or logs
// once the thread has a chunk; a missing real function returns the library's own error code,
// is counted, and never crashes.
#pragma once

#include <stdint.h>
#include <string.h>

#include "api.h"
#include "clock.h"
#include "process_info.h"
#include "recorder.h"
#include "resolve.h"

namespace cuprobe::shim {

// Where a Capture<> puts an event's argument fields, in the order of its kFields string.
class CallWriter {
 public:
  CallWriter(ThreadState& t, uint64_t* args) : t_(t), args_(args) {}

  void u(uint64_t v) { args_[n_++] = v; }
  void i(int64_t v) { args_[n_++] = uint64_t(v); }
  void p(const void* v) { args_[n_++] = uint64_t(reinterpret_cast<uintptr_t>(v)); }
  void f(double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    args_[n_++] = bits;
  }
  void stream(const void* s) {
    stream_ = uint64_t(reinterpret_cast<uintptr_t>(s));
    has_stream_ = true;
  }
  void device(int d) { device_ = d; }
  // A quiet API's capture asks for its call to be written as an event even though it succeeded.
  void emit() { emit_ = true; }

  ThreadState& thread() { return t_; }
  int count() const { return n_; }
  bool has_stream() const { return has_stream_; }
  uint64_t stream_value() const { return stream_; }
  int device_override() const { return device_; }
  bool emit_requested() const { return emit_; }

 private:
  ThreadState& t_;
  uint64_t* args_;
  int n_ = 0;
  bool has_stream_ = false;
  uint64_t stream_ = 0;
  int device_ = kNoOverride;
  bool emit_ = false;

 public:
  static constexpr int kNoOverride = -1000;
};

// Per-API capture logic, keyed by the signature-of id. The primary template records no
// argument fields; specializations live beside each library's table (capture_cudart.h).
template <ApiId kSig>
struct Capture {
  static constexpr const char* kFields = "";
  template <typename Ret, typename... A>
  static void after(CallWriter&, Ret, A...) {}
};

// Per-library behaviour: the value returned when the real function is missing, what counts as
// success, how the event's device is found, and what the library's first event also records.
template <trace::Library L>
struct LibraryTraits;

template <ApiId kApi, typename Fn>
struct Interceptor;

// Forwards a counted call when its count could not be taken on the fast path: sets the thread
// up, learns its device once, or records the call as an event (CUPROBE_LAUNCH_EVENTS=1).
void count_slow(ThreadState& t, int slot);

template <ApiId kApi, typename Ret, typename... A>
struct Interceptor<kApi, Ret (*)(A...)> {
  static constexpr const ApiStatic& kInfo = api_static(kApi);
  static constexpr ApiId kSig = kInfo.sig;
  using Traits = LibraryTraits<kInfo.library>;
  using Cap = Capture<kSig>;
  static constexpr int kArgs = field_count(Cap::kFields);
  static_assert(kArgs <= trace::kMaxCallArgs);
  static constexpr uint32_t kMaxSize = uint32_t(sizeof(trace::CallRecord) + 8 * (kArgs + 2));
  static constexpr bool kCounted = (kInfo.flags & trace::kApiCounted) != 0;
  static constexpr bool kQuiet = (kInfo.flags & trace::kApiQuiet) != 0;

  static Ret call(A... a) {
    using Fn = Ret (*)(A...);
    auto real = reinterpret_cast<Fn>(real_function(kApi));
    ThreadState& t = t_state;
    if (__builtin_expect(real == nullptr, 0)) return missing(t);
    if constexpr (kCounted) {
      constexpr int kSlot = count_slot(kApi);
      if (__builtin_expect(t.mode == kThreadReady && t.counts != nullptr && t.device >= 0, 1)) {
        uint64_t* c = t.counts + kSlot * (trace::kCountDevices + 1);
        __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
        return real(a...);
      }
      if (!g_launch_events || t.mode == kThreadBusy) {
        count_slow(t, kSlot);
        return real(a...);
      }
    }
    if (__builtin_expect(t.mode != kThreadReady, 0)) {
      if (t.mode != kThreadUnset || thread_setup(t) != kThreadReady) return real(a...);
    }
    t.mode = kThreadBusy;
    t.inflight_api = uint16_t(kApi);
    uint64_t start = now_ticks();
    t.inflight_start = start;
    Ret ret = real(a...);
    uint64_t end = now_ticks();
    t.inflight_api = trace::kNoApi;
    write(t, ret, start, end - start, a...);
    t.mode = kThreadReady;
    return ret;
  }

 private:
  static void write(ThreadState& t, Ret ret, uint64_t start, uint64_t dur, A... a) {
    uint64_t scratch[kArgs + 2];
    char* p = reserve(t, kMaxSize);
    auto* rec = reinterpret_cast<trace::CallRecord*>(p);
    // Records are appended to memory no one has written yet: ask for the lines a few records
    // ahead now, so that later records do not wait for them (the chunk has a tail to spare).
    __builtin_prefetch(p + 256, 1, 3);
    uint64_t* tail = rec ? rec->tail : scratch;
    CallWriter w(t, tail);
    Cap::after(w, ret, a...);
    if constexpr (kQuiet) {
      if (Traits::ok(ret) && !w.emit_requested()) {
        if (t.chunk != nullptr) {
          uint64_t* c = &t.chunk->quiet_counts[count_slot(kApi)];
          __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
        }
        return;
      }
    }
    Traits::on_event();
    int device = w.device_override() != CallWriter::kNoOverride ? w.device_override() : Traits::device(t);
    if constexpr ((kInfo.flags & trace::kApiInitsDevice) != 0) {
      if (Traits::ok(ret) && device >= 0) note_device(device);
    }
    if (rec == nullptr) return;
    int n = w.count();
    uint8_t flags = 0;
    if (w.has_stream()) {
      tail[n++] = w.stream_value();
      flags |= trace::kCallHasStream;
    }
    if (__builtin_expect(dur > 0xfffffffeull, 0)) {
      tail[n++] = dur;
      flags |= trace::kCallLongDuration;
    }
    uint32_t size = uint32_t(sizeof(trace::CallRecord)) + 8u * uint32_t(n);
    rec->h = trace::RecordHeader{uint8_t(trace::RecordType::kCall), flags, uint16_t(size), uint16_t(kApi),
                                 int16_t(device)};
    rec->ret = int32_t(ret);
    rec->dur_ticks = (flags & trace::kCallLongDuration) ? 0xffffffffu : uint32_t(dur);
    rec->start_ticks = start;
    commit(t, size);
  }

  // The real function is not there: answer with the library's error, count it, record it.
  static Ret missing(ThreadState& t) {
    Ret ret = Traits::kMissing;
    count_stat(trace::kStatMissingSymbols);
    if (t.mode == kThreadUnset) thread_setup(t);
    if (t.mode != kThreadReady) return ret;
    t.mode = kThreadBusy;
    if (char* p = reserve(t, sizeof(trace::CallRecord))) {
      auto* rec = reinterpret_cast<trace::CallRecord*>(p);
      rec->h = trace::RecordHeader{uint8_t(trace::RecordType::kCall), 0, uint16_t(sizeof(trace::CallRecord)),
                                   uint16_t(kApi), int16_t(t.device)};
      rec->ret = int32_t(ret);
      rec->dur_ticks = 0;
      rec->start_ticks = now_ticks();
      commit(t, sizeof(trace::CallRecord));
    }
    t.mode = kThreadReady;
    return ret;
  }
};

}  // namespace cuprobe::shim

#define CUPROBE_EXPORT extern "C" __attribute__((visibility("default")))
