// The Perfetto (protobuf) and Chrome (JSON) exports of a job's timeline. Both share one model of
// tracks, built as the walk goes (timeline.h) and written at once through a buffered file, so
// memory stays at what is live (threads, counter tracks, interned names), never the trace:
//
//   process track    per traced process, named as `cuprobe analyze` names it (host, rank, pid)
//   thread track     per thread with calls: executions, synchronizations and failed calls as
//                    slices, injected faults as instants
//   plan selections  per thread, beside its thread track: a search is reported when it ends,
//                    after the candidate runs it timed, and legacy searches of one thread can
//                    overlap (Find for A, Find for B, then A's winner runs), so each lands in the
//                    first lane of its thread free at its start, and slices stay properly nested
//   memory counters  per process, device and owner, and per device in total (bytes live)
//   findings         one job-wide track, an instant per finding
//
// Times are the traced machines' wall clock (Unix epoch ns): the clock a PyTorch profiler
// (Kineto) trace uses, so both line up. In the Perfetto trace a first ClockSnapshot makes
// BUILTIN_CLOCK_REALTIME the trace's primary clock and the sequence's TracePacketDefaults set
// timestamp_clock_id = REALTIME, so trace_processor keeps the values as given (no conversion
// from the default BOOTTIME, which it would drop for want of a snapshot linking the two) and the
// UI can show them as UTC.
//
// Process ids: trace_processor (and Chrome's viewer) merge processes that share a pid, so when a
// pid repeats in a job (two hosts) the later process's pid and tids are shifted by k * 2^22
// (above Linux's largest pid); its label keeps the real pid.
//
// Perfetto field numbers come from Perfetto's protos (protos/perfetto/trace/...), as noted
// beside each constant; tests/export/perfetto_subset.proto restates the ones used.
#include <array>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "cudnn_status.h"
#include "export/export.h"
#include "export/protowire.h"

namespace cuprobe::exporter {

namespace {

// --- output -------------------------------------------------------------------------------------

class OutFile {
 public:
  ~OutFile() {
    if (f_ != nullptr) std::fclose(f_);
  }
  Result<bool> open(const std::string& path) {
    path_ = path;
    f_ = std::fopen(path.c_str(), "wb");
    if (f_ == nullptr) return Error{fmt::format("cannot write {}: {}", path, std::strerror(errno))};
    std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
    return true;
  }
  void write(const char* p, size_t n) {
    if (n != 0 && std::fwrite(p, 1, n, f_) != n && error_ == 0) error_ = errno ? errno : EIO;
    bytes_ += n;
  }
  void write(std::string_view s) { write(s.data(), s.size()); }
  Result<uint64_t> close() {
    if (std::fclose(f_) != 0 && error_ == 0) error_ = errno ? errno : EIO;
    f_ = nullptr;
    if (error_ != 0) return Error{fmt::format("cannot write {}: {}", path_, std::strerror(error_))};
    return bytes_;
  }

 private:
  std::string path_;
  FILE* f_ = nullptr;
  int error_ = 0;
  uint64_t bytes_ = 0;
};

// --- annotations --------------------------------------------------------------------------------

// An event's arguments, flat: kDict/kArray open a nested level that kEnd closes. Names and strings
// point into the item being written (valid for the call).
struct Arg {
  enum Kind : uint8_t { kString, kInt, kUint, kDouble, kBool, kDict, kArray, kEnd };
  Kind kind = kString;
  const char* name = nullptr;  // nullptr inside an array
  std::string_view s;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  bool intern = false;  // a value that repeats (problem, knobs, API): interned in Perfetto
};

class Args {
 public:
  void clear() { v_.clear(); }
  Args& str(const char* name, std::string_view s, bool intern = false) {
    Arg& a = add(Arg::kString, name);
    a.s = s;
    a.intern = intern;
    return *this;
  }
  Args& i64(const char* name, int64_t i) {
    add(Arg::kInt, name).i = i;
    return *this;
  }
  Args& u64(const char* name, uint64_t u) {
    add(Arg::kUint, name).u = u;
    return *this;
  }
  Args& dbl(const char* name, double d) {
    add(Arg::kDouble, name).d = d;
    return *this;
  }
  Args& boolean(const char* name, bool b) {
    add(Arg::kBool, name).u = b ? 1 : 0;
    return *this;
  }
  Args& open(Arg::Kind kind, const char* name) {
    add(kind, name);
    return *this;
  }
  Args& end() { return open(Arg::kEnd, nullptr); }
  // A status, with its cuDNN name where it has one.
  Args& status(int32_t ret, bool cudnn) {
    i64("status", ret);
    if (cudnn && ret != 0) {
      if (const char* n = cudnn_status_name(ret)) str("status_name", n, true);
    }
    return *this;
  }
  const std::vector<Arg>& items() const { return v_; }

