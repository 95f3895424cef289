// `cuprobe dump`: prints run directories and trace files as JSON Lines (docs/trace-format.md,
// "JSON Lines"): per process one "process" line, its "api", "problem", "fault_rule", "module"
// and "stack" lines, its "call" lines in time order, then "search", "count", "pin" and "crash"
// lines (kHelp lists them). Anything unreadable is reported on stderr naming the file and
// where reading stopped; the exit status is 2 only when nothing at all could be read.
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "cli.h"
#include "cmds/dump_lines.h"
#include "cudnn_status.h"
#include "json_line.h"
#include "trace/jsonl_writer.h"
#include "trace/reader.h"
#include "trace/searches.h"
#include "trace/symbolize.h"

namespace cuprobe::cli {

namespace {

constexpr const char* kHelp = R"(Usage: cuprobe dump [options] PATH...

Prints traces as JSON Lines (docs/trace-format.md, "JSON Lines"). PATH is a run directory
(every *.cuprobe file in it), one trace file, or JSON Lines written by an earlier dump ("-" reads
them from standard input). Per process, in this order:

  process     who, where, devices, library versions, how it ended, what the shim counted as lost
  api         each API's flags and argument fields, so that the output describes itself
  problem     each distinct cuDNN problem: its text, hash and typed description
  fault_rule  when the process ran under a fault plan or a memory cap: each rule with the calls
              it matched and injected
  module      the files the process had mapped (written by the shim with stacks)
  stack       each distinct call stack: the innermost Python frames (file, function, line) and
              the native frames, symbolized here from the binaries (function, and file:line
              and the functions inlined code sits in where they have debug information)
  call        every recorded call, in time order
  search      each benchmark search or heuristic selection of a cuDNN plan, rebuilt from the
              calls: its problem, every candidate with its measured time, the winner, wall time
  count       calls of counted APIs such as kernel launches, per thread and device
  pin         when the process ran with a plan file: what plan pinning did for each selection
              ("outcome" pinned, not-offered, skipped, other-gpu, other-cudnn, other-alignment,
              pinned-failed or broken; "answered" when the shim answered the selection's
              heuristics query with the pinned configuration; docs/plan-pinning.md)
  crash       a fatal signal the process took, with the API in flight

Every call line has api, ret, ts_ns, dur_ns, pid, tid and device, stream when the call has
one, and the API's own argument fields (pointers as "0x..." strings). A free carries the size of
the allocation it releases when the trace holds it. A call the fault plan replaced carries
"injected" (the rule's name) and "fault_k" (its match number for that rule); a candidate plan
pinning failed fast (or a legacy search or heuristics query it answered) carries "pinned": true.
A memory sample the shim took itself (cudaMemGetInfo or cuMemGetInfo_v2 after allocations, at
failures and at exit) carries "sample": true. A call with a recorded call stack carries "stack":
the id of a stack line.

What cannot be read (damaged records, calls at impossible times, a file that changed while it
was read, entries of a run directory that are not regular files) is reported on standard error,
naming the file and where. Text that is not UTF-8 in the trace (a Latin-1 command line) is
written with U+FFFD in its place.

Options:
  --api NAME[,NAME...]  only call lines of these APIs (search lines still come from every call)
  --pid PID             only this process's lines
  --no-events           leave out problem, call and search lines
  --searches            leave out module, stack and call lines (search lines stay)
  --no-symbols          stacks as raw addresses (no symbolization)
  --symbols DIR         also look for the traced process's binaries and their debug files
                        (DIR/.build-id/NN/REST.debug too) under DIR (traces copied from another
                        machine); repeatable; CUPROBE_SYMBOLS=DIR:DIR too
  -h, --help            this text

Exit status: 0 when at least one trace could be read (also when --pid matched none of them),
2 for a usage error or when nothing at all could be read.
)";

struct Filter {
  std::set<std::string> apis;
  long pid = -1;
  bool events = true;
  bool calls = true;
  bool symbols = true;
  std::vector<std::string> symbol_dirs;
};

std::string string_array(const std::vector<std::string>& items) {
  std::string arr = "[";
  for (const auto& item : items) {
    if (arr.size() > 1) arr += ',';
    arr += JsonLine::quote(item);
  }
  return arr + "]";
}

void print_process(const reader::Trace& t, JsonLine& j, FILE* out) {
  const reader::Process& p = t.process();
  j.begin();
  j.str("type", "process");
  j.str("file", t.path());
  j.num("pid", t.pid());
  j.num("ppid", p.ppid);
  j.str("host", p.hostname);
  j.inum("rank", p.rank);
  j.inum("local_rank", p.local_rank);
  j.inum("world_size", p.world_size);
  j.raw("cmdline", string_array(p.cmdline));
  j.str("exe", p.exe);
  j.str("cwd", p.cwd);
  j.num("start_ns", t.start_ns());
  j.num("start_wall_ns", t.start_wall_ns());
  if (t.end_ns() != 0) j.num("end_ns", t.end_ns());
  j.num("last_event_ns", t.last_event_ns());
  j.str("state", reader::name_of(t.state()));
  if (t.state() == trace::FileState::kSignaled) j.inum("signal", t.end_signal());
  j.num("events", t.call_records());
  j.num("threads", t.thread_count());
  for (const auto& [key, value] : t.properties()) {
    if (const char* name = reader::property_name(key)) j.inum(name, value);
  }
  if (!p.environment.empty()) {
    JsonLine env;
    env.begin();
    for (const auto& [name, value] : p.environment) env.str(name.c_str(), value);
    j.raw("environment", env.finish());
  }
  if (!p.library_versions.empty()) {
    JsonLine v;
    v.begin();
    for (const auto& [name, value] : p.library_versions) v.str(name.c_str(), value);
    j.raw("library_versions", v.finish());
  }
  std::string devices = "[";
  for (const auto& [index, d] : t.devices()) {
    JsonLine dj;
    dj.begin();
    dj.inum("index", d.index);
    // A field the driver did not answer is absent, not printed as a made-up value.
    if (!d.name.empty()) dj.str("name", d.name);
    if (d.total_mem != 0) dj.num("total_mem", d.total_mem);
    if (!d.uuid.empty()) dj.str("uuid", d.uuid);
    if (!d.pci_bus_id.empty()) dj.str("pci_bus_id", d.pci_bus_id);
    if (d.cc_major >= 0 && d.cc_minor >= 0) dj.str("cc", fmt::format("{}.{}", d.cc_major, d.cc_minor));
    if (d.multiprocessors >= 0) dj.inum("multiprocessors", d.multiprocessors);
    if (devices.size() > 1) devices += ',';
    devices += dj.finish();
  }
  devices += ']';
  j.raw("devices", devices);
  if (!t.cudnn_handles().empty()) {
    std::string handles = "[";
    for (const auto& h : t.cudnn_handles()) {
      JsonLine hj;
      hj.begin();
      hj.hex("handle", h.handle);
      hj.inum("device", h.device);
      hj.num("tid", h.tid);
      if (handles.size() > 1) handles += ',';
      handles += hj.finish();
    }
    j.raw("cudnn_handles", handles + "]");
  }
  std::string stats = "{";
  for (uint32_t s = 0; s < trace::kStatCount; ++s) {
    if (trace::kStatNames[s] == nullptr) continue;
    if (stats.size() > 1) stats += ',';
    stats += fmt::format("\"{}\":{}", trace::kStatNames[s], t.stat(trace::Stat(s)));
  }
  stats += '}';
  j.raw("stats", stats);
  const reader::Coverage& cov = t.coverage();
  if (cov.ring_bytes != 0 || cov.window) {
    JsonLine cj;
    cj.begin();
    cj.str("keep", reader::keep_name(cov.keep));
    cj.num("ring_bytes", cov.ring_bytes);
    if (cov.ring_started_ns) cj.num("ring_started_ns", cov.ring_started_ns);
    cj.num("recycled_chunks", cov.recycled_chunks);
    cj.num("overwritten_records", cov.overwritten_records);
    cj.num("overwritten_calls", cov.overwritten_calls);
    cj.num("overwritten_counted", cov.overwritten_counted);
    if (cov.overwritten_first_ns) cj.num("overwritten_first_ns", cov.overwritten_first_ns);
    if (cov.overwritten_last_ns) cj.num("overwritten_last_ns", cov.overwritten_last_ns);
    if (cov.window) {
      cj.num("window_lo_ns", cov.window_lo_ns);
      if (cov.window_hi_ns != UINT64_MAX) cj.num("window_hi_ns", cov.window_hi_ns);
      cj.num("outside_window_calls", cov.outside_window_calls);
      if (!cov.window_marker.empty()) {
        cj.str("window_marker", cov.window_marker);
        cj.num("window_marker_opens", cov.window_marker_opens);
      }
    }
    j.raw("coverage", std::string(cj.finish()));
  }
  if (!t.diagnostics().empty()) j.raw("diagnostics", string_array(t.diagnostics()));
  j.end(out);
}

std::string candidate_json(const reader::SearchCandidate& c) {
  JsonLine j;
  j.begin();
  if (c.plan) j.num("plan", c.plan);
  j.inum("engine", c.engine);
  j.str("knobs", c.knobs);
  j.num("workspace", c.workspace);
  j.inum("build_status", c.build_status);
  if (const char* name = c.build_status != 0 ? cudnn_status_name(c.build_status) : nullptr) {
    j.str("build_status_name", name);
  }
  j.inum("exec_status", c.exec_status);
  if (const char* name = c.exec_status > 0 ? cudnn_status_name(c.exec_status) : nullptr) j.str("exec_status_name", name);
  j.inum("executions", c.executions);
  if (c.time_ms >= 0) j.dbl("time_ms", c.time_ms);
  if (c.notes) j.hex("notes", c.notes);
  if (c.injected) j.raw("injected", "true");
  return std::string(j.finish());
}

std::string search_json(const reader::SearchRecord& r) {
  JsonLine j;
  j.begin();
  j.str("type", "search");
  j.num("pid", r.pid);
  j.num("tid", r.tid);
  j.inum("device", r.device);
  j.str("api", r.function);
  j.str("mode", reader::name_of(r.mode));
  j.str("problem", r.problem);
  j.hex("problem_hash", r.problem_hash);
  if (r.stack) j.num("stack", r.stack);
  j.num("start_ns", r.start_ns);
  j.num("end_ns", r.end_ns);
  j.num("wall_ns", r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0);
  j.boolean("complete", r.complete);
  std::string cands = "[";
  for (const auto& c : r.candidates) {
    if (cands.size() > 1) cands += ',';
    cands += candidate_json(c);
  }
  j.raw("candidates", cands + "]");
  j.inum("winner", r.winner);
  if (r.winner >= 0) j.raw("chosen", candidate_json(r.candidates[size_t(r.winner)]));
  j.num("search_workspace", r.search_workspace);
  if (r.probes) {
    j.num("probe_bytes", r.probe_bytes);
    j.inum("probes", r.probes);
  }
  j.num("align", r.align);
  j.inum("plans_rejected", r.plans_rejected);
  return std::string(j.finish());
}

// A legacy search's results as a JSON list, in cuDNN's order.
std::string results_json(const reader::Trace& t, const std::vector<trace::AlgoResult>* results) {
  std::string out = "[";
  if (results != nullptr) {
    for (const trace::AlgoResult& r : *results) {
      if (out.size() > 1) out += ',';
      JsonLine j;
      j.begin();
      j.inum("algo", r.algo);
      j.inum("status", r.status);
      j.dbl("time_ms", double(r.time_ms));
      j.num("memory", r.memory);
      j.inum("determinism", r.determinism);
      j.inum("math", r.math_type);
      if (r.knobs != 0) j.str("knobs", t.knobs_text(reader::KnobsId(r.knobs)));  // a cuBLASLt configuration
      out += j.finish();
    }
  }
  return out + "]";
}

// The typed problems of the process (problem.h ProblemDesc, cuDNN's own enum values), each with
// its text, before the calls that name them by that text.
void print_problems(const reader::Trace& t, JsonLine& j, FILE* out) {
  for (const reader::Problem& p : t.problems()) {
    if (p.id == 0) continue;
    jsonl::write_problem_line(j, t.pid(), p.hash, p.text, p.typed ? &p.desc : nullptr, out);
  }
}

// The API table of the process, so that the JSON Lines describe themselves as the binary does.
void print_apis(const reader::Trace& t, JsonLine& j, FILE* out, const std::set<std::string>* only = nullptr) {
  for (size_t id = 0; id < t.apis().size(); ++id) {
    const reader::Api& a = t.apis()[id];
    if (a.name.empty()) continue;
    if (only != nullptr && !only->count(a.name)) continue;
    std::string fields;
    for (const auto& f : a.fields) fields += (fields.empty() ? "" : ",") + f.name + ":" + f.type;
    j.begin();
    j.str("type", "api");
    j.num("pid", t.pid());
    j.str("name", a.name);
    j.str("library", reader::library_name(a.library));
    j.num("flags", a.flags);
    j.str("fields", fields);
    j.end(out);
  }
}

void print_events(const reader::Trace& t, const Filter& filter, JsonLine& j, FILE* out) {
  // Device allocations still live, so that frees can say how much they release.
  std::unordered_map<uint64_t, uint64_t> live;
  std::vector<std::string> searches;
  reader::SearchTracker tracker(t, [&](const reader::SearchRecord& r) { searches.push_back(search_json(r)); });
  t.for_each_event([&](const reader::Event& e) {
    tracker.on_event(e);
    const reader::Api* api = t.api(e.api);
    const std::string& name = t.api_name(e.api);
    uint64_t flags = api ? api->flags : 0;
    int ptr_field = api ? api->field_index("ptr") : -1;
    // Physical memory (cuMemCreate/cuMemRelease) is named by a handle, kept apart from addresses.
    bool physical = (flags & trace::kApiPhysical) != 0;
    if (physical && api) ptr_field = api->field_index("handle");
    int size_field = api ? api->field_index("size") : -1;
    uint64_t ptr = ptr_field >= 0 && ptr_field < e.nargs ? e.args[ptr_field] : 0;
    if (physical && ptr) ptr |= 1ull << 63;
    uint64_t freed_size = 0;
    bool freed_known = false;
    if ((flags & (trace::kApiDeviceAlloc | trace::kApiHostAlloc)) && e.ret == 0 && size_field >= 0 && size_field < e.nargs && ptr) {
      live[ptr] = e.args[size_field];
    } else if ((flags & (trace::kApiDeviceFree | trace::kApiHostFree)) && ptr) {
      auto it = live.find(ptr);
      if (it != live.end()) {
        freed_size = it->second;
        freed_known = true;
        if (e.ret == 0) live.erase(it);
      }
    }
    if (!filter.calls || (!filter.apis.empty() && !filter.apis.count(name))) return;
    j.begin();
    j.str("type", "call");
    j.str("api", name);
    j.inum("ret", e.ret);
    j.num("ts_ns", e.ts_ns);
    j.num("dur_ns", e.dur_ns);
    j.num("pid", e.pid);
    j.num("tid", e.tid);
    j.inum("device", e.device);
    if (e.has_stream) j.hex("stream", e.stream);
    for (int i = 0; api != nullptr && i < e.nargs && size_t(i) < api->fields.size(); ++i) {
      const reader::Field& f = api->fields[size_t(i)];
      uint64_t v = e.args[i];
      switch (f.type) {
        case 'p':
        case 'x': j.hex(f.name, v); break;
        case 'i': j.inum(f.name, int64_t(v)); break;
        case 'f': {
          double d;
          std::memcpy(&d, &v, sizeof d);
          j.dbl(f.name, d);
          break;
        }
        case 's': j.str(f.name, t.string(reader::StringId(uint32_t(v)))); break;
        case 'q': {
          const reader::Problem* p = t.problem(reader::ProblemId(v));
          j.str(f.name, p ? p->text : "");
          break;
        }
        case 'k': j.str(f.name, t.knobs_text(reader::KnobsId(v))); break;
        case 'r': j.raw(f.name, results_json(t, t.algo_results(reader::AlgoResultsId(v)))); break;
        default: j.num(f.name, v);
      }
    }
    if (freed_known && size_field < 0) j.num("size", freed_size);
    if (e.stack) j.num("stack", e.stack);
    if (e.sample) j.raw("sample", "true");
    if (e.injected()) {
      const reader::FaultRule* rule = t.fault_rule(e.fault_rule);
      j.str("injected", rule ? rule->name : fmt::format("rule{}", e.fault_rule + 1));
      j.num("fault_k", e.fault_k);
    }
    if (e.pinned()) j.raw("pinned", "true");
    j.end(out);
  });
  tracker.finish();
  for (const auto& s : searches) std::printf("%s\n", s.c_str());
}

void print_fault_rules(const reader::Trace& t, JsonLine& j, FILE* out) {
  for (const auto& r : t.fault_rules()) {
    j.begin();
    j.str("type", "fault_rule");
    j.num("pid", t.pid());
    j.inum("index", r.index);
    j.str("name", r.name);
    j.str("rule", r.text);
    j.str("scope", r.scope == 1 ? "thread" : "process");
    j.num("matched", r.matched);
    j.num("injected", r.injected);
    j.end(out);
  }
}

// The files the process had mapped (the shim writes them with stacks): which copy of each
// library was loaded, for analyses that read a dump (env-drift).
void print_modules(const reader::Trace& t, JsonLine& j, FILE* out) {
  for (const auto& m : t.modules())
    jsonl::write_module_line(j, t.pid(), m.path, m.start, m.end, m.bias, m.build_id, out);
}

// Every distinct stack of the process, symbolized here (offline) unless --no-symbols.
void print_stacks(const reader::Trace& t, const Filter& filter, JsonLine& j, FILE* out) {
  if (t.stacks().empty()) return;
  reader::Symbolizer sym(filter.symbol_dirs);
  for (const auto& [id, st] : t.stacks()) {
    std::string py = "[";
    for (const auto& f : st.python) {
      JsonLine pj;
      pj.begin();
      pj.str("file", f.file);
      pj.str("function", f.function);
      pj.inum("line", f.line);
      py += (py.size() > 1 ? "," : "") + std::string(pj.finish());
    }
    std::string native = "[";
    for (size_t i = 0; i < st.pcs.size(); ++i) {
      JsonLine nj;
      nj.begin();
      nj.hex("pc", st.pcs[i]);
      if (i < st.resolved.size() && !st.resolved[i].empty()) {
        nj.str("text", st.resolved[i]);
      } else if (filter.symbols) {
        reader::Symbol s = sym.resolve(t, st.pcs[i]);
        nj.str("module", s.module);
        nj.hex("offset", s.offset);
        if (!s.function.empty()) nj.str("function", s.function);
        if (!s.file.empty()) {
          nj.str("file", s.file);
          nj.inum("line", s.line);
        }
        if (!s.inlined_into.empty()) {
          std::string calls = "[";
          for (const auto& f : s.inlined_into) {
            JsonLine cj;
            cj.begin();
            cj.str("function", f.function);
            if (!f.file.empty()) {
              cj.str("file", f.file);
              cj.inum("line", f.line);
            }
            calls += (calls.size() > 1 ? "," : "") + std::string(cj.finish());
          }
          nj.raw("inlined_into", calls + "]");
        }
        nj.str("text", reader::Symbolizer::text(s));
      }
      native += (native.size() > 1 ? "," : "") + std::string(nj.finish());
    }
    j.begin();
    j.str("type", "stack");
    j.num("pid", t.pid());
    j.num("id", id);
    j.raw("python", py + "]");
    j.raw("native", native + "]");
    j.end(out);
  }
}

void print_tail(const reader::Trace& t, JsonLine& j, FILE* out) {
  for (const auto& c : t.counts()) {
    j.begin();
    j.str("type", "count");
    j.str("api", t.api_name(c.api));
    j.num("pid", t.pid());
    j.num("tid", c.tid);
    j.inum("device", c.device);
    j.num("calls", c.calls);
    j.end(out);
  }
  for (const auto& p : t.pins()) {
    jsonl::PinLine l;
    l.pid = t.pid();
    l.tid = p.tid;
    l.ts_ns = p.ts_ns;
    l.outcome = trace::kPinOutcomeNames[uint32_t(p.outcome)];
    l.problem = t.problem(p.problem) ? t.problem(p.problem)->text : "";
    l.hash = p.problem_hash;
    l.engine = p.engine;
    if (p.knobs) l.knobs = t.knobs_text(p.knobs);
    l.legacy = p.legacy;
    l.answered = p.answered;
    l.pinned_ms = p.pinned_ms;
    l.search_ms = p.search_ms;
    l.replaced_ms = p.replaced_ms;
    l.moved = p.moved;
    l.no_fallback = p.no_fallback;
    jsonl::write_pin_line(j, l, out);
  }
  for (const auto& c : t.crashes()) {
    j.begin();
    j.str("type", "crash");
    j.num("pid", t.pid());
    j.num("tid", c.tid);
    j.inum("signal", c.signal);
    j.num("ts_ns", c.ts_ns);
    if (!c.api_in_flight.empty()) {
      j.str("api_in_flight", c.api_in_flight);
      j.num("in_flight_since_ns", c.in_flight_start_ns);
    }
    j.end(out);
  }
}

}  // namespace

void write_process_lines(const reader::Trace& t, FILE* out, const std::vector<std::string>& symbol_dirs, bool symbols,
                         const std::set<std::string>* apis) {
  Filter filter;
  filter.symbol_dirs = symbol_dirs;
  filter.symbols = symbols;
  JsonLine j;
  print_process(t, j, out);
  print_apis(t, j, out, apis);
  print_problems(t, j, out);
  print_fault_rules(t, j, out);
  print_modules(t, j, out);
  print_stacks(t, filter, j, out);
  print_tail(t, j, out);
}

int cmd_dump(const Args& args) {
  Filter filter;
  OptionParser options(kHelp);
  options.value("--api", [&](const std::string& list) {
    for (auto& name : split_commas(list)) filter.apis.insert(name);
  });
  options.value("--pid", [&](const std::string& v) { filter.pid = long(parse_count("--pid", v)); });
  options.flag("--no-events", [&] { filter.events = false; });
  options.flag("--searches", [&] { filter.calls = false; });  // process and search lines only
  options.flag("--no-symbols", [&] { filter.symbols = false; });
  options.value("--symbols", [&](const std::string& v) { filter.symbol_dirs.push_back(v); });
  std::vector<std::string> paths;
  if (!options.parse(args, &paths)) return kExitOk;
  if (paths.empty()) throw UsageError("no trace given; usage: cuprobe dump PATH...");
  int readable = 0;
  JsonLine j;
  for (const auto& path : paths) {
    std::vector<std::string> skipped;
    auto files = reader::find_trace_files(path, &skipped);
    for (const auto& note : skipped) fmt::print(stderr, "cuprobe dump: {}\n", note);
    if (!files) {
      fmt::print(stderr, "cuprobe dump: {}\n", files.error().message);
      continue;
    }
    for (const auto& file : *files) {
      auto traces = reader::open_traces(file);
      if (!traces) {
        fmt::print(stderr, "cuprobe dump: {}\n", traces.error().message);
        continue;
      }
      for (const auto& t : *traces) {
        ++readable;
        const reader::Trace& tf = *t;
        size_t told = tf.diagnostics().size();
        for (const auto& d : tf.diagnostics()) fmt::print(stderr, "cuprobe dump: {}: {}\n", file, d);
        if (filter.pid >= 0 && long(tf.pid()) != filter.pid) continue;
        print_process(tf, j, stdout);
        print_apis(tf, j, stdout);
        if (filter.events) print_problems(tf, j, stdout);
        print_fault_rules(tf, j, stdout);
        if (filter.calls) print_modules(tf, j, stdout);
        if (filter.calls) print_stacks(tf, filter, j, stdout);
        if (filter.events) print_events(tf, filter, j, stdout);
        print_tail(tf, j, stdout);
        // A pass over the calls can find more (the file changed while it was read).
        for (size_t k = told; k < tf.diagnostics().size(); ++k) {
          fmt::print(stderr, "cuprobe dump: {}: {}\n", file, tf.diagnostics()[k]);
        }
      }
    }
  }
  std::fflush(stdout);
  return readable > 0 ? kExitOk : kExitUsage;
}

}  // namespace cuprobe::cli
