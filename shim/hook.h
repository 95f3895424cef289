// The body every generated wrapper shares (Interceptor<>::call) and the points where each library
// and each API plug into it: find the real function, pass through when the guard is held or tracing
// is off, otherwise (fault plan and plan pinning permitting) time the real call and write one
// CallRecord whose argument fields the API's Capture<> specialization fills in.
//
// Manners: the real call always happens, unless a fault plan the user gave replaces it (faults.h)
// or plan pinning answers it (plan_pins.h); nothing here allocates, locks or logs once the thread
// has a chunk (stacks and the memory cap, taken only on the calls they are asked for, are the
// exceptions: stacks.h, faults.h); a missing real function returns the library's own error code,
// is counted, and never crashes.
//
// ---- Adding an interceptor ----------------------------------------------------------------------
// 1. One X(...) line in the library's list, schema/cuprobe/hooks/<library>_hooks.h: return type,
//    exported name, the function whose vendor declaration it must match, (parameters), (arguments),
//    role flags (trace::ApiFlags without "kApi": DeviceAlloc, Faultable, Counted, Quiet, ...). The
//    exported wrapper (<library>_wrappers.cpp: CUPROBE_WRAPPER_BODY, with a static_assert against
//    the vendor header), the ApiId, the real-function slot, the trace's ApiInfo record and the test
//    double (tests/doubles/) all follow from it.
// 2. What the call records: a Capture<ApiId::sig> specialization beside the others
//    (capture_<library>.h). kFields names the argument fields, "name:type,..." (types in
//    trace_format.h); after(CallWriter&, ret, args...) writes them in that order, reading outputs
//    only when the call succeeded. Without one the call records no argument fields. A capture with a
//    field of type q, k or r (a problem, knob set or results it interns) may write records of its
//    own: step 8a runs it before the call's record is reserved.
// 3. Faultable (flag Faultable): rules see the size, problem, engine or algo fields of the capture
//    run as if the call had failed (FaultProbe, below); a capture with side effects beyond its
//    fields needs a FaultProbe of its own.
// 4. Taking part in plan pinning: a Steer<ApiId::sig> specialization (capture_cudnn.h, plan_pins.h).
// 5. A new library: LibraryTraits<Library> (the missing-function error, success, the event's
//    device, what its first event records) and a <library>_wrappers.cpp expanding its list.
// 6. A shim test: a program in tests/programs/ run under the shim against the double
//    (tests/shim/), its calls read back with `cuprobe dump`.
//
// ---- What a call goes through, in this order (Interceptor<>::call) -----------------------------
//  0. An allocation wrapper notes its return address first (CUPROBE_WRAPPER_BODY): captures name
//     the module that asked for the memory.
//  1. find      The real function, resolved once (resolve.h). Missing: the library's own error,
//               counted and recorded (missing()); a null pointer is never called.
//  2. count     Counted APIs (kernel launches, stream and event queries, ...): on a set-up thread,
//               one add to the chunk's counter and the call is forwarded; no guard, no event
//               (count_only).
//  3. enter     A thread not yet set up is set up; a thread inside a hooked call (the guard: the
//               shim's own calls and those a real function makes), or one of a process that does
//               not trace, passes straight through. From here to the return the thread is busy
//               (kThreadBusy) and every return goes through leave().
//  4. faults    With a plan or a memory cap in force (one flag otherwise): the call is described and
//               the rules asked; one that fires replaces it. Nothing runs, output pointers are left
//               as a genuine failure leaves them, the runtime's error is remembered for
//               cudaGetLastError, the call is recorded with its fault word, an alert is said
//               (inject). The cap, asked after the rules, may instead set aside the bytes of an
//               allocation it lets through (hit.cap_device), settled in 8b.
//  5. steer     Plan pinning and the search budget, only for a call no rule replaced: Steer::before
//               may answer it itself (a failed-fast candidate, a pinned heuristics answer, a
//               budgeted legacy search), recorded with the answer's
//               own duration and a fault word naming kPinFaultRule (steer_before). A Steer with
//               kRewrites may then change the call's arguments (the search budget runs a deferred
//               search's winner in place of the plan it replaced); the call and its record see
//               the new ones.
//  6. call      The real function, exactly once, timed; t.inflight_api names it meanwhile for a
//               crash record.
//  7. settle    What the application gets is made final before anything reads it: the runtime's
//               last error with an injected one folded in; a memory query shrunk to the memory cap.
//               The record shows what the application saw (final_result).
//  8. record    write(), in its own steps:
//               a. keep    Which stream (docs/flight-recorder.md), decided before reserving, since
//                          the reservation is in that stream (decide_keep). Outside the capture
//                          window a routine call is counted, not written. A capture that writes
//                          records runs first, into scratch, so that its records precede the call's
//                          and it may ask for the call to be kept; the others write in place.
//               b. cap     The memory cap's bookkeeping for every allocation and free, written or
//                          not (cap_bookkeeping).
//               c. quiet   A quiet API's successful call is counted; its reserved room is never
//                          committed, so no reader sees it.
//               d. device  The library's first-event hook; the event's device; a device or runtime
//                          seen for the first time gets its process records.
//               e. commit  Tail words (stream, long duration, fault word, stack id), the header, one
//                          release store (finish): nothing of the record is visible before it.
//               f. after   Device allocations: a memory sample may follow; a genuine failure
//                          raises an alert (after_allocation).
//  9. steer     Steer::after sees the call's result once its record is written.
#pragma once

