// Traces read back from the JSON Lines `cuprobe dump` writes, so that traces can be filtered,
// anonymized or written by hand and analyzed again (`cuprobe dump X | cuprobe analyze -` gives
// the findings of `cuprobe analyze X`). The lines of one process may come from several dumps'
// worth of input; calls are grouped by their pid.
//
// Unlike the binary reader this one holds every call in memory. An "api" line describes an
// API (flags, fields); without one, flags come from cuprobe's own hook tables and fields from
// the keys the calls carry, so hand-written traces need no "api" lines.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api.h"
#include "trace/reader.h"

namespace cuprobe::reader {

namespace {

using nlohmann::json;

const std::set<std::string>& common_keys() {
  static const std::set<std::string> keys = {"type", "api",    "ret",    "ts_ns",    "dur_ns", "pid",
                                             "tid",  "device", "stream", "injected", "fault_k", "stack",
                                             "sample"};
  return keys;
}

uint32_t builtin_flags(const std::string& name) {
  for (const auto& a : kApis) {
    if (name == a.name) return a.flags;
  }
  return 0;
}

trace::Library builtin_library(const std::string& name) {
  for (const auto& a : kApis) {
    if (name == a.name) return a.library;
  }
  return name.rfind("cudnn", 0) == 0 ? trace::Library::kCudnn : trace::Library::kCudart;
}

uint64_t parse_hex(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 16); }

trace::FileState state_of(const std::string& s) {
  if (s == "exited") return trace::FileState::kExited;
  if (s == "signaled") return trace::FileState::kSignaled;
  if (s == "exec") return trace::FileState::kExeced;
  return trace::FileState::kRecording;
}

}  // namespace

class JsonlTrace : public Trace {
 public:
  JsonlTrace(std::string path, uint32_t pid) {
    path_ = std::move(path);
    pid_ = pid;
    process_.pid = pid;
  }

  void set_process(const json& j) {
    has_process_ = true;
    process_.pid = pid_;
    process_.ppid = j.value("ppid", 0u);
    process_.rank = j.value("rank", -1);
    process_.local_rank = j.value("local_rank", -1);
    process_.world_size = j.value("world_size", -1);
    process_.hostname = j.value("host", "");
    process_.exe = j.value("exe", "");
    process_.cwd = j.value("cwd", "");
    if (j.contains("cmdline")) process_.cmdline = j["cmdline"].get<std::vector<std::string>>();
    start_mono_ns_ = j.value("start_ns", uint64_t(0));
    start_real_ns_ = j.value("start_wall_ns", uint64_t(0));
    end_mono_ns_ = j.value("end_ns", uint64_t(0));
    state_ = state_of(j.value("state", "incomplete"));
    end_signal_ = j.value("signal", 0);
    thread_count_ = j.value("threads", size_t(0));
    for (uint32_t key = 1; key < 16; ++key) {
      if (const char* name = property_name(key); name && j.contains(name)) properties_[key] = j[name].get<int64_t>();
    }
    if (j.contains("devices")) {
      for (const auto& d : j["devices"]) {
        Device dev;
        dev.index = d.value("index", -1);
        dev.name = d.value("name", "");
        dev.total_mem = d.value("total_mem", uint64_t(0));
        dev.uuid = d.value("uuid", "");
        dev.pci_bus_id = d.value("pci_bus_id", "");
        dev.multiprocessors = d.value("multiprocessors", 0);
        std::string cc = d.value("cc", "0.0");
        std::sscanf(cc.c_str(), "%d.%d", &dev.cc_major, &dev.cc_minor);
        devices_[dev.index] = dev;
      }
    }
    if (j.contains("stats")) {
      for (uint32_t s = 0; s < trace::kStatCount; ++s) {
        if (trace::kStatNames[s] && j["stats"].contains(trace::kStatNames[s])) {
          stats_[s] = j["stats"][trace::kStatNames[s]].get<uint64_t>();
        }
      }
    }
    if (j.contains("cudnn_handles")) {
      for (const auto& h : j["cudnn_handles"]) {
        handles_.push_back(CudnnHandle{parse_hex(h.value("handle", "0x0")), h.value("device", -1), h.value("tid", 0u)});
      }
    }
  }

  void add_api(const json& j) {
    Api a;
    a.name = j.value("name", "");
    a.flags = j.value("flags", builtin_flags(a.name));
    a.library = j.contains("library") ? library_from(j["library"].get<std::string>()) : builtin_library(a.name);
    a.count_slot = -1;
    std::string spec = j.value("fields", "");
    size_t start = 0;
    while (start < spec.size()) {
      size_t end = spec.find(',', start);
      if (end == std::string::npos) end = spec.size();
      std::string item = spec.substr(start, end - start);
      size_t colon = item.find(':');
      a.fields.push_back(Field{item.substr(0, colon), colon == std::string::npos ? 'u' : item[colon + 1]});
      start = end + 1;
    }
    api_ids_[a.name] = uint16_t(apis_.size());
    apis_.push_back(std::move(a));
  }

