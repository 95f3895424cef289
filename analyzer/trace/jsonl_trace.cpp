// Traces read back from the JSON Lines `cuprobe dump` writes, so that traces can be filtered,
// anonymized or written by hand and analyzed again (`cuprobe dump X | cuprobe analyze -` gives
// the findings of `cuprobe analyze X`). The lines of one process may come from several dumps'
// worth of input; calls are grouped by their pid.
//
// Unlike the binary reader this one holds every call in memory. An "api" line describes an
// API (flags, fields); without one, flags come from cuprobe's own hook tables and fields from
// the keys the calls carry, so hand-written traces need no "api" lines.
//
// The input is not trusted (docs/trace-format.md, "JSON Lines input"): lines are read in
// bounded pieces, parsed with limits on nesting and size, and every value is checked for its
// type and range before anything is kept. A line that cannot be used is skipped and counted;
// the first few are named one by one (line number, what is wrong, a short excerpt), the rest
// summed up, as diagnostics of the first process of the input. Memory grows with what is kept,
// a bounded multiple of the input's size; nothing is quadratic in the input.
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cuprobe/api_table.h"
#include "trace/reader.h"
#include "trace/zstd_io.h"

namespace cuprobe::reader {

namespace {

using nlohmann::json;

// Limits on JSON Lines input (docs/trace-format.md, "JSON Lines input").
constexpr size_t kMaxLineBytes = size_t(16) << 20;  // longer lines are skipped
constexpr int kMaxDepth = 64;                       // nesting of arrays and objects in a line
constexpr size_t kMaxValuesPerLine = size_t(1) << 20;
constexpr size_t kMaxFieldsPerApi = 64;  // argument fields of one API (the binary format holds 16)
constexpr size_t kMaxApis = 4096;        // APIs of one process
constexpr size_t kMaxProcesses = 65536;  // processes in one input
constexpr size_t kMaxModules = 16384;    // mapped modules of one process (the shim writes at most 4096)
constexpr size_t kExcerptBytes = 80;     // of a value or line quoted in a message
constexpr size_t kNamedLines = 10;       // damaged lines named one by one; the rest are counted
constexpr size_t kReadBlock = size_t(1) << 20;

static_assert(kMaxFieldsPerApi <= 255, "argument indexes are stored in a byte");
static_assert(kMaxApis <= 65536, "API ids are 16 bits");

// At most `max` bytes of `s`, printable ASCII as is and every other byte as \xNN (so that a
// message is valid UTF-8 whatever the input held), "…" and the full length when cut.
std::string excerpt(std::string_view s, size_t max = kExcerptBytes) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(char(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (s.size() > max) out += fmt::format("… ({} bytes)", s.size());
  return out;
}

// A value as a message shows it: scalars as JSON (cut short), containers by their kind.
std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::null: return "null";
    case json::value_t::string: return "\"" + excerpt(v.get_ref<const std::string&>()) + "\"";
    case json::value_t::number_float: {
      double d = v.get<double>();
      return std::isfinite(d) ? fmt::format("{}", d) : "a float out of range";
    }
    default: return excerpt(v.dump());
  }
}

// A value of the wrong type or out of range: the line it is on is skipped.
struct BadValue {
  std::string what;
};

[[noreturn]] void bad(std::string_view key, const json& v, std::string_view want) {
  throw BadValue{fmt::format("\"{}\": {} is not {}", excerpt(key, 40), describe(v), want)};
}

uint64_t as_u64(const json& v, std::string_view key, std::string_view want = "an unsigned 64-bit integer") {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() == 0) return 0;  // -0
  bad(key, v, want);
}

int64_t as_i64(const json& v, std::string_view key, int64_t lo, int64_t hi, std::string_view want) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (hi >= 0 && u <= uint64_t(hi)) return int64_t(u);
  } else if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i >= lo && i <= hi) return i;
  }
  bad(key, v, want);
}

const json* find(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

uint64_t u64(const json& j, const char* key, uint64_t def = 0) {
  const json* v = find(j, key);
  return v ? as_u64(*v, key) : def;
}

uint32_t u32(const json& j, const char* key, uint32_t def = 0) {
  const json* v = find(j, key);
  if (!v) return def;
  uint64_t x = as_u64(*v, key, "an unsigned 32-bit integer");
  if (x > UINT32_MAX) bad(key, *v, "an unsigned 32-bit integer");
  return uint32_t(x);
}

int64_t i64(const json& j, const char* key, int64_t def = 0) {
  const json* v = find(j, key);
  return v ? as_i64(*v, key, INT64_MIN, INT64_MAX, "a 64-bit integer") : def;
}

int i32(const json& j, const char* key, int def, int lo = INT32_MIN, int hi = INT32_MAX) {
  const json* v = find(j, key);
  if (!v) return def;
  return int(as_i64(*v, key, lo, hi, lo == -1 ? fmt::format("an integer from -1 to {}", hi) : "a 32-bit integer"));
}

std::string str(const json& j, const char* key, const char* def = "") {
  const json* v = find(j, key);
  if (!v) return def;
  if (!v->is_string()) bad(key, *v, "a string");
  return v->get<std::string>();
}

bool boolean(const json& j, const char* key, bool def = false) {
  const json* v = find(j, key);
  if (!v) return def;
  if (!v->is_boolean()) bad(key, *v, "true or false");
  return v->get<bool>();
}

double dbl(const json& j, const char* key, double def) {
  const json* v = find(j, key);
  if (!v) return def;
  if (!v->is_number()) bad(key, *v, "a number");
  return v->get<double>();
}

// An array (empty when absent); `what` names its elements' kind in messages.
const json& array(const json& j, const char* key) {
  static const json kEmpty = json::array();
  const json* v = find(j, key);
  if (!v) return kEmpty;
  if (!v->is_array()) bad(key, *v, "an array");
  return *v;
}

const json& object(const json& j, const char* key) {
  static const json kEmpty = json::object();
  const json* v = find(j, key);
  if (!v) return kEmpty;
  if (!v->is_object()) bad(key, *v, "an object");
  return *v;
}

// "0x..." (or plain hex digits), 1 to 16 of them; nothing else.
bool parse_hex(std::string_view s, uint64_t* out) {
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 16) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return ec == std::errc() && end == s.data() + s.size();
}

// An address or handle: a "0x..." string as dump writes it, or an unsigned number.
uint64_t hex(const json& j, const char* key, uint64_t def = 0) {
  const json* v = find(j, key);
  if (!v) return def;
  uint64_t x = 0;
  if (v->is_string() && parse_hex(v->get_ref<const std::string&>(), &x)) return x;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  bad(key, *v, "a hex string (\"0x...\", at most 16 digits)");
}

const std::set<std::string, std::less<>>& common_keys() {
  static const std::set<std::string, std::less<>> keys = {"type",   "api",      "ret",     "ts_ns", "dur_ns",
                                                          "pid",    "tid",      "device",  "stream", "injected",
                                                          "fault_k", "stack",   "sample",  "pinned"};
  return keys;
}

uint64_t builtin_flags(const std::string& name) {
  const ApiStatic* a = api_by_name(name.c_str());
  return a ? a->flags : 0;
}