#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "alerts.h"
#include "api.h"
#include "clock.h"
#include "faults.h"
#include "mem_sample.h"
#include "plan_pins.h"
#include "problem_table.h"
#include "process_info.h"
#include "recorder.h"
#include "resolve.h"
#include "search_budget.h"
#include "stacks.h"

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
  // Flight recorder: an execution of a plan run only a few times so far (a search's candidate, a
  // selection's winner) is kept; one of a plan run many times ends the thread's open selection.
  void keep() { keep_ = true; }
  void close_selection() { close_selection_ = true; }

  ThreadState& thread() { return t_; }
  int count() const { return n_; }
  bool has_stream() const { return has_stream_; }
  uint64_t stream_value() const { return stream_; }
  int device_override() const { return device_; }
  bool emit_requested() const { return emit_; }
  bool keep_requested() const { return keep_; }
  bool closes_selection() const { return close_selection_; }

 private:
  ThreadState& t_;
  uint64_t* args_;
  int n_ = 0;
  bool has_stream_ = false;
  uint64_t stream_ = 0;
  int device_ = kNoOverride;
  bool emit_ = false;
  bool keep_ = false;
  bool close_selection_ = false;

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

// What a fault rule may ask about a faultable call (fault mode, faults.h). By default the
// API's own capture answers: it is run on the arguments before the real call, as if the call
// had failed (kProbe), and the fields named size, problem, problem_hash, engine or algo are read
// from what it wrote. A capture with side effects beyond writing fields (a finalize mirrors
// descriptor state) must have a FaultProbe of its own.
template <ApiId kSig>
struct FaultProbe {
  static constexpr bool kFromCapture = true;
  template <typename... A>
  static void describe(ThreadState&, FaultCtx&, A...) {}
};

// Plan pinning's and the search budget's part in a call (plan_pins.h, search_budget.h), while a
// plan file or a budget is in force (g_steer_on): `before` may answer the call itself (a candidate
// failed fast, a legacy search answered with the pinned algorithm or cuDNN's heuristics) and marks it with
// pin_mark_call; `after` sees the real call's result once it is recorded. The primary template takes no part.
template <ApiId kSig>
struct Steer {
  static constexpr bool kOn = false;
};

// Whether a Steer also rewrites the call's arguments (static void rewrite(ThreadState&, A&...)).
template <typename S>
concept SteerRewrites = requires {
  S::kRewrites;
};