 private:
  Arg& add(Arg::Kind kind, const char* name) {
    Arg& a = v_.emplace_back();
    a.kind = kind;
    a.name = name;
    return a;
  }
  std::vector<Arg> v_;
};

// --- the formats --------------------------------------------------------------------------------

struct Track {
  uint64_t uuid = 0;
  int32_t pid = 0;  // Chrome's pid and tid for the track
  int64_t tid = 0;
};

class Emitter {
 public:
  virtual ~Emitter() = default;
  virtual void begin() {}
  virtual void process_track(const Track& t, const ProcessInfo& p, const std::string& label) = 0;
  virtual void thread_track(const Track& t, uint64_t parent, const std::string& name) = 0;
  virtual void named_track(const Track& t, uint64_t parent, const std::string& name) = 0;
  virtual void counter_track(uint64_t uuid, uint64_t parent, const std::string& name) = 0;
  virtual void slice(const Track& t, uint64_t ts, uint64_t end, std::string_view name, const Args& a) = 0;
  virtual void instant(const Track& t, uint64_t ts, std::string_view name, const Args& a, bool global) = 0;
  // Device memory after a change: the owner's and the device's total.
  virtual void memory(const Track& process, uint64_t ts, int device, const std::string& owner, uint64_t owner_uuid,
                      uint64_t owner_bytes, uint64_t total_uuid, uint64_t total_bytes) = 0;
  virtual void finish() {}
  uint64_t items = 0;
};

// Perfetto field numbers (protos/perfetto/trace/...).
namespace pf {
// trace.proto Trace
constexpr uint32_t kTracePacket = 1;
// trace_packet.proto TracePacket
constexpr uint32_t kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12, kSequenceFlags = 13,
                   kClockSnapshot = 6, kTrackDescriptor = 60, kTracePacketDefaults = 59;
constexpr uint64_t kSeqIncrementalStateCleared = 1, kSeqNeedsIncrementalState = 2;
// trace_packet_defaults.proto TracePacketDefaults
constexpr uint32_t kDefaultsTimestampClockId = 58;
// clock_snapshot.proto ClockSnapshot { clocks = 1 { clock_id = 1, timestamp = 2 }, primary_trace_clock = 2 }
constexpr uint32_t kClocks = 1, kClockId = 1, kClockTimestamp = 2, kPrimaryTraceClock = 2;
constexpr uint64_t kBuiltinClockRealtime = 1;
// track_event/track_descriptor.proto TrackDescriptor
constexpr uint32_t kTdUuid = 1, kTdName = 2, kTdProcess = 3, kTdThread = 4, kTdParentUuid = 5, kTdCounter = 8;
// track_event/process_descriptor.proto ProcessDescriptor
constexpr uint32_t kPdPid = 1, kPdCmdline = 2, kPdProcessName = 6;
// track_event/thread_descriptor.proto ThreadDescriptor
constexpr uint32_t kThdPid = 1, kThdTid = 2, kThdName = 5;
// track_event/counter_descriptor.proto CounterDescriptor
constexpr uint32_t kCdUnit = 3;
constexpr uint64_t kUnitSizeBytes = 3;
// track_event/track_event.proto TrackEvent
constexpr uint32_t kTeDebugAnnotations = 4, kTeType = 9, kTeNameIid = 10, kTeTrackUuid = 11,
                   kTeExtraCounterValues = 12, kTeCounterValue = 30, kTeExtraCounterTrackUuids = 31;
constexpr uint64_t kTypeSliceBegin = 1, kTypeSliceEnd = 2, kTypeInstant = 3, kTypeCounter = 4;
// track_event/debug_annotation.proto DebugAnnotation
constexpr uint32_t kDaNameIid = 1, kDaBool = 2, kDaUint = 3, kDaInt = 4, kDaDouble = 5, kDaString = 6,
                   kDaDictEntries = 11, kDaArrayValues = 12, kDaStringIid = 17;
// interned_data/interned_data.proto InternedData; EventName, DebugAnnotationName {iid = 1, name = 2};
// InternedString {iid = 1, str = 2}
constexpr uint32_t kIdEventNames = 2, kIdDebugAnnotationNames = 3, kIdDebugAnnotationStringValues = 29;
constexpr uint32_t kInternIid = 1, kInternName = 2;
}  // namespace pf

// Interned strings of one kind: the ids given so far and those this packet must still declare.
// Past kMaxInterned entries strings go inline, which keeps memory bounded on hostile inputs.
class Interner {
 public:
  static constexpr size_t kMaxInterned = 200000;
  // 0 when the string is not to be interned.
  uint64_t id(std::string_view s) {
    // Most strings come from the same few places (literals, the walk's API and problem names): a
    // small cache by address, confirmed by content, saves hashing them again.
    Cached& c = cache_[(reinterpret_cast<uintptr_t>(s.data()) >> 3) % kCache];
    if (c.data == s.data() && c.entry != nullptr && c.entry->first.size() == s.size() &&
        std::memcmp(c.entry->first.data(), s.data(), s.size()) == 0) {
      return c.entry->second;
    }
    uint64_t found = lookup(s);
    return found;
  }