// The role flags came with trace format 2; a dump made before names its APIs with flags
// without them, and the table supplies them.
constexpr uint64_t kRoleFlags = trace::kApiPlanFinalize | trace::kApiPlanExecute | trace::kApiLegacyFind |
                                trace::kApiLegacyGet | trace::kApiLegacyConvExec | trace::kApiHandleCreate |
                                trace::kApiEventTiming | trace::kApiLaterRoleFlags |
                                trace::kApiBlasHeuristic | trace::kApiBlasMatmul;

trace::Library builtin_library(const std::string& name) {
  const ApiStatic* a = api_by_name(name.c_str());
  return a ? a->library : trace::Library::kCudart;
}

trace::FileState state_of(const std::string& s) {
  trace::FileState state = trace::FileState::kRecording;  // a name this reader does not know
  value_in(reader::kFileStateNames, s, &reader::FileStateName::name, &state);
  return state;
}

bool field_type_ok(char t) { return t != 0 && std::strchr("puixfsqkr", t) != nullptr; }

// Dumps made before trace format 2 wrote problems, knob sets and algorithm results as strings
// (fields problem:s, knobs:s, results:s); they are read as the typed fields they became.
char upgraded_type(std::string_view name, char type) {
  if (type != 's') return type;
  if (name == "problem") return 'q';
  if (name == "knobs") return 'k';
  if (name == "results") return 'r';
  return type;
}

// The hash a format-1 shim gave a problem: FNV-1a over its text.
uint64_t text_hash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Algorithm results as format-1 dumps wrote them: "algo:status:time_ms:memory:determinism:math;..."
// (only such dumps; format 2 writes them as JSON objects).
std::vector<trace::AlgoResult> format1_results(const std::string& s) {
  std::vector<trace::AlgoResult> out;
  size_t start = 0;
  while (start < s.size() && out.size() < size_t(trace::kMaxAlgoResults)) {
    size_t end = s.find(';', start);
    if (end == std::string::npos) end = s.size();
    int algo = -1, status = 0, det = 0, math = 0;
    double time = -1;
    unsigned long long memory = 0;
    std::string item = s.substr(start, end - start);
    if (std::sscanf(item.c_str(), "%d:%d:%lf:%llu:%d:%d", &algo, &status, &time, &memory, &det, &math) == 6) {
      out.push_back(trace::AlgoResult{algo, status, float(time), det, math, 0, uint64_t(memory)});
    }
    start = end + 1;
  }
  return out;
}

// Damage found in one input, for its diagnostics: the first kNamedLines lines by number and
// what was wrong, then counts per kind. Kinds are fixed words, never taken from the input.
class Damage {
 public:
  // A line that was skipped.
  void skip(size_t line, const char* kind, const std::string& what) {
    add(skipped_, line, kind, what, "skipped");
    ++skipped_total_;
  }
  // A line that was kept without some of what it held.
  void partial(size_t line, const char* kind, const std::string& what) {
    add(partial_, line, kind, what, "kept in part");
    ++partial_total_;
  }
  // A line of a type this reader does not know (skipped, and not damage).
  void unknown_type(size_t line, const std::string& type) {
    if (unknown_types_++ == 0) first_unknown_ = fmt::format("line {}, \"{}\"", line, excerpt(type, 40));
  }
  size_t damaged() const { return skipped_total_ + partial_total_; }

  std::vector<std::string> notes(size_t lines) const {
    std::vector<std::string> out = named_;
    auto sum = [](const std::map<std::string, Kind>& kinds) {
      std::string s;
      for (const auto& [kind, k] : kinds) {
        s += fmt::format("{}{} {} (first at line {})", s.empty() ? "" : ", ", k.count, kind, k.first);
      }
      return s;
    };
    if (skipped_total_ > 0) {
      out.push_back(fmt::format("{} of {} lines skipped: {}", skipped_total_, lines, sum(skipped_)));
    }
    if (partial_total_ > 0) {
      out.push_back(fmt::format("{} of {} lines kept in part: {}", partial_total_, lines, sum(partial_)));
    }
    if (unknown_types_ > 0) {
      out.push_back(fmt::format("{} {} of a type this reader does not know skipped (first: {})", unknown_types_,
                                unknown_types_ == 1 ? "line" : "lines", first_unknown_));
    }
    return out;
  }

 private:
  struct Kind {
    size_t count = 0;
    size_t first = 0;
  };
  void add(std::map<std::string, Kind>& kinds, size_t line, const char* kind, const std::string& what,
           const char* outcome) {
    Kind& k = kinds[kind];
    if (k.count++ == 0) k.first = line;
    if (named_.size() < kNamedLines) named_.push_back(fmt::format("line {}: {} ({})", line, what, outcome));
  }

  std::map<std::string, Kind> skipped_;
  std::map<std::string, Kind> partial_;
  std::vector<std::string> named_;
  size_t skipped_total_ = 0;
  size_t partial_total_ = 0;
  size_t unknown_types_ = 0;
  std::string first_unknown_;
};

// Builds the DOM of one line through nlohmann's SAX interface, refusing lines nested deeper
// than kMaxDepth or holding more than kMaxValuesPerLine values (a few bytes of input must not
// become megabytes of nodes). Parse errors are kept as short messages, never thrown.
class BoundedDom {
 public:
  explicit BoundedDom(json& root) : root_(root) {}

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(json::number_integer_t v) { return value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value(v); }
  bool number_float(json::number_float_t v, const std::string&) { return value(v); }
  bool string(std::string& v) { return value(std::move(v)); }
  bool binary(json::binary_t&) { return fail("binary", "binary values are not JSON"); }
  bool start_object(size_t) { return open(json::value_t::object); }
  bool end_object() { return close(); }
  bool start_array(size_t) { return open(json::value_t::array); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    slot_ = &(*stack_.back())[std::move(k)];
    return true;
  }
  template <typename Exception>
  bool parse_error(size_t, const std::string&, const Exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
    std::string_view what = e.what();
    if (size_t p = what.find("] "); p != std::string_view::npos) what.remove_prefix(p + 2);
    if (what.rfind("parse error at line 1, ", 0) == 0) what.remove_prefix(23);
    return fail("not JSON", "not JSON (" + excerpt(what, 120) + ")");
  }

  const char* kind() const { return kind_; }
  const std::string& error() const { return error_; }