// Whether a kFields string has a field of type `type` ('q' problem, 'k' knobs, 'r' results: ids of
// records the capture may write on the spot).
constexpr bool has_field_type(const char* fields, char type) {
  for (const char* p = fields; p != nullptr && *p != 0; ++p) {
    if (*p == ':' && p[1] == type && (p[2] == ',' || p[2] == 0)) return true;
  }
  return false;
}

// Index of a field in a kFields string, -1 when absent.
constexpr int field_pos(const char* fields, const char* name) {
  int index = 0;
  const char* p = fields;
  while (p != nullptr && *p != 0) {
    const char* n = name;
    const char* q = p;
    while (*n != 0 && *q == *n) ++q, ++n;
    if (*n == 0 && *q == ':') return index;
    while (*p != 0 && *p != ',') ++p;
    if (*p == ',') ++p;
    ++index;
  }
  return -1;
}

// Per-library behaviour: the value returned when the real function is missing, what counts as
// success, how the event's device is found, and what the library's first event also records.
template <trace::Library L>
struct LibraryTraits;

template <ApiId kApi, typename Fn>
struct Interceptor;

// Forwards a counted call when its count could not be taken on the fast path: sets the thread
// up, learns its device once, or records the call as an event (CUPROBE_LAUNCH_EVENTS=1).
void count_slow(ThreadState& t, int slot);

// Flight recorder (docs/flight-recorder.md): calls of these kinds are always kept, never
// overwritten: what the OOM analysis needs of memory (every allocation, free, mapping, memory
// query and framework OOM report), plan selection (searches, heuristic queries, finalizes),
// handles and communicators, and measured times. Failed and injected calls of any API are kept
// too, as are the calls of a thread while a plan selection is open on it.
inline constexpr uint64_t kKeptApiFlags =
    trace::kApiDeviceAlloc | trace::kApiDeviceFree | trace::kApiHostAlloc | trace::kApiHostFree |
    trace::kApiPhysical | trace::kApiVaReserve | trace::kApiVaFree | trace::kApiMap | trace::kApiUnmap |
    trace::kApiMemInfo | trace::kApiOomReport | trace::kApiAlgoSearch | trace::kApiPlanFinalize |
    trace::kApiLegacyFind | trace::kApiLegacyGet | trace::kApiHandleCreate | trace::kApiEventTiming |
    trace::kApiCommInit | trace::kApiEntryPoint | trace::kApiBlasHeuristic;
// Calls that begin (or go on with) a plan selection: the thread's next kSelectionBudget calls are
// kept, which covers the event records, synchronizations and executions of a benchmark search.
inline constexpr uint64_t kSelectionApiFlags =
    trace::kApiPlanFinalize | trace::kApiLegacyFind | trace::kApiLegacyGet | trace::kApiAlgoSearch;
inline constexpr uint16_t kSelectionBudget = 256;
inline constexpr uint16_t kFreshPlanBudget = 64;  // after an execution of a fresh plan

template <ApiId kApi, typename Ret, typename... A>
struct Interceptor<kApi, Ret (*)(A...)> {
  static constexpr const ApiStatic& kInfo = api_static(kApi);
  static constexpr ApiId kSig = kInfo.sig;
  using Traits = LibraryTraits<kInfo.library>;
  using Cap = Capture<kSig>;
  static constexpr int kArgs = field_count(Cap::kFields);
  static_assert(kArgs <= trace::kMaxCallArgs);
  static constexpr uint32_t kMaxSize = uint32_t(sizeof(trace::CallRecord) + 8 * (kArgs + 4));
  static constexpr bool kCounted = (kInfo.flags & trace::kApiCounted) != 0;
  static constexpr bool kQuiet = (kInfo.flags & trace::kApiQuiet) != 0;
  static constexpr bool kFaultable = (kInfo.flags & trace::kApiFaultable) != 0;
  static constexpr bool kDeviceAlloc = (kInfo.flags & trace::kApiDeviceAlloc) != 0;
  static constexpr bool kDeviceFree = (kInfo.flags & trace::kApiDeviceFree) != 0;
  static constexpr bool kCudart = kInfo.library == trace::Library::kCudart;
  // What an allocation or free names: an address, or a physical memory handle (cuMemCreate).
  static constexpr int kPtrField =
      field_pos(Cap::kFields, "ptr") >= 0 ? field_pos(Cap::kFields, "ptr") : field_pos(Cap::kFields, "handle");
  static constexpr int kSizeField = field_pos(Cap::kFields, "size");
  // A capture that may write records of its own (a new problem, knob set or algorithm results)
  // runs before its call record is reserved, so that those records come first in the chunk.
  static constexpr bool kWritesRecords = has_field_type(Cap::kFields, 'q') || has_field_type(Cap::kFields, 'k') ||
                                         has_field_type(Cap::kFields, 'r');
  static constexpr bool kKeepClass = (kInfo.flags & kKeptApiFlags) != 0;
  static constexpr bool kOpensSelection = (kInfo.flags & kSelectionApiFlags) != 0;