 private:
  uint64_t lookup(std::string_view s) {
    Cached& c = cache_[(reinterpret_cast<uintptr_t>(s.data()) >> 3) % kCache];
    auto it = ids_.find(s);
    if (it != ids_.end()) {
      c = Cached{s.data(), &*it};
      return it->second;
    }
    if (ids_.size() >= kMaxInterned) return 0;
    uint64_t iid = ids_.size() + 1;
    auto [at, fresh] = ids_.emplace(std::string(s), iid);
    pending_.push_back(&*at);
    c = Cached{s.data(), &*at};
    return iid;
  }

 public:
  bool has_pending() const { return !pending_.empty(); }
  void declare(proto::Writer& w, uint32_t field) {
    for (const auto* p : pending_) {
      size_t m = w.begin(field);
      w.varint(pf::kInternIid, p->second);
      w.bytes(pf::kInternName, p->first);
      w.end(m);
    }
    pending_.clear();
  }

 private:
  // Looked up by string_view without making a std::string (heterogeneous lookup).
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint64_t, Hash, std::equal_to<>> ids_;
  struct Cached {
    const char* data = nullptr;
    const std::pair<const std::string, uint64_t>* entry = nullptr;
  };
  static constexpr size_t kCache = 251;
  std::array<Cached, kCache> cache_{};
  std::vector<const std::pair<const std::string, uint64_t>*> pending_;
};

class PerfettoEmitter : public Emitter {
 public:
  PerfettoEmitter(OutFile& out, uint64_t start_wall_ns) : out_(out), start_wall_ns_(start_wall_ns) {}

  void begin() override {
    // REALTIME as the trace's clock (see the top of this file).
    packet_mark_ = packet_.begin(pf::kTracePacket);
    size_t cs = packet_.begin(pf::kClockSnapshot);
    size_t c = packet_.begin(pf::kClocks);
    packet_.varint(pf::kClockId, pf::kBuiltinClockRealtime);
    packet_.varint(pf::kClockTimestamp, start_wall_ns_);
    packet_.end(c);
    packet_.varint(pf::kPrimaryTraceClock, pf::kBuiltinClockRealtime);
    packet_.end(cs);
    packet_.varint(pf::kSequenceId, kSequence);
    flush();
    // The sequence's first packet: incremental state (interned names, defaults) starts here.
    packet_mark_ = packet_.begin(pf::kTracePacket);
    packet_.varint(pf::kSequenceId, kSequence);
    packet_.varint(pf::kSequenceFlags, pf::kSeqIncrementalStateCleared);
    size_t d = packet_.begin(pf::kTracePacketDefaults);
    packet_.varint(pf::kDefaultsTimestampClockId, pf::kBuiltinClockRealtime);
    packet_.end(d);
    flush();
  }

  void process_track(const Track& t, const ProcessInfo& p, const std::string& label) override {
    start(false, 0);
    size_t td = packet_.begin(pf::kTrackDescriptor);
    packet_.varint(pf::kTdUuid, t.uuid);
    size_t pd = packet_.begin(pf::kTdProcess);
    packet_.int64(pf::kPdPid, t.pid);
    if (!p.command.empty()) packet_.bytes(pf::kPdCmdline, p.command);
    packet_.bytes(pf::kPdProcessName, label);
    packet_.end(pd);
    packet_.end(td);
    flush();
  }

  void thread_track(const Track& t, uint64_t parent, const std::string& name) override {
    start(false, 0);
    size_t td = packet_.begin(pf::kTrackDescriptor);
    packet_.varint(pf::kTdUuid, t.uuid);
    packet_.varint(pf::kTdParentUuid, parent);
    size_t thd = packet_.begin(pf::kTdThread);
    packet_.int64(pf::kThdPid, t.pid);
    packet_.int64(pf::kThdTid, t.tid);
    packet_.bytes(pf::kThdName, name);
    packet_.end(thd);
    packet_.end(td);
    flush();
  }

  void named_track(const Track& t, uint64_t parent, const std::string& name) override {
    descriptor(t.uuid, parent, name, false);
  }
  void counter_track(uint64_t uuid, uint64_t parent, const std::string& name) override {
    descriptor(uuid, parent, name, true);
  }

  void slice(const Track& t, uint64_t ts, uint64_t end, std::string_view name, const Args& a) override {
    start(true, ts);
    size_t te = packet_.begin(pf::kTrackEvent);
    packet_.varint(pf::kTeType, pf::kTypeSliceBegin);
    packet_.varint(pf::kTeTrackUuid, t.uuid);
    event_name(name);
    annotations(a);
    packet_.end(te);
    flush();
    start(true, end);
    te = packet_.begin(pf::kTrackEvent);
    packet_.varint(pf::kTeType, pf::kTypeSliceEnd);
    packet_.varint(pf::kTeTrackUuid, t.uuid);
    packet_.end(te);
    flush();
  }