 private:
  bool fail(const char* kind, std::string what) {
    kind_ = kind;
    error_ = std::move(what);
    return false;
  }
  bool count() {
    if (++values_ <= kMaxValuesPerLine) return true;
    return fail("too many values", fmt::format("more than {} values in one line", kMaxValuesPerLine));
  }
  template <typename V>
  bool value(V&& v) {
    if (!count()) return false;
    place(json(std::forward<V>(v)));
    return true;
  }
  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json* top = stack_.back();
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    *slot_ = std::move(v);
    return slot_;
  }
  bool open(json::value_t t) {
    if (!count()) return false;
    if (stack_.size() >= size_t(kMaxDepth)) {
      return fail("nested too deeply", fmt::format("arrays and objects nested deeper than {}", kMaxDepth));
    }
    stack_.push_back(place(json(t)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  json& root_;
  std::vector<json*> stack_;  // the open arrays and objects; the innermost last
  json* slot_ = nullptr;      // the value of the key just read
  size_t values_ = 0;
  const char* kind_ = "not JSON";
  std::string error_;
};

// Lines of a file descriptor or of text in memory, at most kMaxLineBytes each: a longer one is
// read past without being kept.
class LineSource {
 public:
  enum Status { kLine, kTooLong, kEnd, kError };

  explicit LineSource(int fd) : fd_(fd), buf_(kReadBlock) { data_ = buf_.data(); }
  explicit LineSource(std::string_view text) : data_(text.data()), end_(text.size()) {}

  // The next line without its '\n', valid until the next call; *length is its length in bytes
  // (also for a line too long to keep).
  Status next(std::string_view* line, size_t* length) {
    partial_.clear();
    bool too_long = false;
    size_t total = 0;
    for (;;) {
      if (pos_ < end_) {
        const char* begin = data_ + pos_;
        const void* nl = std::memchr(begin, '\n', end_ - pos_);
        size_t n = nl ? size_t(static_cast<const char*>(nl) - begin) : end_ - pos_;
        total += n;
        pos_ += n + (nl ? 1 : 0);
        if (!too_long && total > kMaxLineBytes) {
          too_long = true;
          std::string().swap(partial_);  // give the memory back
        }
        if (nl) return finish(begin, n, total, too_long, line, length);
        if (!too_long) partial_.append(begin, n);
      }
      ssize_t got = fill();
      if (got < 0) return kError;
      if (got == 0) {
        if (total == 0 && !too_long) return kEnd;
        *length = total;
        if (too_long) return kTooLong;
        *line = partial_;
        return kLine;
      }
    }
  }
  int error() const { return errno_; }

 private:
  Status finish(const char* begin, size_t n, size_t total, bool too_long, std::string_view* line, size_t* length) {
    *length = total;
    if (too_long) return kTooLong;
    if (partial_.empty()) {
      *line = std::string_view(begin, n);
    } else {
      partial_.append(begin, n);
      *line = partial_;
    }
    return kLine;
  }
  // Refills the buffer: bytes read, 0 at the end, -1 on an error.
  ssize_t fill() {
    if (fd_ < 0) return 0;
    for (;;) {
      ssize_t got = ::read(fd_, buf_.data(), buf_.size());
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) errno_ = errno;
      pos_ = 0;
      end_ = got > 0 ? size_t(got) : 0;
      return got;
    }
  }

  int fd_ = -1;
  std::vector<char> buf_;
  const char* data_ = nullptr;
  size_t pos_ = 0;
  size_t end_ = 0;
  std::string partial_;  // a line that spans reads
  int errno_ = 0;
};

}  // namespace

class JsonlTrace : public Trace {
 public:
  JsonlTrace(std::string path, uint32_t pid) : b_(*this) { b_.identity(std::move(path), pid); }

  // The input's damage: its lines skipped or kept in part, and what was wrong with them.
  void add_damage(const std::vector<std::string>& notes, uint64_t lines) {
    for (const auto& n : notes) b_.note(n);
    b_.damaged(lines, false);
  }

  // Each add_* reads and checks the whole line first and changes the trace only once nothing
  // can go wrong, so that a skipped line leaves nothing behind. BadValue: the line is skipped.
  void set_process(const json& j) {
    Process p;
    p.pid = pid();
    p.ppid = u32(j, "ppid");
    p.rank = i32(j, "rank", -1);
    p.local_rank = i32(j, "local_rank", -1);
    p.world_size = i32(j, "world_size", -1);
    p.hostname = str(j, "host");
    p.exe = str(j, "exe");
    p.cwd = str(j, "cwd");
    for (const auto& arg : array(j, "cmdline")) {
      if (!arg.is_string()) bad("cmdline", arg, "a string");
      p.cmdline.push_back(arg.get<std::string>());
    }
    uint64_t start = u64(j, "start_ns");
    uint64_t start_wall = u64(j, "start_wall_ns");
    uint64_t end = u64(j, "end_ns");
    trace::FileState state = state_of(str(j, "state", "incomplete"));
    int signal = i32(j, "signal", 0);
    uint64_t threads = u64(j, "threads");
    std::map<uint32_t, int64_t> properties;
    for (uint32_t key = 1; key < 16; ++key) {
      if (const char* name = property_name(key); name && j.contains(name)) properties[key] = i64(j, name);
    }
    if (const json* env = find(j, "environment")) {
      if (!env->is_object()) bad("environment", *env, "an object of strings");
      for (auto it = env->begin(); it != env->end() && p.environment.size() < trace::kMaxEnvRecords; ++it) {
        if (!it.value().is_string()) bad("environment", it.value(), "a string");
        p.environment[it.key()] = it.value().get<std::string>();
      }
    }
    if (const json* v = find(j, "library_versions")) {
      if (!v->is_object()) bad("library_versions", *v, "an object of strings");
      for (auto it = v->begin(); it != v->end() && p.library_versions.size() < 16; ++it) {
        if (!it.value().is_string()) bad("library_versions", it.value(), "a string");
        p.library_versions[it.key()] = it.value().get<std::string>();
      }
    }
    std::map<int, Device> devices;
    for (const auto& d : array(j, "devices")) {
      if (!d.is_object()) bad("devices", d, "an object");
      Device dev;
      dev.index = i32(d, "index", -1, -1, INT16_MAX);
      dev.name = str(d, "name");
      dev.total_mem = u64(d, "total_mem");
      dev.uuid = str(d, "uuid");
      dev.pci_bus_id = str(d, "pci_bus_id");
      dev.multiprocessors = i32(d, "multiprocessors", 0);
      std::string cc = str(d, "cc", "0.0");
      size_t dot = cc.find('.');
      auto number = [&](std::string_view s, int* out) {
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
        return ec == std::errc() && end == s.data() + s.size() && *out >= 0;
      };
      if (dot == std::string::npos || !number(std::string_view(cc).substr(0, dot), &dev.cc_major) ||
          !number(std::string_view(cc).substr(dot + 1), &dev.cc_minor)) {
        bad("cc", *find(d, "cc"), "a compute capability (\"9.0\")");
      }
      devices[dev.index] = std::move(dev);
    }
    uint64_t stats[trace::kStatCount] = {};
    const json& st = object(j, "stats");
    for (uint32_t s = 0; s < trace::kStatCount; ++s) {
      if (trace::kStatNames[s]) stats[s] = u64(st, trace::kStatNames[s]);
    }
    Coverage cov;
    if (const json* c = find(j, "coverage")) {
      if (!c->is_object()) bad("coverage", *c, "an object");
      cov.keep = keep_from_name(str(*c, "keep", "all"));
      cov.ring_bytes = u64(*c, "ring_bytes");
      cov.ring_started_ns = u64(*c, "ring_started_ns");
      cov.recycled_chunks = u64(*c, "recycled_chunks");
      cov.overwritten_records = u64(*c, "overwritten_records");
      cov.overwritten_calls = u64(*c, "overwritten_calls");
      cov.overwritten_counted = u64(*c, "overwritten_counted");
      cov.overwritten_first_ns = u64(*c, "overwritten_first_ns");
      cov.overwritten_last_ns = u64(*c, "overwritten_last_ns");
      if (find(*c, "window_lo_ns") != nullptr) {
        cov.window = true;
        cov.window_lo_ns = u64(*c, "window_lo_ns");
        cov.window_hi_ns = find(*c, "window_hi_ns") != nullptr ? u64(*c, "window_hi_ns") : UINT64_MAX;
        cov.outside_window_calls = u64(*c, "outside_window_calls");
        cov.window_marker = str(*c, "window_marker");
        cov.window_marker_opens = u64(*c, "window_marker_opens");
      }
    }
    std::vector<CudnnHandle> handles;
    for (const auto& h : array(j, "cudnn_handles")) {
      if (!h.is_object()) bad("cudnn_handles", h, "an object");
      handles.push_back(CudnnHandle{hex(h, "handle"), i32(h, "device", -1, -1, INT16_MAX), u32(h, "tid")});
    }
    // A process line seen again (the same process in two dumps) replaces the first.
    TraceBuilder::Run run;
    run.process = std::move(p);
    run.start_ns = start;
    run.start_wall_ns = start_wall;
    run.end_ns = end;
    run.state = state;
    run.end_signal = signal;
    run.coverage = cov;
    run.threads = size_t(std::min<uint64_t>(threads, std::numeric_limits<size_t>::max()));
    run.properties = std::move(properties);
    run.devices = std::move(devices);
    std::copy(std::begin(stats), std::end(stats), std::begin(run.stats));
    run.handles = std::move(handles);
    b_.run(std::move(run));
  }