  void add_call(const json& j) {
    std::string name = j.value("api", "");
    uint16_t id = api_id(name);
    Api& a = apis_[id];
    // Fields this API's earlier lines did not have are appended to its field list.
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (common_keys().count(it.key()) || a.field_index(it.key()) >= 0) continue;
      if (it.key() == "size" && (a.flags & (trace::kApiDeviceFree | trace::kApiHostFree))) continue;  // derived
      char type = it->is_string() ? (it->get<std::string>().rfind("0x", 0) == 0 ? 'p' : 's')
                  : it->is_number_float() ? 'f'
                  : it->is_number_unsigned() ? 'u'
                                            : 'i';
      a.fields.push_back(Field{it.key(), type});
    }
    Stored e;
    e.api = id;
    e.ret = j.value("ret", 0);
    e.device = int16_t(j.value("device", -1));
    e.tid = j.value("tid", 0u);
    e.ts_ns = j.value("ts_ns", uint64_t(0));
    e.dur_ns = j.value("dur_ns", uint64_t(0));
    if (j.contains("stream")) {
      e.has_stream = true;
      e.stream = parse_hex(j["stream"].get<std::string>());
    }
    e.stack = j.value("stack", 0u);
    e.sample = j.value("sample", false);
    if (j.contains("injected")) {
      std::string rule = j["injected"].is_string() ? j["injected"].get<std::string>() : "";
      e.fault_rule = fault_rule_index(rule);
      e.fault_k = j.value("fault_k", uint64_t(0));
    }
    e.args = uint32_t(args_.size());
    e.nargs = uint16_t(a.fields.size());
    for (const Field& f : a.fields) {
      auto it = j.find(f.name);
      uint64_t v = 0;
      if (it != j.end()) {
        if (f.type == 's') {
          v = intern(it->get<std::string>());
        } else if (it->is_string()) {
          v = parse_hex(it->get<std::string>());
        } else if (f.type == 'f' || it->is_number_float()) {
          double d = it->get<double>();
          std::memcpy(&v, &d, sizeof v);
        } else if (it->is_number_integer()) {
          v = uint64_t(it->get<int64_t>());
        } else if (it->is_boolean()) {
          v = it->get<bool>() ? 1 : 0;
        }
      }
      args_.push_back(v);
    }
    events_.push_back(e);
    threads_.insert(e.tid);
    last_event_ns_ = std::max(last_event_ns_, e.ts_ns + e.dur_ns);
    ++call_records_;
  }

  void add_fault_rule(const json& j) {
    FaultRule r;
    r.index = j.value("index", -1);
    r.name = j.value("name", "");
    r.text = j.value("rule", "");
    r.scope = j.value("scope", "process") == "thread" ? 1 : 0;
    r.matched = j.value("matched", uint64_t(0));
    r.injected = j.value("injected", uint64_t(0));
    if (r.index < 0 || r.index >= trace::kFaultRuleSlots) r.index = next_free_rule_index();
    fault_rules_.push_back(std::move(r));
  }

  // Calls name their rule; a rule without a fault_rule line gets an index of its own.
  int fault_rule_index(const std::string& name) {
    for (const FaultRule& r : fault_rules_)
      if (r.name == name) return r.index;
    FaultRule r;
    r.index = name == "mem-cap" ? trace::kFaultRuleSlots - 1 : next_free_rule_index();
    r.name = name;
    fault_rules_.push_back(r);
    return r.index;
  }

  int next_free_rule_index() const {
    int i = 0;
    while (fault_rule(i) != nullptr && i < trace::kFaultRuleSlots - 2) ++i;
    return i;
  }

  void add_stack(const json& j) {
    Stack st;
    st.id = j.value("id", 0u);
    for (const auto& f : j.value("python", json::array())) {
      st.python.push_back(PyFrame{f.value("file", ""), f.value("function", ""), f.value("line", 0)});
    }
    for (const auto& f : j.value("native", json::array())) {
      st.pcs.push_back(f.contains("pc") ? parse_hex(f["pc"].get<std::string>()) : 0);
      st.resolved.push_back(f.value("text", ""));
    }
    stacks_[st.id] = std::move(st);
  }

  void add_count(const json& j) {
    counts_.push_back(Count{j.value("tid", 0u), api_id(j.value("api", "")), j.value("device", -1), j.value("calls", uint64_t(0))});
  }

  void add_crash(const json& j) {
    Crash c;
    c.signal = j.value("signal", 0);
    c.tid = j.value("tid", 0u);
    c.ts_ns = j.value("ts_ns", uint64_t(0));
    c.api_in_flight = j.value("api_in_flight", "");
    c.in_flight_start_ns = j.value("in_flight_since_ns", uint64_t(0));
    crashes_.push_back(c);
  }

  void done() {
    std::stable_sort(events_.begin(), events_.end(), [](const Stored& a, const Stored& b) {
      return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.tid < b.tid;
    });
    if (thread_count_ == 0) thread_count_ = threads_.size();
    if (!has_process_) note("no process line: this process's calls came without one");
  }

  void for_each_event(const std::function<void(const Event&)>& fn) const override {
    Event e;
    e.pid = pid_;
    for (const Stored& s : events_) {
      e.api = s.api;
      e.ret = s.ret;
      e.device = s.device;
      e.has_stream = s.has_stream;
      e.tid = s.tid;
      e.ts_ns = s.ts_ns;
      e.dur_ns = s.dur_ns;
      e.stream = s.stream;
      e.args = args_.data() + s.args;
      e.nargs = std::min<int>(s.nargs, int(apis_[s.api].fields.size()));
      e.fault_rule = s.fault_rule;
      e.fault_k = s.fault_k;
      e.stack = s.stack;
      e.sample = s.sample;
      fn(e);
    }
  }

 private:
  struct Stored {
    uint16_t api;
    int16_t device;
    int32_t ret;
    uint32_t tid;
    bool has_stream = false;
    uint16_t nargs;
    uint32_t args;
    uint64_t ts_ns;
    uint64_t dur_ns;
    uint64_t stream = 0;
    int fault_rule = -1;
    uint64_t fault_k = 0;
    uint32_t stack = 0;
    bool sample = false;
  };

  static trace::Library library_from(const std::string& s) {
    if (s == "cudnn") return trace::Library::kCudnn;
    if (s == "driver") return trace::Library::kDriver;
    if (s == "torch") return trace::Library::kTorch;
    return trace::Library::kCudart;
  }

  uint16_t api_id(const std::string& name) {
    auto it = api_ids_.find(name);
    if (it != api_ids_.end()) return it->second;
    Api a;
    a.name = name;
    a.flags = builtin_flags(name);
    a.library = builtin_library(name);
    api_ids_[name] = uint16_t(apis_.size());
    apis_.push_back(std::move(a));
    return uint16_t(apis_.size() - 1);
  }

  uint32_t intern(const std::string& s) {
    auto it = string_ids_.find(s);
    if (it != string_ids_.end()) return it->second;
    uint32_t id = uint32_t(string_ids_.size() + 1);
    string_ids_[s] = id;
    strings_[id] = s;
    return id;
  }

  std::map<std::string, uint16_t> api_ids_;
  std::map<std::string, uint32_t> string_ids_;
  std::vector<Stored> events_;
  std::vector<uint64_t> args_;
  std::set<uint32_t> threads_;
};