  void instant(const Track& t, uint64_t ts, std::string_view name, const Args& a, bool) override {
    start(true, ts);
    size_t te = packet_.begin(pf::kTrackEvent);
    packet_.varint(pf::kTeType, pf::kTypeInstant);
    packet_.varint(pf::kTeTrackUuid, t.uuid);
    event_name(name);
    annotations(a);
    packet_.end(te);
    flush();
  }

  void memory(const Track&, uint64_t ts, int, const std::string&, uint64_t owner_uuid, uint64_t owner_bytes,
              uint64_t total_uuid, uint64_t total_bytes) override {
    // One packet sets both counters (the owner's and the device total), through extra_counter_*.
    start(true, ts);
    size_t te = packet_.begin(pf::kTrackEvent);
    packet_.varint(pf::kTeType, pf::kTypeCounter);
    packet_.varint(pf::kTeTrackUuid, owner_uuid);
    packet_.int64(pf::kTeCounterValue, int64_t(owner_bytes));
    packet_.varint(pf::kTeExtraCounterTrackUuids, total_uuid);
    packet_.int64(pf::kTeExtraCounterValues, int64_t(total_bytes));
    packet_.end(te);
    flush();
  }

 private:
  static constexpr uint64_t kSequence = 1;  // trusted_packet_sequence_id: all packets are one sequence

  // Packets are written straight into one buffer as Trace.packet fields, which goes to the file
  // when it holds kFlushBytes.
  void start(bool timed, uint64_t ts) {
    packet_mark_ = packet_.begin(pf::kTracePacket);
    if (timed) packet_.varint(pf::kTimestamp, ts);
    packet_.varint(pf::kSequenceId, kSequence);
    packet_.varint(pf::kSequenceFlags, pf::kSeqNeedsIncrementalState);
  }

  void descriptor(uint64_t uuid, uint64_t parent, const std::string& name, bool counter) {
    start(false, 0);
    size_t td = packet_.begin(pf::kTrackDescriptor);
    packet_.varint(pf::kTdUuid, uuid);
    if (parent != 0) packet_.varint(pf::kTdParentUuid, parent);
    packet_.bytes(pf::kTdName, name);
    if (counter) {
      size_t cd = packet_.begin(pf::kTdCounter);
      packet_.varint(pf::kCdUnit, pf::kUnitSizeBytes);
      packet_.end(cd);
    }
    packet_.end(td);
    flush();
  }

  void event_name(std::string_view name) {
    if (uint64_t iid = event_names_.id(name)) {
      packet_.varint(pf::kTeNameIid, iid);
    } else {
      packet_.bytes(23, name);  // TrackEvent.name
    }
  }

  void annotations(const Args& args) {
    const auto& v = args.items();
    std::vector<size_t>& marks = marks_;
    marks.clear();
    for (const Arg& a : v) {
      if (a.kind == Arg::kEnd) {
        packet_.end(marks.back());  // the array or dict entry
        marks.pop_back();
        continue;
      }
      // Top level: TrackEvent.debug_annotations; nested: dict_entries or array_values of the
      // enclosing annotation.
      uint32_t field = pf::kTeDebugAnnotations;
      if (!marks.empty()) field = a.name != nullptr ? pf::kDaDictEntries : pf::kDaArrayValues;
      size_t m = packet_.begin(field);
      if (a.name != nullptr) {
        if (uint64_t iid = arg_names_.id(a.name)) {
          packet_.varint(pf::kDaNameIid, iid);
        } else {
          packet_.bytes(10, a.name);  // DebugAnnotation.name
        }
      }
      switch (a.kind) {
        case Arg::kString:
          if (uint64_t iid = a.intern ? values_.id(a.s) : 0) {
            packet_.varint(pf::kDaStringIid, iid);
          } else {
            packet_.bytes(pf::kDaString, a.s);
          }
          break;
        case Arg::kInt: packet_.int64(pf::kDaInt, a.i); break;
        case Arg::kUint: packet_.varint(pf::kDaUint, a.u); break;
        case Arg::kDouble: packet_.dbl(pf::kDaDouble, a.d); break;
        case Arg::kBool: packet_.boolean(pf::kDaBool, a.u != 0); break;
        case Arg::kDict:
        case Arg::kArray: marks.push_back(m); continue;  // closed by its kEnd
        case Arg::kEnd: break;
      }
      packet_.end(m);
    }
  }