  // The steps are those of the list at the top of this file.
  static Ret call(A... a) {
    using Fn = Ret (*)(A...);
    auto real = reinterpret_cast<Fn>(real_function(kApi));  // 1. find
    ThreadState& t = t_state;
    if (__builtin_expect(real == nullptr, 0)) return missing(t);
    if constexpr (kCounted) {
      // A kernel launch while a fault plan is loaded is decided out of line first, so that the
      // counted path pays one load and a predicted branch for it.
      if constexpr (kFaultable) {
        if (__builtin_expect(g_faults_on, 0) && !t.launch_decided) return counted_with_faults(t, a...);
      }
      if (count_only(t)) return real(a...);  // 2. count
    }
    if (!enter(t)) return real(a...);  // 3. enter: pass through
    FaultHit hit;
    Ret answer{};
    if constexpr (kFaultable && !kCounted) {  // 4. faults (a counted call's were decided in 2.)
      if (__builtin_expect(g_faults_on, 0) && inject(t, &hit, &answer, a...)) return leave(t, answer);
    }
    if constexpr (Steer<kSig>::kOn) {  // 5. steer
      if (__builtin_expect(g_steer_on, 0) && steer_before(t, &hit, &answer, a...)) return leave(t, answer);
      if constexpr (SteerRewrites<Steer<kSig>>) {
        if (__builtin_expect(g_steer_on, 0) && hit.rule < 0) Steer<kSig>::rewrite(t, a...);
      }
    }
    t.inflight_api = uint16_t(kApi);  // 6. call
    uint64_t start = now_ticks();
    t.inflight_start = start;
    Ret ret = real(a...);
    uint64_t end = now_ticks();
    t.inflight_api = trace::kNoApi;
    ret = final_result(t, ret, a...);  // 7. settle
    write(t, ret, start, end - start, &hit, a...);  // 8. record
    if constexpr (Steer<kSig>::kOn) {
      if (__builtin_expect(g_steer_on, 0)) Steer<kSig>::after(t, ret, a...);  // 9. steer
    }
    return leave(t, ret);
  }

 private:
  // 2. count: true when the call is only counted and forwarded. Off the fast path (a thread not set
  // up, its device unknown) count_slow sets it up; with CUPROBE_LAUNCH_EVENTS=1 the call goes on to
  // be recorded as an event, unless the thread is inside another hooked call.
  [[gnu::always_inline]] static bool count_only(ThreadState& t) {
    constexpr int kSlot = count_slot(kApi);
    if (__builtin_expect(t.mode == kThreadReady && t.counts != nullptr && t.device >= 0, 1)) {
      uint64_t* c = t.counts + kSlot * (trace::kCountDevices + 1);
      __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
      return true;
    }
    if (!g_launch_events || t.mode == kThreadBusy) {
      count_slow(t, kSlot);
      return true;
    }
    return false;
  }

  // 3. enter: false when the call passes straight through. Otherwise the thread is busy (its guard
  // held) until leave().
  [[gnu::always_inline]] static bool enter(ThreadState& t) {
    if (__builtin_expect(t.mode != kThreadReady, 0)) {
      if (t.mode != kThreadUnset || thread_setup(t) != kThreadReady) return false;
    }
    t.mode = kThreadBusy;
    return true;
  }
  [[gnu::always_inline]] static Ret leave(ThreadState& t, Ret ret) {
    t.mode = kThreadReady;
    return ret;
  }