  // BadValue: the line is skipped; a message returned: the line was kept in part.
  std::string add_api(const json& j) {
    std::string name = str(j, "name");
    if (name.empty()) throw BadValue{"an api line without \"name\""};
    uint64_t builtin = builtin_flags(name);
    uint64_t flags = u64(j, "flags", builtin) | (builtin & kRoleFlags);
    trace::Library library = j.contains("library") ? library_from(str(j, "library")) : builtin_library(name);
    std::vector<Field> fields;
    std::string_view spec;
    std::string spec_text = str(j, "fields");
    spec = spec_text;
    while (!spec.empty()) {
      size_t comma = spec.find(',');
      std::string_view item = spec.substr(0, comma);
      spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
      if (item.empty()) continue;
      size_t colon = item.rfind(':');  // names may hold ':' (the keys of hand-written calls)
      Field f{std::string(item.substr(0, colon)), 'u'};
      if (colon != std::string_view::npos) {
        if (item.size() != colon + 2 || !field_type_ok(item[colon + 1])) {
          throw BadValue{fmt::format("\"fields\": \"{}\" is not name:type with type one of p u i x f s q k r", excerpt(item, 40))};
        }
        f.type = upgraded_type(f.name, item[colon + 1]);
      }
      fields.push_back(std::move(f));
    }
    if (apis().size() >= kMaxApis && !api_ids_.count(name)) throw TooMany{"too many APIs", "APIs in one process"};
    // An API seen again keeps its id and fields (calls already refer to them); new fields are added.
    uint16_t id = api_id(name);
    Api& a = b_.api(id);
    a.flags = flags;
    a.library = library;
    size_t dropped = 0;
    for (auto& f : fields) {
      if (a.field_index(f.name) >= 0) continue;
      if (a.fields.size() >= kMaxFieldsPerApi) {
        ++dropped;
        continue;
      }
      a.fields.push_back(std::move(f));
    }
    if (dropped == 0) return "";
    return fmt::format("{} fields of {} beyond the first {} ignored", dropped, excerpt(name, 40), kMaxFieldsPerApi);
  }

  // BadValue: skipped; TooMany: skipped; a message returned: kept in part.
  std::string add_call(const json& j) {
    std::string name = str(j, "api");
    if (name.empty()) throw BadValue{"a call without \"api\""};
    Stored e;
    e.ret = int32_t(i32(j, "ret", 0));
    e.device = int16_t(i32(j, "device", -1, -1, INT16_MAX));
    e.tid = u32(j, "tid");
    e.ts_ns = u64(j, "ts_ns");
    e.dur_ns = u64(j, "dur_ns");
    if (e.dur_ns > UINT64_MAX - e.ts_ns) {
      throw BadValue{fmt::format("\"ts_ns\" + \"dur_ns\" ({} + {}) is past 2^64", e.ts_ns, e.dur_ns)};
    }
    if (j.contains("stream")) {
      e.has_stream = true;
      e.stream = hex(j, "stream");
    }
    e.stack = u32(j, "stack");
    e.sample = boolean(j, "sample");
    std::string rule;
    bool injected = j.contains("injected");
    if (injected) {
      rule = str(j, "injected");
      e.fault_k = u64(j, "fault_k");
    }
    if (!api_ids_.count(name) && apis().size() >= kMaxApis) throw TooMany{"too many APIs", "APIs in one process"};
    if (injected && !rule_ids_.count(rule) && free_rule_index(rule, -1) < 0) {
      throw TooMany{"too many fault rules", "fault rules in one process"};
    }

    // The API's fields, and the keys of this line that are new fields, each with its value.
    const Api* known = nullptr;
    if (auto it = api_ids_.find(name); it != api_ids_.end()) known = &apis()[it->second];
    size_t nfields = known ? known->fields.size() : 0;
    pending_.clear();
    new_fields_.clear();
    size_t ignored = 0;
    const uint64_t flags = known ? known->flags : builtin_flags(name);
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      if (common_keys().count(key)) continue;
      int index = known ? known->field_index(key) : -1;
      if (index < 0) {
        for (size_t k = 0; k < new_fields_.size(); ++k) {
          if (new_fields_[k].name == key) index = int(nfields + k);
        }
      }
      if (index < 0) {
        if (key == "size" && (flags & (trace::kApiDeviceFree | trace::kApiHostFree))) continue;  // derived
        if (nfields + new_fields_.size() >= kMaxFieldsPerApi) {
          ++ignored;
          continue;
        }
        const json& v = *it;
        char type = v.is_string() ? (v.get_ref<const std::string&>().rfind("0x", 0) == 0 ? 'p' : upgraded_type(key, 's'))
                    : v.is_array() && key == "results" ? 'r'
                    : v.is_number_float()              ? 'f'
                    : v.is_number_unsigned()           ? 'u'
                                                       : 'i';
        index = int(nfields + new_fields_.size());
        new_fields_.push_back(Field{key, type});
      }
      char type = size_t(index) < nfields ? known->fields[size_t(index)].type : new_fields_[size_t(index) - nfields].type;
      pending_.emplace_back(uint8_t(index), arg_value(key, *it, type));
    }

    // Nothing below fails: commit.
    uint16_t id = api_id(name);
    Api& a = b_.api(id);
    for (auto& f : new_fields_) a.fields.push_back(std::move(f));
    for (auto& [index, value] : pending_) {
      switch (value.kind) {
        case 's': value.bits = intern(value.text); break;
        case 'q': {
          const json* h = find(j, "problem_hash");
          uint64_t hash = 0;
          if (!(h && h->is_string() && parse_hex(h->get_ref<const std::string&>(), &hash))) hash = text_hash(value.text);
          value.bits = value.text.empty() ? 0 : b_.add_problem(value.text, hash, nullptr);
          break;
        }
        case 'k': value.bits = b_.add_knobs_text(value.text); break;
        case 'r': {
          if (value.results.empty()) break;
          for (size_t i = 0; i < value.result_knobs.size() && i < value.results.size(); ++i) {
            if (!value.result_knobs[i].empty()) value.results[i].knobs = b_.add_knobs_text(value.result_knobs[i]);
          }
          value.bits = b_.add_algo_results(std::move(value.results));
          break;
        }
        default: break;
      }
    }
    std::sort(pending_.begin(), pending_.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    e.api = id;
    e.nargs = uint16_t(a.fields.size());
    e.npresent = uint16_t(pending_.size());
    e.args = arg_index_.size();
    e.dense = e.npresent == e.nargs;  // every field present: indexes 0..n-1 in order
    for (const auto& [index, value] : pending_) {
      arg_index_.push_back(index);
      arg_value_.push_back(value.bits);
    }
    if (injected) e.fault_rule = int8_t(fault_rule_index(rule));
    else if (boolean(j, "pinned")) e.fault_rule = int8_t(Event::kPinnedRule);
    events_.push_back(e);
    threads_.insert(e.tid);
    b_.call_kept(e.ts_ns + e.dur_ns);
    if (ignored == 0) return "";
    return fmt::format("{} {} of a call of {} ignored: an API has at most {} fields", ignored,
                       ignored == 1 ? "key" : "keys", excerpt(name, 40), kMaxFieldsPerApi);
  }