  // Writes the packet (with the names it interned first) as one Trace.packet.
  void flush() {
    if (event_names_.has_pending() || arg_names_.has_pending() || values_.has_pending()) {
      size_t id = packet_.begin(pf::kInternedData);
      event_names_.declare(packet_, pf::kIdEventNames);
      arg_names_.declare(packet_, pf::kIdDebugAnnotationNames);
      values_.declare(packet_, pf::kIdDebugAnnotationStringValues);
      packet_.end(id);
    }
    packet_.end(packet_mark_);
    items++;
    if (packet_.size() >= kFlushBytes) {
      out_.write(packet_.data());
      packet_.clear();
    }
  }

 public:
  void finish() override {
    out_.write(packet_.data());
    packet_.clear();
  }

 private:
  static constexpr size_t kFlushBytes = 1 << 20;
  size_t packet_mark_ = 0;

  OutFile& out_;
  uint64_t start_wall_ns_;
  proto::Writer packet_;
  Interner event_names_, arg_names_, values_;
  std::vector<size_t> marks_;
};

// Chrome's JSON trace event format: {"traceEvents":[...]} with ts in microseconds.
class ChromeEmitter : public Emitter {
 public:
  explicit ChromeEmitter(OutFile& out) : out_(out) {}

  void begin() override { out_.write("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"); }
  void finish() override { out_.write("\n]}\n"); }

  void process_track(const Track& t, const ProcessInfo&, const std::string& label) override {
    line_.clear();
    fmt::format_to(std::back_inserter(line_), "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":", t.pid);
    quote(label);
    line_ += "}}";
    emit();
  }
  void thread_track(const Track& t, uint64_t, const std::string& name) override { thread_name(t, name); }
  void named_track(const Track& t, uint64_t, const std::string& name) override {
    if (t.pid != 0 || t.tid != 0) thread_name(t, name);
  }
  void counter_track(uint64_t, uint64_t, const std::string&) override {}

  void slice(const Track& t, uint64_t ts, uint64_t end, std::string_view name, const Args& a) override {
    head("X", t, ts, name);
    line_ += ",\"dur\":";
    micros(end - ts, true);
    args(a);
    line_ += '}';
    emit();
  }
  void instant(const Track& t, uint64_t ts, std::string_view name, const Args& a, bool global) override {
    head("i", t, ts, name);
    line_ += global ? ",\"s\":\"g\"" : ",\"s\":\"t\"";
    args(a);
    line_ += '}';
    emit();
  }
  void memory(const Track& process, uint64_t ts, int device, const std::string& owner, uint64_t, uint64_t owner_bytes,
              uint64_t, uint64_t total_bytes) override {
    // One counter per device; each owner and the total are its series.
    name_.clear();
    fmt::format_to(std::back_inserter(name_), "cuda:{} memory (bytes)", device);
    head("C", Track{0, process.pid, 0}, ts, name_);
    line_ += ",\"args\":{";
    quote(owner);
    fmt::format_to(std::back_inserter(line_), ":{},\"total\":{}}}}}", owner_bytes, total_bytes);
    emit();
  }

 private:
  void thread_name(const Track& t, const std::string& name) {
    line_.clear();
    fmt::format_to(std::back_inserter(line_), "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":",
                   t.pid, t.tid);
    quote(name);
    line_ += "}}";
    emit();
  }
  void head(const char* ph, const Track& t, uint64_t ts, std::string_view name) {
    line_.clear();
    fmt::format_to(std::back_inserter(line_), "{{\"ph\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":", ph, t.pid, t.tid);
    micros(ts, false);
    line_ += ",\"name\":";
    quote(name);
  }
  // Nanoseconds as microseconds, written exactly (a double would round Unix-epoch times).
  void micros(uint64_t ns, bool short_form) {
    uint64_t frac = ns % 1000;
    if (frac == 0 && short_form) {
      fmt::format_to(std::back_inserter(line_), "{}", ns / 1000);
    } else {
      fmt::format_to(std::back_inserter(line_), "{}.{:03d}", ns / 1000, frac);
    }
  }
  void args(const Args& a) {
    const auto& v = a.items();
    if (v.empty()) return;
    line_ += ",\"args\":{";
    std::vector<bool>& first = first_;
    first.assign(1, true);
    bracket_.clear();
    for (const Arg& x : v) {
      if (x.kind == Arg::kEnd) {
        line_ += bracket_.back() ? ']' : '}';
        first.pop_back();
        bracket_.pop_back();
        continue;
      }
      if (!first.back()) line_ += ',';
      first.back() = false;
      if (x.name != nullptr) {
        quote(x.name);
        line_ += ':';
      }
      switch (x.kind) {
        case Arg::kString: quote(x.s); break;
        case Arg::kInt: fmt::format_to(std::back_inserter(line_), "{}", x.i); break;
        case Arg::kUint: fmt::format_to(std::back_inserter(line_), "{}", x.u); break;
        case Arg::kDouble:
          if (x.d != x.d || x.d == std::numeric_limits<double>::infinity() || -x.d == std::numeric_limits<double>::infinity()) {
            line_ += "null";
          } else {
            fmt::format_to(std::back_inserter(line_), "{}", x.d);
          }
          break;
        case Arg::kBool: line_ += x.u ? "true" : "false"; break;
        case Arg::kDict:
        case Arg::kArray:
          line_ += x.kind == Arg::kDict ? '{' : '[';
          first.push_back(true);
          bracket_.push_back(x.kind == Arg::kArray);
          break;
        case Arg::kEnd: break;
      }
    }
    line_ += '}';
  }
  // A JSON string: control characters escaped, invalid UTF-8 replaced by U+FFFD (JSON must be UTF-8).
  void quote(std::string_view s) {
    line_ += '"';
    size_t i = 0;
    while (i < s.size()) {
      auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x80) {
        switch (c) {
          case '"': line_ += "\\\""; break;
          case '\\': line_ += "\\\\"; break;
          case '\n': line_ += "\\n"; break;
          case '\r': line_ += "\\r"; break;
          case '\t': line_ += "\\t"; break;
          default:
            if (c < 0x20 || c == 0x7f) {
              fmt::format_to(std::back_inserter(line_), "\\u{:04x}", unsigned(c));
            } else {
              line_ += char(c);
            }
        }
        i++;
        continue;
      }
      size_t n = utf8_length(s, i);
      if (n == 0) {
        line_ += "\xEF\xBF\xBD";
        i++;
      } else {
        line_.append(s.data() + i, n);
        i += n;
      }
    }
    line_ += '"';
  }
  // Length of the well-formed UTF-8 sequence at s[i], 0 when it is not one.
  static size_t utf8_length(std::string_view s, size_t i) {
    auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    unsigned char c = b(0);
    size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (size_t k = 1; k < n; k++) {
      if ((b(k) & 0xC0) != 0x80) return 0;
    }
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) > 0x9F) return 0;   // surrogates
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) > 0x8F) return 0;   // above U+10FFFF
    return n;
  }
  void emit() {
    if (items++ != 0) out_.write(",\n");
    out_.write(line_);
  }

  OutFile& out_;
  std::string line_, name_;
  std::vector<bool> first_, bracket_;
};