  // 4. faults: true when a rule replaces the call; *answer is then what the caller gets, recorded.
  // When the memory cap let an allocation through, hit->cap_device says where its bytes are held.
  [[gnu::always_inline]] static bool inject(ThreadState& t, FaultHit* hit, Ret* answer, A... a) {
    FaultCtx c;
    c.cap_checked = kDeviceAlloc;
    describe(t, c, a...);
    if (!fault_decide(kApi, kInfo.library, c, hit)) return false;
    fault_delay(*hit);  // delay=: the call waits first
    if (hit->code == 0) {
      alert_fault_injected(kApi, *hit);
      return false;  // DELAY: then it runs as usual, recorded with the rule
    }
    // Replaces the call: nothing runs, nothing is allocated.
    *answer = Ret(hit->code);
    if constexpr (kCudart) t.injected_error = hit->code;
    if constexpr (kDeviceAlloc || (kInfo.flags & trace::kApiHostAlloc) != 0) clear_allocation(a...);
    write(t, *answer, now_ticks(), 0, hit, a...);
    alert_fault_injected(kApi, *hit);
    return true;
  }

  // 4b. faults for a counted call (a kernel launch) while a plan is loaded: decided as any
  // faultable call's, recorded only when a rule replaced it (a DELAY holds it, then it is counted
  // and forwarded as usual).
  [[gnu::noinline]] static Ret counted_with_faults(ThreadState& t, A... a) {
    if (enter(t)) {
      FaultHit hit;
      Ret answer{};
      bool replaced = inject(t, &hit, &answer, a...);
      leave(t, answer);
      if (replaced) return answer;
    }
    t.launch_decided = 1;  // then the launch goes on as any counted call (a launch calls no launch)
    Ret r = call(a...);
    t.launch_decided = 0;
    return r;
  }

  // 5. steer: true when plan pinning answered the call itself (*answer, recorded). A call a rule
  // replaced returned in step 4 already; the check says so where it matters.
  [[gnu::always_inline]] static bool steer_before(ThreadState& t, FaultHit* hit, Ret* answer, A... a) {
    if (hit->rule >= 0) return false;
    Ret r{};
    uint64_t asked = now_ticks();
    if (!Steer<kSig>::before(t, &r, hit, a...)) return false;
    // The call's duration is what the shim's answer took (a failed-fast candidate: next to
    // nothing; an answered heuristics query: building the pinned configuration).
    write(t, r, asked, now_ticks() - asked, hit, a...);
    *answer = r;
    return true;
  }

  // 7. settle: the result and outputs the application gets, before the capture reads them.
  [[gnu::always_inline]] static Ret final_result(ThreadState& t, Ret ret, A... a) {
    if constexpr (kCudart) {
      if (__builtin_expect(t.injected_error != 0, 0)) ret = last_error(t, ret);
      if constexpr (kSig == ApiId::cudaGetLastError || kSig == ApiId::cudaPeekAtLastError) {
        // A corrupted context keeps reporting its error: nothing clears it (sticky faults).
        if (__builtin_expect(__atomic_load_n(&g_sticky_on, __ATOMIC_RELAXED), 0)) {
          if (int32_t s = sticky_error(Traits::device(t))) ret = Ret(s);
        }
      }
    }
    if constexpr ((kInfo.flags & trace::kApiMemInfo) != 0) {
      if (g_cap_on && Traits::ok(ret)) cap_adjust_meminfo(Traits::device(t), a...);
    } else {
      ((void)a, ...);
    }
    return ret;
  }