  // A typed problem, as `cuprobe dump` writes it before the first call that names it by its text.
  void add_problem_line(const json& j) {
    std::string text = str(j, "text");
    if (text.empty()) throw BadValue{"a problem line without \"text\""};
    uint64_t hash = hex(j, "hash");
    const json* d = find(j, "desc");
    if (d == nullptr || !d->is_object()) {
      b_.add_problem(text, hash ? hash : text_hash(text), nullptr);
      return;
    }
    trace::ProblemDesc p{};
    p.op = uint16_t(u32(*d, "op"));
    p.flags = uint8_t(u32(*d, "flags"));
    p.math_type = int8_t(i32(*d, "math_type", -1, -128, 127));
    auto ints = [&](const json& obj, const char* key, auto* out, size_t max) {
      const json* a = find(obj, key);
      if (a == nullptr) return size_t(0);
      if (!a->is_array() || a->size() > max) bad(key, *a, fmt::format("a list of at most {} integers", max));
      size_t n = 0;
      for (const json& x : *a) {
        if (!x.is_number_integer()) bad(key, x, "an integer");
        out[n++] = decltype(+out[0])(x.get<int64_t>());
      }
      return n;
    };
    if (const json* c = find(*d, "conv"); c && c->is_object()) {
      p.conv.mode = int8_t(i32(*c, "mode", 0, -128, 127));
      p.conv.compute = int8_t(i32(*c, "compute", 0, -128, 127));
      p.conv.spatial = uint8_t(i32(*c, "spatial", 2, 0, 3));
      p.conv.groups = i32(*c, "groups", 1);
      ints(*c, "pre", p.conv.pre, 3);
      ints(*c, "post", p.conv.post, 3);
      ints(*c, "stride", p.conv.stride, 3);
      ints(*c, "dilation", p.conv.dilation, 3);
    }
    p.n_params = uint8_t(ints(*d, "params", p.params, trace::kProblemMaxParams));
    if (const json* f = find(*d, "fused"); f && f->is_array()) {
      for (const json& x : *f) {
        if (p.n_fused >= trace::kProblemMaxFused || !x.is_object()) break;
        p.fused[p.n_fused].op = uint16_t(u32(x, "op"));
        p.fused[p.n_fused].mode = i32(x, "mode", -1);
        ++p.n_fused;
      }
    }
    if (const json* ts = find(*d, "tensors"); ts && ts->is_array()) {
      for (const json& x : *ts) {
        if (p.n_tensors >= trace::kProblemMaxTensors || !x.is_object()) break;
        trace::ProblemTensor& t = p.tensors[p.n_tensors++];
        t.role = uint8_t(u32(x, "role"));
        t.dtype = int8_t(i32(x, "dtype", -1, -128, 127));
        t.layout = uint8_t(u32(x, "layout"));
        t.nbdims = uint8_t(ints(x, "dims", t.dims, trace::kProblemMaxDims));
        ints(x, "strides", t.strides, trace::kProblemMaxDims);
      }
    }
    b_.add_problem(text, hash ? hash : trace::problem_hash(p), &p);
  }

  void add_fault_rule(const json& j) {
    FaultRule r;
    r.index = i32(j, "index", -1);
    r.name = str(j, "name");
    r.text = str(j, "rule");
    r.scope = str(j, "scope", "process") == "thread" ? 1 : 0;
    r.matched = u64(j, "matched");
    r.injected = u64(j, "injected");
    // A rule seen again (the same process in two dumps) is updated in place.
    if (auto it = rule_ids_.find(r.name); it != rule_ids_.end()) {
      if (FaultRule* old = b_.fault_rule(it->second)) {
        old->text = r.text;
        old->scope = r.scope;
        old->matched = r.matched;
        old->injected = r.injected;
      }
      return;
    }
    r.index = free_rule_index(r.name, r.index);
    if (r.index < 0) throw TooMany{"too many fault rules", "fault rules in one process"};
    rule_ids_[r.name] = r.index;
    b_.add_fault_rule(std::move(r));
  }

  void add_stack(const json& j) {
    Stack st;
    st.id = u32(j, "id");
    for (const auto& f : array(j, "python")) {
      if (!f.is_object()) bad("python", f, "an object");
      st.python.push_back(PyFrame{str(f, "file"), str(f, "function"), i32(f, "line", 0)});
    }
    for (const auto& f : array(j, "native")) {
      if (!f.is_object()) bad("native", f, "an object");
      st.pcs.push_back(hex(f, "pc"));
      st.resolved.push_back(str(f, "text"));
    }
    b_.stack(std::move(st));
  }

  // A facts line (cuprobe facts; analysis/facts_io.h): a part of the process's facts, kept as
  // read (the analysis checks it); the original trace's integrity restored.
  void add_facts(const json& j) {
    std::string key = str(j, "key");
    if (key.empty()) throw BadValue{"a facts line without \"key\""};
    if (key == "trace_integrity") {
      const json* v = find(j, "value");
      if (!v || !v->is_object()) throw BadValue{"trace_integrity without an object \"value\""};
      Integrity in;
      in.skipped_chunks = u64(*v, "skipped_chunks");
      in.resyncs = u64(*v, "resyncs");
      in.skipped_bytes = u64(*v, "skipped_bytes");
      in.inconsistent = u64(*v, "inconsistent");
      in.first_chunk = str(*v, "first_chunk");
      in.first_resync = str(*v, "first_resync");
      in.first_inconsistent = str(*v, "first_inconsistent");
      std::vector<std::string> notes;
      for (const auto& n : array(*v, "diagnostics")) {
        if (!n.is_string()) bad("diagnostics", n, "a string");
        notes.push_back(n.get<std::string>());
      }
      b_.restore_integrity(in, u64(*v, "damaged_records"), u64(*v, "ignored_events"));
      for (auto& n : notes) b_.note(std::move(n));
      return;
    }
    if (const json* items = find(j, "items")) {
      if (!items->is_array()) bad("items", *items, "a list");
      b_.facts_part(key, *items, true);
    } else if (const json* value = find(j, "value")) {
      b_.facts_part(key, *value, false);
    } else {
      throw BadValue{"a facts line without \"value\" or \"items\""};
    }
  }

  void add_module(const json& j) {
    Module m;
    m.path = str(j, "path");
    m.start = hex(j, "start");
    m.end = hex(j, "end");
    m.bias = hex(j, "bias");
    m.build_id = str(j, "build_id");
    if (m.path.empty()) throw BadValue{"a module without \"path\""};
    if (m.end < m.start) throw BadValue{"a module whose \"end\" is before its \"start\""};
    if (modules().size() >= kMaxModules) throw TooMany{"too many modules", "modules in one process"};
    b_.module(std::move(m));  // kept sorted by start (Trace::module_of); seen again, replaces the first
  }

