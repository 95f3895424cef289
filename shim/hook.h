// The body every generated wrapper shares: find the real function, pass through when the
// guard is held or tracing is off, otherwise time the real call and write one CallRecord whose
// argument fields the API's Capture<> specialization fills in.
//
// Manners (STYLE.md): the real call always happens; nothing here allocates, locks or logs
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

  ThreadState& thread() { return t_; }
  int count() const { return n_; }
  bool has_stream() const { return has_stream_; }
  uint64_t stream_value() const { return stream_; }
  int device_override() const { return device_; }

 private:
  ThreadState& t_;
  uint64_t* args_;
  int n_ = 0;
  bool has_stream_ = false;
  uint64_t stream_ = 0;
  int device_ = kNoOverride;

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
// success, and how the event's device is found.
template <trace::Library L>
struct LibraryTraits;

template <ApiId kApi, typename Fn>
struct Interceptor;

template <ApiId kApi, typename Ret, typename... A>
struct Interceptor<kApi, Ret (*)(A...)> {
  static constexpr const ApiStatic& kInfo = api_static(kApi);
  static constexpr ApiId kSig = kInfo.sig;
  using Traits = LibraryTraits<kInfo.library>;
  using Cap = Capture<kSig>;
  static constexpr int kArgs = field_count(Cap::kFields);
  static_assert(kArgs <= trace::kMaxCallArgs);
  static constexpr uint32_t kRecordSize = uint32_t(sizeof(trace::CallRecord) + 8 * kArgs);

  static Ret call(A... a) {
    using Fn = Ret (*)(A...);
    auto real = reinterpret_cast<Fn>(real_function(kApi));
    ThreadState& t = t_state;
    if (__builtin_expect(real == nullptr, 0)) return missing(t);
    if (t.guard != 0 || !recording_on()) return real(a...);
    if constexpr ((kInfo.flags & trace::kApiCounted) != 0) {
      if (!g_launch_events) {
        count(t);
        return real(a...);
      }
    }
    t.guard = 1;
    t.inflight_api = uint16_t(kApi);
    uint64_t start = now_ticks();
    t.inflight_start = start;
    Ret ret = real(a...);
    uint64_t end = now_ticks();
    t.inflight_api = trace::kNoApi;
    write(t, ret, start, end, a...);
    t.guard = 0;
    return ret;
  }

 private:
  static void write(ThreadState& t, Ret ret, uint64_t start, uint64_t end, A... a) {
    uint64_t scratch[kArgs > 0 ? kArgs : 1];
    char* p = reserve(t, kRecordSize);
    auto* rec = reinterpret_cast<trace::CallRecord*>(p);
    CallWriter w(t, rec ? rec->args : scratch);
    Cap::after(w, ret, a...);
    int device = w.device_override() != CallWriter::kNoOverride ? w.device_override() : Traits::device(t);
    if constexpr ((kInfo.flags & trace::kApiInitsDevice) != 0) {
      if (Traits::ok(ret) && device >= 0) note_device(device);
    }
    if (rec == nullptr) return;
    rec->h = trace::RecordHeader{uint16_t(trace::RecordType::kCall), uint16_t(kApi), kRecordSize};
    rec->ret = int32_t(ret);
    rec->device = int16_t(device);
    rec->flags = w.has_stream() ? trace::kCallHasStream : 0;
    rec->start_ticks = start;
    rec->dur_ticks = end - start;
    rec->stream = w.stream_value();
    commit(t, kRecordSize);
  }

  static void count(ThreadState& t) {
    constexpr int kSlot = count_slot(kApi);
    trace::ChunkHeader* c = counting_chunk(t);
    if (__builtin_expect(c == nullptr, 0)) return;
    int d = t.device;
    if (__builtin_expect(d < 0, 0)) d = Traits::device(t);
    unsigned slot = unsigned(d) < unsigned(trace::kCountDevices) ? unsigned(d) : unsigned(trace::kCountDevices);
    uint64_t* counter = &c->counts[kSlot][slot];
    __atomic_store_n(counter, *counter + 1, __ATOMIC_RELAXED);
  }

  // The real function is not there: answer with the library's error, count it, record it.
  static Ret missing(ThreadState& t) {
    Ret ret = Traits::kMissing;
    count_stat(trace::kStatMissingSymbols);
    if (t.guard != 0 || !recording_on()) return ret;
    t.guard = 1;
    if (char* p = reserve(t, sizeof(trace::CallRecord))) {
      auto* rec = reinterpret_cast<trace::CallRecord*>(p);
      uint64_t now = now_ticks();
      rec->h = trace::RecordHeader{uint16_t(trace::RecordType::kCall), uint16_t(kApi),
                                   uint32_t(sizeof(trace::CallRecord))};
      rec->ret = int32_t(ret);
      rec->device = int16_t(t.device);
      rec->flags = 0;
      rec->start_ticks = now;
      rec->dur_ticks = 0;
      rec->stream = 0;
      commit(t, sizeof(trace::CallRecord));
    }
    t.guard = 0;
    return ret;
  }
};

}  // namespace cuprobe::shim

#define CUPROBE_EXPORT extern "C" __attribute__((visibility("default")))