  // What a fault rule may ask about this call (FaultProbe, above).
  static void describe(ThreadState& t, FaultCtx& c, A... a) {
    if constexpr (FaultProbe<kSig>::kFromCapture) {
      uint64_t fields[kArgs + 1];
      CallWriter w(t, fields);
      Cap::after(w, Traits::kProbe, a...);
      constexpr int kProblem = field_pos(Cap::kFields, "problem");
      constexpr int kEngine = field_pos(Cap::kFields, "engine") >= 0 ? field_pos(Cap::kFields, "engine")
                                                                     : field_pos(Cap::kFields, "algo");
      if constexpr (kSizeField >= 0) c.size = fields[kSizeField];
      if constexpr (kProblem >= 0) {
        c.problem_id = uint32_t(fields[kProblem]);
        c.problem_hash = problem_hash_of(c.problem_id);
      }
      if constexpr (kEngine >= 0) c.engine = int64_t(fields[kEngine]);
      // NCCL: a set-up's size is its argument; a collective's, its communicator's (comm-size=).
      constexpr int kNranks = field_pos(Cap::kFields, "nranks");
      constexpr int kComm = field_pos(Cap::kFields, "comm");
      if constexpr (kNranks >= 0) {
        c.comm_size = int(int64_t(fields[kNranks]));
      } else if constexpr (kComm >= 0) {
        c.comm = fields[kComm];
      }
      c.device = w.device_override() != CallWriter::kNoOverride ? w.device_override() : Traits::device(t);
    } else {
      c.device = Traits::device(t);
      FaultProbe<kSig>::describe(t, c, a...);
    }
  }

  // A failed cudaMalloc leaves *devPtr NULL, a failed cuMemAlloc* *dptr 0, while a failed
  // cuMemCreate leaves its handle alone (seen on an H200, docs/dev/validation.md): an injected
  // failure does the same.
  template <typename First, typename... Rest>
  static void clear_allocation(First first, Rest...) {
    if constexpr (std::is_same_v<First, void**>) {
      if (first != nullptr) *first = nullptr;
    } else if constexpr (std::is_same_v<First, CUdeviceptr*> && (kInfo.flags & trace::kApiPhysical) == 0) {
      if (first != nullptr) *first = 0;
    }
  }
  static void clear_allocation() {}

  // The runtime's last-error state after a call, with an injected error the real runtime does
  // not know about: reported (and, by cudaGetLastError, cleared) as the most recent error; a
  // genuine failure after it replaces it.
  static Ret last_error(ThreadState& t, Ret ret) {
    if constexpr (kSig == ApiId::cudaGetLastError || kSig == ApiId::cudaPeekAtLastError) {
      Ret injected = Ret(t.injected_error);
      if constexpr (kSig == ApiId::cudaGetLastError) t.injected_error = 0;
      return injected;
    } else {
      if (!Traits::ok(ret)) t.injected_error = 0;
      return ret;
    }
  }