namespace {

bool looks_like_jsonl(const std::string& path) {
  if (path == "-") return true;
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c) && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
  }
  return c == '{';
}

Result<std::vector<std::unique_ptr<Trace>>> read_jsonl(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path);
    if (!file) return Error{fmt::format("{}: cannot open", path)};
    in = &file;
  }
  std::string name = path == "-" ? "<stdin>" : path;
  std::map<uint32_t, std::unique_ptr<JsonlTrace>> by_pid;
  std::vector<uint32_t> order;
  auto trace_of = [&](uint32_t pid) -> JsonlTrace& {
    auto& t = by_pid[pid];
    if (!t) {
      t = std::make_unique<JsonlTrace>(name, pid);
      order.push_back(pid);
    }
    return *t;
  };
  std::string line;
  size_t line_no = 0;
  while (std::getline(*in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const std::exception& e) {
      return Error{fmt::format("{} line {}: not JSON ({})", name, line_no, e.what())};
    }
    if (!j.is_object()) return Error{fmt::format("{} line {}: not a JSON object", name, line_no)};
    std::string type = j.value("type", "");
    uint32_t pid = j.value("pid", 0u);
    try {
      if (type == "process") {
        trace_of(pid).set_process(j);
      } else if (type == "api") {
        trace_of(pid).add_api(j);
      } else if (type == "call") {
        if (!j.contains("api")) return Error{fmt::format("{} line {}: a call without \"api\"", name, line_no)};
        trace_of(pid).add_call(j);
      } else if (type == "count") {
        trace_of(pid).add_count(j);
      } else if (type == "stack") {
        trace_of(pid).add_stack(j);
      } else if (type == "fault_rule") {
        trace_of(pid).add_fault_rule(j);
      } else if (type == "crash") {
        trace_of(pid).add_crash(j);
      }  // "search" lines are rebuilt from the calls; unknown types are skipped
    } catch (const std::exception& e) {
      return Error{fmt::format("{} line {}: {}", name, line_no, e.what())};
    }
  }
  std::vector<std::unique_ptr<Trace>> out;
  for (uint32_t pid : order) {
    by_pid[pid]->done();
    out.push_back(std::move(by_pid[pid]));
  }
  if (out.empty()) return Error{fmt::format("{}: no process or call lines", name)};
  return out;
}

}  // namespace

Result<std::vector<std::unique_ptr<Trace>>> open_traces(const std::string& path) {
  if (looks_like_jsonl(path)) return read_jsonl(path);
  auto t = TraceFile::open(path);
  if (!t) return t.error();
  std::vector<std::unique_ptr<Trace>> out;
  out.push_back(std::move(*t));
  return out;
}

}  // namespace cuprobe::reader