  void add_count(const json& j) {
    std::string name = str(j, "api");
    if (name.empty()) throw BadValue{"a count without \"api\""};
    Count c{u32(j, "tid"), 0, i32(j, "device", -1, -1, INT16_MAX), u64(j, "calls")};
    if (!api_ids_.count(name) && apis().size() >= kMaxApis) throw TooMany{"too many APIs", "APIs in one process"};
    c.api = api_id(name);
    b_.count(c);
  }

  void add_pin(const json& j) {
    PinEvent p;
    p.tid = u32(j, "tid");
    p.ts_ns = u64(j, "ts_ns");
    std::string outcome = str(j, "outcome");
    p.outcome = trace::PinOutcome::kCount;
    for (uint32_t i = 1; i < uint32_t(trace::PinOutcome::kCount); ++i) {
      if (outcome == trace::kPinOutcomeNames[i]) p.outcome = trace::PinOutcome(i);
    }
    if (p.outcome == trace::PinOutcome::kCount) throw BadValue{"a pin line with an unknown \"outcome\""};
    std::string problem = str(j, "problem");
    p.problem_hash = hex(j, "hash");
    if (!problem.empty()) p.problem = ProblemId(b_.add_problem(problem, p.problem_hash, nullptr));
    p.engine = i64(j, "engine", -1);
    std::string knobs = str(j, "knobs");
    if (!knobs.empty()) p.knobs = KnobsId(b_.add_knobs_text(knobs));
    p.legacy = boolean(j, "legacy");
    p.answered = boolean(j, "answered");
    p.pinned_ms = dbl(j, "pinned_ms", -1);
    p.search_ms = dbl(j, "search_ms", -1);
    p.replaced_ms = dbl(j, "replaced_ms", -1);
    p.moved = boolean(j, "moved");
    p.no_fallback = boolean(j, "no_fallback");
    b_.pin(p);
  }

  void add_crash(const json& j) {
    Crash c;
    c.signal = i32(j, "signal", 0);
    c.tid = u32(j, "tid");
    c.ts_ns = u64(j, "ts_ns");
    c.api_in_flight = str(j, "api_in_flight");
    c.in_flight_start_ns = u64(j, "in_flight_since_ns");
    b_.crash(std::move(c));
  }

  void done() {
    std::stable_sort(events_.begin(), events_.end(), [](const Stored& a, const Stored& b) {
      return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.tid < b.tid;
    });
    drop_impossible_times();
    if (thread_count() == 0) b_.thread_count(threads_.size());
    if (!has_process()) b_.note("no process line: this process's calls came without one");
  }

  // Calls at a time the process cannot have made them (a damaged or hand-edited line: one call
  // 146 years on stretches the run and hides every rate), as the binary reader does: before the
  // process started (a minute's margin), after it ended (an hour's margin, or its span again),
  // or, for a process that never ended, after a gap of more than an hour and ten times
  // everything before it. Left out and counted; when more than half the calls would go, it is
  // the process line's times that are wrong, and every call is kept.
  void drop_impossible_times() {
    if (events_.empty()) return;
    constexpr uint64_t kMinute = 60'000'000'000ull, kHour = 3'600'000'000'000ull;
    uint64_t lo = 0, hi = UINT64_MAX;
    const uint64_t start = start_ns(), end_of_run = end_ns();
    if (has_process() && start != 0) {
      lo = start > kMinute ? start - kMinute : 0;
      if (end_of_run > start) {
        uint64_t margin = std::max(kHour, end_of_run - start);
        hi = end_of_run + margin < end_of_run ? UINT64_MAX : end_of_run + margin;
      }
    }
    auto inside = [&](const Stored& e) { return e.ts_ns >= lo && e.ts_ns <= hi && e.dur_ns <= hi - e.ts_ns; };
    size_t first = 0, end = events_.size();
    while (first < end && !inside(events_[first])) ++first;
    while (end > first && !inside(events_[end - 1])) --end;
    // The calls are sorted: a far tail after a long quiet gap.
    if (hi == UINT64_MAX) {
      while (end - first >= 2) {
        uint64_t gap = events_[end - 1].ts_ns - events_[end - 2].ts_ns;
        uint64_t before = events_[end - 2].ts_ns - events_[first].ts_ns;
        if (gap <= kHour || gap / 10 <= before) break;
        --end;
      }
    }
    size_t kept = 0;
    for (size_t i = first; i < end; ++i) kept += inside(events_[i]) ? 1 : 0;
    size_t dropped = events_.size() - kept;
    if (dropped == 0) return;
    if (dropped * 2 > events_.size()) {
      b_.note(fmt::format("the process line's start and end times do not fit {} of the {} calls; times may be wrong",
                       dropped, events_.size()));
      return;
    }
    std::vector<Stored> keep;
    keep.reserve(kept);
    uint64_t last_end = 0;
    uint64_t example = 0;
    bool have_example = false;
    for (size_t i = 0; i < events_.size(); ++i) {
      if (i < first || i >= end || !inside(events_[i])) {
        if (!have_example) example = events_[i].ts_ns;
        have_example = true;
        continue;
      }
      keep.push_back(events_[i]);
      last_end = std::max(last_end, events_[i].ts_ns + events_[i].dur_ns);
    }
    events_ = std::move(keep);
    b_.last_event(last_end);
    b_.note(fmt::format("{} call{} at a time outside the process's run (for example ts_ns {}) left out: the line is "
                     "damaged",
                     dropped, dropped == 1 ? "" : "s", example));
    b_.damaged(dropped, true);
  }

  void for_each_event(const std::function<void(const Event&)>& fn) const override {
    Event e;
    e.pid = pid();
    std::vector<uint64_t> scratch(kMaxFieldsPerApi);
    for (const Stored& s : events_) {
      e.api = s.api;
      e.ret = s.ret;
      e.device = s.device;
      e.has_stream = s.has_stream;
      e.tid = s.tid;
      e.ts_ns = s.ts_ns;
      e.dur_ns = s.dur_ns;
      e.stream = s.stream;
      e.nargs = std::min<int>(s.nargs, int(apis()[s.api].fields.size()));
      if (s.dense) {
        e.args = arg_value_.data() + s.args;
      } else {
        // Fields this line did not have read as 0.
        std::fill(scratch.begin(), scratch.begin() + s.nargs, 0);
        for (size_t i = 0; i < s.npresent; ++i) scratch[arg_index_[s.args + i]] = arg_value_[s.args + i];
        e.args = scratch.data();
      }
      e.fault_rule = s.fault_rule;
      e.fault_k = s.fault_k;
      e.stack = StackId(s.stack);
      e.sample = s.sample;
      fn(e);
    }
  }

  // Not BadValue: the line is valid but over a limit of this reader.
  struct TooMany {
    const char* kind;
    const char* what;
  };

 private:
  // 64 bytes a call, and 9 a field it carries.
  struct Stored {
    uint64_t ts_ns = 0;
    uint64_t dur_ns = 0;
    uint64_t stream = 0;
    uint64_t fault_k = 0;
    uint64_t args = 0;  // the first of its fields in arg_index_ and arg_value_
    uint32_t tid = 0;
    uint32_t stack = 0;
    int32_t ret = 0;
    int16_t device = -1;
    uint16_t api = 0;
    uint16_t nargs = 0;     // the API's fields when the line was read
    uint16_t npresent = 0;  // of them, those the line had
    int8_t fault_rule = -1;
    bool has_stream = false;
    bool sample = false;
    bool dense = false;
  };
  static_assert(trace::kFaultRuleSlots <= 127);