// --- the track model ----------------------------------------------------------------------------

class TimelineWriter : public TimelineSink {
 public:
  TimelineWriter(Emitter& out, const ExportJob& job) : out_(out), job_(job) {
    findings_ = Track{next_uuid_++, 0, 0};
  }

  void begin_process(const ProcessInfo& p) override {
    uint32_t k = pid_uses_[p.pid]++;
    offset_ = int64_t(k) << 22;
    process_ = Track{next_uuid_++, int32_t(int64_t(p.pid) + offset_), 0};
    out_.process_track(process_, p, label(p));
    threads_.clear();
    owners_.clear();
    totals_.clear();
    info_ = &p;
    stats_.processes++;
  }

  void end_process(const ProcessInfo& p) override {
    stats_.events += p.events;
    if (p.events != 0) first_wall_ = std::min(first_wall_, p.wall_ns(p.first_ns));
    info_ = nullptr;
  }

  void search(const reader::SearchRecord& r) override {
    Thread& t = thread(r.tid);
    uint64_t ts = wall(r.start_ns), end = std::max(ts, wall(r.end_ns));
    size_t lane = 0;
    while (lane < t.lanes.size() && ts < t.lane_end[lane]) lane++;
    if (lane == t.lanes.size()) {
      Track l{next_uuid_++, process_.pid, (int64_t(lane + 1) << 32) | int64_t(r.tid)};
      name_.clear();
      fmt::format_to(std::back_inserter(name_), "tid {} plan selections", r.tid);
      if (lane != 0) fmt::format_to(std::back_inserter(name_), " ({})", lane + 1);
      out_.named_track(l, process_.uuid, name_);
      t.lanes.push_back(l);
      t.lane_end.push_back(0);
    }
    t.lane_end[lane] = end;
    const bool legacy = !r.backend();
    args_.clear();
    args_.str("problem", r.problem, true).str("mode", reader::name_of(r.mode), true).str("api", r.function, true);
    args_.i64("device", r.device).boolean("complete", r.complete);
    args_.u64("candidate_count", r.candidates.size()).i64("plans_rejected", r.plans_rejected);
    if (r.search_workspace != 0) args_.u64("search_workspace", r.search_workspace);
    if (r.probe_bytes != 0) args_.u64("probe_bytes", r.probe_bytes);
    if (r.was_steered()) args_.str("steered", reader::name_of(r.steered), true);
    if (r.winner >= 0 && size_t(r.winner) < r.candidates.size()) {
      const auto& w = r.candidates[size_t(r.winner)];
      args_.i64(legacy ? "winner_algorithm" : "winner_engine", w.engine);
      if (!w.knobs.empty()) args_.str("winner_knobs", w.knobs, true);
      if (w.time_ms >= 0) args_.dbl("winner_time_ms", w.time_ms);
      args_.u64("winner_workspace", w.workspace);
    }
    // An empty array has no encoding of its own in a DebugAnnotation: none is written.
    if (!r.candidates.empty()) args_.open(Arg::kArray, "candidates");
    for (const auto& c : r.candidates) {
      args_.open(Arg::kDict, nullptr);
      args_.i64(legacy ? "algorithm" : "engine", c.engine);
      if (!c.knobs.empty()) args_.str("knobs", c.knobs, true);
      if (c.time_ms >= 0) args_.dbl("time_ms", c.time_ms);
      args_.u64("workspace", c.workspace).i64("build_status", c.build_status).i64("exec_status", c.exec_status);
      args_.i64("executions", c.executions);
      if (c.injected) args_.boolean("injected", true);
      args_.end();
    }
    if (!r.candidates.empty()) args_.end();
    out_.slice(t.lanes[lane], ts, end, r.benchmark() ? "benchmark search" : "heuristic selection", args_);
  }