  // Which events carry their call stack (stacks.h): failed and injected calls; in alloc mode also
  // device allocations from the size threshold up and the start of a cuDNN plan selection (an
  // operation graph finalized, a legacy algorithm query or search); in all mode every event.
  static bool wants_stack(Ret ret, const FaultHit* fault, const uint64_t* fields) {
    // Candidates plan pinning failed fast are routine: dozens per selection.
    if (fault->rule == trace::kPinFaultRule) return g_stack_mode == kStacksAll;
    if (g_stack_mode == kStacksAll || !Traits::ok(ret) || fault->rule >= 0) return true;
    if (g_stack_mode != kStacksAlloc) return false;
    if constexpr (kDeviceAlloc && kSizeField >= 0) return fields[kSizeField] >= g_stack_min_bytes;
    if constexpr ((kInfo.flags & trace::kApiAlgoSearch) != 0) return true;
    if constexpr (kSig == ApiId::cudnnBackendFinalize) {
      constexpr int kKind = field_pos(Cap::kFields, "kind");
      return int64_t(fields[kKind]) == int64_t(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    }
    return false;
  }

  // Whether the call's record goes to the kept stream (kKeptApiFlags, above), and the thread's
  // open selection: begun by this call, or one more call of it used.
  static bool decide_keep(ThreadState& t, Ret ret, const FaultHit* fault, const CallWriter* w) {
    bool keep = kKeepClass || !Traits::ok(ret) || fault->rule >= 0;
    if constexpr (kQuiet) {
      if (!keep) return false;  // mostly counted, not written: uses none of a selection's budget
    }
    if (w != nullptr) {
      if (w->closes_selection()) t.keep_budget = 0;
      if (w->keep_requested()) {
        keep = true;
        if (t.keep_budget < kFreshPlanBudget) t.keep_budget = kFreshPlanBudget;
      }
    }
    if (!keep && __builtin_expect(t.keep_budget != 0, 0)) {
      keep = true;
      --t.keep_budget;
    }
    if constexpr (kOpensSelection) t.keep_budget = kSelectionBudget;
    return keep;
  }

  // Room for the call record in the stream `keep` says.
  static trace::CallRecord* reserve_record(ThreadState& t, bool keep) {
    char* p = reserve_as(t, keep, kMaxSize);
    // Records are appended to memory no one has written yet: ask for the lines a few records
    // ahead now, so that later records do not wait for them (the chunk has a tail to spare).
    __builtin_prefetch(p + 256, 1, 3);
    return reinterpret_cast<trace::CallRecord*>(p);
  }

  // 8. record: the call's record, in the steps a-f of the list at the top of this file.
  static void write(ThreadState& t, Ret ret, uint64_t start, uint64_t dur, const FaultHit* fault, A... a) {
    uint64_t scratch[kArgs + 4];
    trace::CallRecord* rec = nullptr;
    bool keep = false;
    bool skip = false;  // outside the capture window: counted, not written
    if constexpr (!kWritesRecords) {  // a. keep, then reserve and capture in place
      keep = decide_keep(t, ret, fault, nullptr);
      skip = !keep && outside_window(start);
      if (!skip) rec = reserve_record(t, keep);
    }
    uint64_t* tail = rec ? rec->tail : scratch;
    CallWriter w(t, tail);
    Cap::after(w, ret, a...);
    if constexpr (kWritesRecords) {  // a. capture first (its records precede), then keep and reserve
      keep = decide_keep(t, ret, fault, &w);
      skip = !keep && outside_window(start);
      if (!skip && (rec = reserve_record(t, keep)) != nullptr) {
        memcpy(rec->tail, scratch, sizeof(uint64_t) * size_t(w.count()));
        tail = rec->tail;
      }
    }
    cap_bookkeeping(ret, fault, tail);  // b.
    if constexpr (kQuiet) {  // c.
      if (Traits::ok(ret) && !w.emit_requested()) {
        if (t.chunk != nullptr) {
          uint64_t* c = &t.chunk->quiet_counts[count_slot(kApi)];
          __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
        }
        return;
      }
    }
    Traits::on_event();  // d.
    int device = w.device_override() != CallWriter::kNoOverride ? w.device_override() : Traits::device(t);
    if constexpr ((kInfo.flags & trace::kApiInitsDevice) != 0) {
      if (Traits::ok(ret) && device >= 0) {
        note_device(device);
        if constexpr (kCudart) note_runtime();
      }
    }
    if (__builtin_expect(skip, 0)) note_outside_window(t);
    finish(t, rec, w, ret, start, dur, fault, device, tail, keep);  // e.
    after_allocation(t, ret, fault, device, tail);  // f.
  }

  // 8b. The memory cap sees every allocation's outcome (the bytes it set aside are kept for the
  // pointer, or given back) and every free, whether or not their records are written.
  [[gnu::always_inline]] static void cap_bookkeeping(Ret ret, const FaultHit* fault, const uint64_t* tail) {
    if constexpr (kDeviceAlloc && kPtrField >= 0 && kSizeField >= 0) {
      if (fault->cap_device >= 0) {
        const void* ptr = reinterpret_cast<const void*>(uintptr_t(tail[kPtrField]));
        cap_settle(*fault, tail[kSizeField], Traits::ok(ret), ptr);
      }
    }
    if constexpr (kDeviceFree && kPtrField >= 0) {
      if (g_cap_on && Traits::ok(ret)) cap_note_free(reinterpret_cast<const void*>(uintptr_t(tail[kPtrField])));
    }
    (void)ret, (void)fault, (void)tail;
  }

  // 8f. Injected failures are not the device's: only genuine ones ask for a sample at once.
  [[gnu::always_inline]] static void after_allocation(ThreadState& t, Ret ret, const FaultHit* fault, int device,
                                                      const uint64_t* tail) {
    if constexpr (kDeviceAlloc) {
      bool failed = !Traits::ok(ret) && fault->rule < 0;
      maybe_sample_memory(t, device, failed, kInfo.library == trace::Library::kDriver);
      if constexpr (kSizeField >= 0) {
        if (__builtin_expect(failed, 0)) alert_allocation_failed(kApi, tail[kSizeField], device, int(ret));
      }
    }
    (void)t, (void)ret, (void)fault, (void)device, (void)tail;
  }

  static void finish(ThreadState& t, trace::CallRecord* rec, CallWriter& w, Ret ret, uint64_t start, uint64_t dur,
                     const FaultHit* fault, int device, uint64_t* tail, bool keep) {
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
    if (__builtin_expect(fault->rule >= 0, 0)) {
      tail[n++] = fault_word(*fault);
      flags |= trace::kCallInjected;
    }
    if (__builtin_expect(g_stack_mode != kStacksOff, 1) && wants_stack(ret, fault, tail)) {
      if (uint32_t id = capture_stack()) {
        tail[n++] = id;
        flags |= trace::kCallHasStack;
      }
    }
    uint32_t size = uint32_t(sizeof(trace::CallRecord)) + 8u * uint32_t(n);
    rec->h = trace::RecordHeader{uint8_t(trace::RecordType::kCall), flags, uint16_t(size), uint16_t(kApi),
                                 int16_t(device)};
    rec->ret = int32_t(ret);
    rec->dur_ticks = (flags & trace::kCallLongDuration) ? 0xffffffffu : uint32_t(dur);
    rec->start_ticks = start;
    commit_as(t, keep, size);
  }

  // The real function is not there: answer with the library's error, count it, record it.
  static Ret missing(ThreadState& t) {
    Ret ret = Traits::kMissing;
    count_stat(trace::kStatMissingSymbols);
    if (t.mode == kThreadUnset) thread_setup(t);
    if (t.mode != kThreadReady) return ret;
    t.mode = kThreadBusy;
    if (char* p = reserve_kept(t, sizeof(trace::CallRecord))) {
      auto* rec = reinterpret_cast<trace::CallRecord*>(p);
      rec->h = trace::RecordHeader{uint8_t(trace::RecordType::kCall), 0, uint16_t(sizeof(trace::CallRecord)),
                                   uint16_t(kApi), int16_t(t.device)};
      rec->ret = int32_t(ret);
      rec->dur_ticks = 0;
      rec->start_ticks = now_ticks();
      commit_kept(t, sizeof(trace::CallRecord));
    }
    t.mode = kThreadReady;
    return ret;
  }
};

}  // namespace cuprobe::shim

#define CUPROBE_EXPORT extern "C" __attribute__((visibility("default")))

namespace cuprobe::shim {
// Allocation wrappers remember their return address (ThreadState::caller), so that captures can
// name the module that asked for the memory: PyTorch's allocator, NCCL, cuBLAS, ...
inline constexpr uint32_t kCallerApis = trace::kApiDeviceAlloc | trace::kApiHostAlloc | trace::kApiVaReserve;
inline const void* caller_of(const ThreadState& t) { return t.caller; }
}  // namespace cuprobe::shim

// The body of every generated wrapper.
#define CUPROBE_WRAPPER_BODY(name, sig, args)                                                          \
  {                                                                                                    \
    if constexpr ((::cuprobe::api_static(::cuprobe::ApiId::name).flags & ::cuprobe::shim::kCallerApis) != 0) \
      ::cuprobe::shim::t_state.caller = __builtin_return_address(0);                                   \
    return ::cuprobe::shim::Interceptor<::cuprobe::ApiId::name, decltype(&::sig)>::call args;          \
  }