  struct ArgValue {
    uint64_t bits = 0;
    char kind = 0;     // 's' 'q' 'k' 'r': resolved to an id at commit
    std::string text;  // 's', 'q', 'k'
    std::vector<trace::AlgoResult> results;  // 'r'
    std::vector<std::string> result_knobs;   // 'r': each result's configuration ("" none)
  };

  // A call's value for one of its fields: strings of 's' fields by id, addresses and flags
  // from "0x..." strings, numbers by their bits (floats as float64), booleans as 0 or 1.
  static ArgValue arg_value(const std::string& key, const json& v, char type) {
    ArgValue out;
    if (type == 's' || type == 'q' || type == 'k') {
      if (!v.is_string()) bad(key, v, "a string");
      out.kind = type;
      out.text = v.get<std::string>();
    } else if (type == 'r') {
      out.kind = 'r';
      if (v.is_string()) {
        out.results = format1_results(v.get<std::string>());
      } else if (v.is_array()) {
        for (const json& item : v) {
          if (!item.is_object()) bad(key, item, "an object {\"algo\", \"status\", \"time_ms\", ...}");
          if (out.results.size() >= size_t(trace::kMaxAlgoResults)) break;
          trace::AlgoResult r{};
          r.algo = i32(item, "algo", -1);
          r.status = i32(item, "status", 0);
          const json* t = find(item, "time_ms");
          r.time_ms = t && t->is_number() ? t->get<float>() : -1.0f;
          r.determinism = i32(item, "determinism", 0);
          r.math_type = i32(item, "math", 0);
          r.memory = u64(item, "memory");
          const json* knobs = find(item, "knobs");
          out.result_knobs.push_back(knobs && knobs->is_string() ? knobs->get<std::string>() : std::string());
          out.results.push_back(r);
        }
      } else {
        bad(key, v, "a list of algorithm results");
      }
    } else if (v.is_string()) {
      if (!parse_hex(v.get_ref<const std::string&>(), &out.bits)) bad(key, v, "a hex string (\"0x...\") or a number");
    } else if (v.is_number_float() || (type == 'f' && v.is_number())) {
      double d = v.get<double>();  // dump writes 2.0 as 2
      std::memcpy(&out.bits, &d, sizeof d);
    } else if (v.is_number_unsigned()) {
      out.bits = v.get<uint64_t>();
    } else if (v.is_number_integer()) {
      out.bits = uint64_t(v.get<int64_t>());
    } else if (v.is_boolean()) {
      out.bits = v.get<bool>() ? 1 : 0;
    } else {
      bad(key, v, "a number, string or boolean");
    }
    return out;
  }

  static trace::Library library_from(const std::string& s) {
    if (s == "cudnn") return trace::Library::kCudnn;
    if (s == "driver") return trace::Library::kDriver;
    if (s == "torch") return trace::Library::kTorch;
    if (s == "nccl") return trace::Library::kNccl;
    if (s == "cublaslt") return trace::Library::kCublasLt;
    return trace::Library::kCudart;
  }

  // Callers check kMaxApis first.
  uint16_t api_id(const std::string& name) {
    auto it = api_ids_.find(name);
    if (it != api_ids_.end()) return it->second;
    Api a;
    a.name = name;
    a.flags = builtin_flags(name);
    a.library = builtin_library(name);
    a.count_slot = -1;
    uint16_t id = b_.add_api(std::move(a));
    api_ids_[name] = id;
    return id;
  }

  // Calls name their rule; a rule without a fault_rule line gets an index of its own. Callers
  // check that there is room (free_rule_index).
  int fault_rule_index(const std::string& name) {
    if (auto it = rule_ids_.find(name); it != rule_ids_.end()) return it->second;
    FaultRule r;
    r.index = free_rule_index(name, -1);
    r.name = name;
    rule_ids_[name] = r.index;
    b_.add_fault_rule(r);
    return r.index;
  }

  // The index a new rule gets: the one it asks for when free, the memory cap's slot for
  // "mem-cap", else the first free plan slot; -1 when there is none.
  int free_rule_index(const std::string& name, int wanted) const {
    if (wanted >= 0 && wanted < trace::kFaultRuleSlots && fault_rule(wanted) == nullptr) return wanted;
    if (name == "mem-cap" && fault_rule(trace::kFaultRuleSlots - 1) == nullptr) return trace::kFaultRuleSlots - 1;
    for (int i = 0; i < trace::kFaultRuleSlots - 1; ++i) {
      if (fault_rule(i) == nullptr) return i;
    }
    return -1;
  }

  // Each distinct string is held once: the index points at the trace's copy, which never moves.
  uint32_t intern(const std::string& s) {
    auto it = string_ids_.find(s);
    if (it != string_ids_.end()) return it->second;
    const std::string* kept = nullptr;
    uint32_t id = b_.add_string(s, &kept);
    string_ids_.emplace(*kept, id);
    return id;
  }

  TraceBuilder b_;  // the only way this reader changes the Trace it is
  std::map<std::string, uint16_t, std::less<>> api_ids_;
  std::map<std::string, int> rule_ids_;
  std::unordered_map<std::string_view, uint32_t> string_ids_;
  std::vector<Stored> events_;
  std::vector<uint8_t> arg_index_;   // per call its fields' indexes, ascending
  std::vector<uint64_t> arg_value_;  // and their values
  std::set<uint32_t> threads_;
  // Scratch of add_call, kept to save allocations.
  std::vector<std::pair<uint8_t, ArgValue>> pending_;
  std::vector<Field> new_fields_;
};

namespace {

// Every process of one JSON Lines input, read line by line.
class JsonlReader {
 public:
  explicit JsonlReader(std::string name) : name_(std::move(name)) {}

  void line(std::string_view text) {
    ++line_no_;
    if (line_no_ == 1 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) return;
    json j;
    BoundedDom dom(j);
    if (!json::sax_parse(text.begin(), text.end(), &dom)) {
      damage_.skip(line_no_, dom.kind(), dom.error());
      return;
    }
    if (!j.is_object()) {
      damage_.skip(line_no_, "not an object", fmt::format("{} is not a JSON object", describe(j)));
      return;
    }
    try {
      const json* type_value = find(j, "type");
      if (!type_value) throw BadValue{"no \"type\""};
      if (!type_value->is_string()) bad("type", *type_value, "a string");
      const std::string& type = type_value->get_ref<const std::string&>();
      if (type == "search") return;  // rebuilt from the calls
      if (type == "facts_file") return;  // a facts file's first line; each process's facts carry their version
      if (type == "facts_process") {
        // A facts file's processes come from many machines or containers, whose pids may repeat:
        // each one's lines follow such a line with a number of its own, and are told apart by it.
        const json* n = find(j, "proc");
        if (!n || !n->is_number_unsigned() || n->get<uint64_t>() > UINT32_MAX)
          throw BadValue{"facts_process without \"proc\""};
        space_ = n->get<uint64_t>() + 1;
        return;
      }
      if (type != "process" && type != "api" && type != "call" && type != "count" && type != "stack" &&
          type != "fault_rule" && type != "crash" && type != "problem" && type != "module" && type != "pin" &&
          type != "facts") {
        damage_.unknown_type(line_no_, type);
        return;
      }
      uint32_t pid = u32(j, "pid");
      JsonlTrace* t = trace_of(pid);
      if (!t) throw JsonlTrace::TooMany{"too many processes", "processes in one input"};
      std::string partly;
      if (type == "process") {
        t->set_process(j);
      } else if (type == "api") {
        partly = t->add_api(j);
      } else if (type == "call") {
        partly = t->add_call(j);
      } else if (type == "count") {
        t->add_count(j);
      } else if (type == "stack") {
        t->add_stack(j);
      } else if (type == "fault_rule") {
        t->add_fault_rule(j);
      } else if (type == "crash") {
        t->add_crash(j);
      } else if (type == "pin") {
        t->add_pin(j);
      } else if (type == "problem") {
        t->add_problem_line(j);
      } else if (type == "module") {
        t->add_module(j);
      } else if (type == "facts") {
        t->add_facts(j);
      }
      if (!partly.empty()) damage_.partial(line_no_, "too many fields", partly);
    } catch (const BadValue& e) {
      damage_.skip(line_no_, "invalid values", e.what);
    } catch (const JsonlTrace::TooMany& e) {
      damage_.skip(line_no_, e.kind, fmt::format("more {} than this reader keeps", e.what));
    } catch (const json::exception& e) {  // not expected: every access above is checked
      damage_.skip(line_no_, "invalid values", excerpt(e.what(), 120));
    }
  }