  void execution(const ExecutionItem& x) override {
    // Slice names repeat (a job runs a few engines): made once each.
    auto [it, fresh] = execution_names_.try_emplace(std::make_tuple(x.candidate, x.backend, x.engine));
    if (fresh) {
      it->second = fmt::format("{}{} {}", x.candidate ? "candidate " : "", x.backend ? "engine" : "algorithm", x.engine);
    }
    const std::string& name = it->second;
    args_.clear();
    args_.i64(x.backend ? "engine" : "algorithm", x.engine);
    if (!x.knobs->empty()) args_.str("knobs", *x.knobs, true);
    args_.u64("workspace", x.workspace).str("problem", *x.problem, true);
    args_.i64("device", x.device).boolean("candidate", x.candidate).status(x.ret, true);
    thread_slice(x.tid, x.ts_ns, x.dur_ns, name);
  }

  void sync(const SyncItem& s) override {
    args_.clear();
    args_.str("api", *s.api, true).i64("device", s.device).status(s.ret, false);
    thread_slice(s.tid, s.ts_ns, s.dur_ns, *s.api);
  }

  void failure(const FailureItem& f) override {
    name_.assign(*f.api).append(" failed");
    args_.clear();
    args_.str("api", *f.api, true).str("library", f.library, true);
    args_.status(f.ret, std::strcmp(f.library, "cudnn") == 0).i64("device", f.device);
    if (f.injected) args_.boolean("injected", true);
    thread_slice(f.tid, f.ts_ns, f.dur_ns, name_);
  }

  void fault(const FaultItem& f) override {
    name_.assign("fault ").append(*f.rule);
    args_.clear();
    args_.str("rule", *f.rule, true).str("api", *f.api, true).i64("status", f.ret).u64("match", f.k);
    if (const char* n = f.ret != 0 ? cudnn_status_name(f.ret) : nullptr) args_.str("status_name", n, true);
    out_.instant(thread(f.tid).track, wall(f.ts_ns), name_, args_, false);
  }

  void memory(const MemorySample& m) override {
    auto [ot, fresh] = owners_.try_emplace(OwnerKey{m.device, m.owner}, 0);
    if (fresh) {
      ot->second = next_uuid_++;
      name_.clear();
      fmt::format_to(std::back_inserter(name_), "cuda:{} · {}", m.device, *m.owner);
      out_.counter_track(ot->second, process_.uuid, name_);
    }
    auto [tt, tfresh] = totals_.try_emplace(m.device, 0);
    if (tfresh) {
      tt->second = next_uuid_++;
      name_.clear();
      fmt::format_to(std::back_inserter(name_), "cuda:{} · total", m.device);
      out_.counter_track(tt->second, process_.uuid, name_);
    }
    out_.memory(process_, wall(m.ts_ns), m.device, *m.owner, ot->second, m.owner_bytes, tt->second, m.total_bytes);
  }

  // The findings, after the walk (a finding without a time sits at the job's first call).
  void findings() {
    if (job_.report.findings.empty()) return;
    out_.named_track(findings_, 0, "cuprobe findings");
    uint64_t job_start = first_wall_ == UINT64_MAX ? 0 : first_wall_;
    for (const auto& f : job_.report.findings) {
      args_.clear();
      args_.str("rule", f.rule).str("severity", analysis::severity_name(f.severity)).str("title", f.title);
      args_.str("message", f.message).str("fix", f.fix);
      if (f.impact_s > 0) args_.dbl("impact_s", f.impact_s);
      if (!f.pids.empty()) {
        args_.open(Arg::kArray, "pids");
        for (uint32_t pid : f.pids) args_.u64(nullptr, pid);
        args_.end();
      }
      if (!f.problems.empty()) {
        args_.open(Arg::kArray, "problems");
        for (const auto& p : f.problems) args_.str(nullptr, p);
        args_.end();
      }
      out_.instant(findings_, f.at_wall_ns != 0 ? f.at_wall_ns : job_start, f.title, args_, true);
    }
  }

  ExportStats& stats() { return stats_; }

 private:
  struct Thread {
    Track track;
    uint64_t last_end = 0;
    std::vector<Track> lanes;
    std::vector<uint64_t> lane_end;
  };
  struct OwnerKey {
    int device;
    const std::string* owner;
    bool operator==(const OwnerKey& o) const { return device == o.device && owner == o.owner; }
  };
  struct OwnerHash {
    size_t operator()(const OwnerKey& k) const { return std::hash<const void*>()(k.owner) ^ size_t(k.device); }
  };

  // The analysis's name of the process (what `cuprobe analyze` and the report call it), else the
  // timeline's.
  const std::string& label(const ProcessInfo& p) const {
    const analysis::ProcessTimes* t = times_of(job_, p);
    return t != nullptr && !t->label.empty() ? t->label : p.label;
  }

  uint64_t wall(uint64_t mono_ns) const { return info_ != nullptr ? info_->wall_ns(mono_ns) : mono_ns; }

  Thread& thread(uint32_t tid) {
    auto [it, fresh] = threads_.try_emplace(tid);
    if (fresh) {
      it->second.track = Track{next_uuid_++, process_.pid, int64_t(tid) + offset_};
      std::string name = info_ != nullptr && tid == info_->pid ? fmt::format("main thread ({})", tid)
                                                                : fmt::format("thread {}", tid);
      out_.thread_track(it->second.track, process_.uuid, name);
    }
    return it->second;
  }

  // A slice on the thread's own track. A thread's calls do not overlap, but clocks and durations
  // in a damaged or hand-written trace may; a slice that would start inside the previous one
  // starts at its end instead, which keeps the track properly nested for every viewer.
  void thread_slice(uint32_t tid, uint64_t ts_ns, uint64_t dur_ns, std::string_view name) {
    Thread& t = thread(tid);
    uint64_t ts = wall(ts_ns), end = ts + dur_ns;
    if (ts < t.last_end) ts = t.last_end;
    end = std::max(end, ts);
    t.last_end = end;
    out_.slice(t.track, ts, end, name, args_);
  }

  Emitter& out_;
  const ExportJob& job_;
  ExportStats stats_;
  uint64_t next_uuid_ = 1;
  Track findings_, process_;
  int64_t offset_ = 0;
  const ProcessInfo* info_ = nullptr;
  std::unordered_map<uint32_t, uint32_t> pid_uses_;
  std::unordered_map<uint32_t, Thread> threads_;
  std::unordered_map<OwnerKey, uint64_t, OwnerHash> owners_;
  std::unordered_map<int, uint64_t> totals_;
  uint64_t first_wall_ = UINT64_MAX;
  Args args_;
  std::string name_;
  std::map<std::tuple<bool, bool, int64_t>, std::string> execution_names_;
};

Result<ExportStats> run_export(const ExportJob& job, Emitter& out, OutFile& file) {
  out.begin();
  TimelineWriter writer(out, job);
  auto walked = walk_job(job.paths, writer, job.walk);
  if (!walked) return walked.error();
  writer.findings();
  out.finish();
  auto bytes = file.close();
  if (!bytes) return bytes.error();
  ExportStats stats = writer.stats();
  stats.items = out.items;
  stats.bytes = *bytes;
  return stats;
}

uint64_t job_start_wall(const ExportJob& job) {
  uint64_t start = 0;
  for (const auto& p : job.report.processes) {
    if (p.job_start_wall_ns != 0 && (start == 0 || p.job_start_wall_ns < start)) start = p.job_start_wall_ns;
  }
  return start;
}

}  // namespace

Result<ExportStats> export_perfetto(const ExportJob& job, const std::string& out_path) {
  OutFile file;
  if (auto ok = file.open(out_path); !ok) return ok.error();
  PerfettoEmitter out(file, job_start_wall(job));
  return run_export(job, out, file);
}

Result<ExportStats> export_chrome(const ExportJob& job, const std::string& out_path) {
  OutFile file;
  if (auto ok = file.open(out_path); !ok) return ok.error();
  ChromeEmitter out(file);
  auto stats = run_export(job, out, file);
  // Browsers (chrome://tracing, the Perfetto UI's JSON importer) struggle past a few hundred MB.
  constexpr uint64_t kLargeJson = 200ull << 20;
  if (stats && stats->bytes > kLargeJson) {
    stats->aggregated.push_back(fmt::format("the JSON is {} MB, more than a browser opens comfortably; "
                                            "use --format perfetto for a run this size",
                                            stats->bytes >> 20));
  }
  return stats;
}

}  // namespace cuprobe::exporter