  void too_long(size_t length) {
    ++line_no_;
    damage_.skip(line_no_, "too long",
                 fmt::format("{} bytes long; lines longer than {} MiB are not read", length, kMaxLineBytes >> 20));
  }

  Result<std::vector<std::unique_ptr<Trace>>> finish(const std::string& read_error) {
    std::vector<std::string> notes = damage_.notes(line_no_);
    if (!read_error.empty()) notes.push_back(read_error);
    std::vector<std::unique_ptr<Trace>> out;
    for (uint64_t key : order_) {
      auto& t = by_pid_[key];
      if (out.empty()) t->add_damage(notes, damage_.damaged());  // the input's damage goes with its first process
      t->done();
      out.push_back(std::move(t));
    }
    if (out.empty()) {
      std::string why = fmt::format("{}: no process or call lines", name_);
      if (!notes.empty()) why += "; " + notes[0];
      if (notes.size() > 1) why += "; " + notes.back();
      return Error{why};
    }
    return out;
  }

 private:
  JsonlTrace* trace_of(uint32_t pid) {
    uint64_t key = space_ << 32 | pid;
    auto it = by_pid_.find(key);
    if (it != by_pid_.end()) return it->second.get();
    if (by_pid_.size() >= kMaxProcesses) return nullptr;
    order_.push_back(key);
    return by_pid_.emplace(key, std::make_unique<JsonlTrace>(name_, pid)).first->second.get();
  }

  std::string name_;
  size_t line_no_ = 0;
  Damage damage_;
  uint64_t space_ = 0;  // the latest facts_process line's number + 1; 0 in dump output
  std::unordered_map<uint64_t, std::unique_ptr<JsonlTrace>> by_pid_;  // by (space_, pid)
  std::vector<uint64_t> order_;
};

Result<std::vector<std::unique_ptr<Trace>>> read_lines(LineSource& source, const std::string& name) {
  JsonlReader reader(name);
  std::string_view line;
  size_t length = 0;
  std::string read_error;
  for (;;) {
    LineSource::Status s = source.next(&line, &length);
    if (s == LineSource::kEnd) break;
    if (s == LineSource::kError) {
      read_error = fmt::format("reading stopped: {}", std::strerror(source.error()));
      break;
    }
    if (s == LineSource::kTooLong) {
      reader.too_long(length);
    } else {
      reader.line(line);
    }
  }
  return reader.finish(read_error);
}

// A regular file whose first byte past white space (and a byte order mark) is '{'.
bool looks_like_jsonl(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return false;
  char buf[4096];
  bool first = true;
  char c = 0;
  for (;;) {
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    size_t i = 0;
    if (first && got >= 3 && std::memcmp(buf, "\xEF\xBB\xBF", 3) == 0) i = 3;
    first = false;
    while (i < size_t(got) && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) ++i;
    if (i < size_t(got)) {
      c = buf[i];
      break;
    }
  }
  ::close(fd);
  return c == '{';
}

// The text of a packed (zstd) JSON Lines file (`cuprobe dump` output, facts): nullopt for
// anything else (a packed binary trace is TraceFile's to read); an error when it cannot be unpacked.
std::optional<Result<std::string>> packed_jsonl(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<Result<std::string>> text;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && zstd::fd_has_magic(fd)) {
    std::string head = zstd::peek_fd(fd, 64);
    size_t i = head.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
    while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
    if (i < head.size() && head[i] == '{') {
      auto u = zstd::unpack_fd(fd, path, zstd::default_unpack_limit());
      if (u) {
        text.emplace(std::string(u->base, u->size));
        munmap(u->base, u->size);
      } else {
        text.emplace(u.error());
      }
    }
  }
  ::close(fd);
  return text;
}

// How long reading a FIFO waits for something to write into it.
#ifndef CUPROBE_FIFO_WAIT_MS
#define CUPROBE_FIFO_WAIT_MS 10000
#endif
constexpr int kFifoWaitMs = CUPROBE_FIFO_WAIT_MS;

Result<std::vector<std::unique_ptr<Trace>>> read_jsonl(const std::string& path) {
  if (path == "-") {
    LineSource source(0);
    return read_lines(source, "<stdin>");
  }
  // Opened without blocking: a FIFO nobody writes to would otherwise wait forever in open().
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Error{fmt::format("{}: cannot open: {}", path, std::strerror(errno))};
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
    // Waits for a writer (a FIFO reports no hang-up before one has come and gone) for as long
    // as kFifoWait; then reads as it arrives.
    pollfd p{fd, POLLIN, 0};
    int ready;
    do {
      ready = poll(&p, 1, kFifoWaitMs);
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) {
      ::close(fd);
      return Error{fmt::format("{}: a FIFO that nothing wrote to within {} s; start the writer first "
                               "(cuprobe dump RUN > {}) or read standard input (cuprobe dump RUN | cuprobe analyze -)",
                               path, kFifoWaitMs / 1000, path)};
    }
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  LineSource source(fd);
  auto out = read_lines(source, path);
  ::close(fd);
  return out;
}

}  // namespace

Result<std::vector<std::unique_ptr<Trace>>> read_jsonl_text(const std::string& text, const std::string& name) {
  LineSource source{std::string_view(text)};
  return read_lines(source, name);
}

Result<std::vector<std::unique_ptr<Trace>>> open_traces(const std::string& path) {
  // A pipe, FIFO or socket can be read once only, and only as JSON Lines (a binary trace is
  // mapped): no look at its first byte first.
  struct stat st{};
  bool stream = path == "-" || (::stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)));
  if (stream || looks_like_jsonl(path)) return read_jsonl(path);
  if (auto text = packed_jsonl(path)) {
    if (!*text) return text->error();
    return read_jsonl_text(**text, path);
  }
  auto t = TraceFile::open(path);
  if (!t) return t.error();
  std::vector<std::unique_ptr<Trace>> out;
  out.push_back(std::move(*t));
  return out;
}

}  // namespace cuprobe::reader
