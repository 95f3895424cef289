// The analysis driver and the report; see engine.h.
#include "analysis/engine.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "analysis/call_site_text.h"
#include "analysis/common.h"
#include "analysis/facts_io.h"
#include "analysis/pinning.h"
#include "analysis/rank_groups.h"
#include "analysis/search_budget.h"
#include "utf8.h"

namespace cuprobe::analysis {

using nlohmann::json;

namespace {

// A finding about a process whose trace lacks part of its routine calls (flight recorder, capture
// window) says which part of the run it rests on: in its message and as evidence.coverage.
void note_coverage(const AllFacts& all, std::vector<Finding>& findings) {
  std::map<uint32_t, const ProcessFacts*> partial;
  for (const ProcessFacts& p : all.processes) {
    if (p.trace != nullptr && p.trace->coverage().partial()) partial[p.pid] = &p;
  }
  if (partial.empty()) return;
  for (Finding& f : findings) {
    std::vector<const ProcessFacts*> concerned;
    if (f.pids.empty()) {
      for (const auto& [pid, p] : partial) concerned.push_back(p);
    } else {
      for (uint32_t pid : f.pids) {
        if (auto it = partial.find(pid); it != partial.end()) concerned.push_back(it->second);
      }
    }
    if (concerned.empty()) continue;
    json cov = json::array();
    std::string text;
    for (const ProcessFacts* p : concerned) {
      std::string what = coverage_text(*p);
      cov.push_back({{"pid", p->pid}, {"text", what}});
      if (cov.size() <= 2) text += fmt::format("{}{}: {}", text.empty() ? "" : "; ", process_label(*p), what);
    }
    if (cov.size() > 2) text += fmt::format("; and {} more processes", cov.size() - 2);
    f.evidence["coverage"] = cov;
    f.message += fmt::format(" [Rests on partial traces: {}.]", text);
  }
}

// A launcher: a process without a rank that made no CUDA work (facts.h did_work: no device
// memory, copy, launch, synchronization or cuDNN handle, plan or execution; what it recorded
// were an import's device queries) and ended cleanly or was still running: torchrun's agent, a
// script that only starts the workers, a helper process. One that died is not: it may be a
// worker that failed before its first work. Only in a job where some process did work.
bool is_launcher(const ProcessFacts& p, bool job_did_work) {
  trace::FileState state = p.trace->state();
  return job_did_work && !p.did_work && p.rank < 0 &&
         (state == trace::FileState::kExited || state == trace::FileState::kExeced ||
          state == trace::FileState::kSnapshot);
}

// One process's entry of summary.per_process (docs/analyze-json.md).
json process_json(const ProcessFacts& p, bool launcher) {
  const reader::Trace& t = *p.trace;
  json mem = json::array();
  for (const auto& [d, m] : p.memory) {
    json owners = json::object();
    for (const auto& [owner, bytes] : m.live_by_owner) owners[owner] = bytes;
    json entry = {{"device", d},
                  {"allocated", m.allocated},
                  {"allocations", m.allocations},
                  {"peak", m.peak},
                  {"physical_peak", m.physical_peak},
                  {"reserved_peak", m.reserved_peak},
                  {"peak_by_owner", owners},
                  {"device_memory", m.total_mem}};
    auto c = p.coverage.find(d);
    if (c != p.coverage.end()) {
      entry["samples"] = c->second.samples;
      entry["unaccounted"] = c->second.max_unaccounted;
    }
    mem.push_back(std::move(entry));
  }
  std::string state = t.state() == trace::FileState::kSignaled   ? fmt::format("signal {}", t.end_signal())
                      : t.state() == trace::FileState::kSnapshot ? "running (snapshot)"
                                                                 : reader::name_of(t.state());
  std::string cmd;
  for (const auto& a : t.process().cmdline) cmd += (cmd.empty() ? "" : " ") + a;
  json coverage = nullptr;
  if (const reader::Coverage& c = t.coverage(); c.ring_bytes != 0 || c.window) {
    auto at = [&](uint64_t ns) { return since_trace_start(t, ns); };
    coverage = {{"keep", reader::keep_name(c.keep)},
                {"ring_bytes", c.ring_bytes},
                {"ring_started_s", c.ring_started_ns ? json(at(c.ring_started_ns)) : json(nullptr)},
                {"overwritten_calls", c.overwritten_calls},
                {"overwritten_records", c.overwritten_records},
                {"overwritten_counted", c.overwritten_counted},
                {"complete_from_s", c.overwritten() ? json(at(c.overwritten_last_ns)) : json(0.0)},
                {"text", coverage_text(p)}};
    if (c.window) {
      coverage["window_from_s"] = at(c.window_lo_ns);
      coverage["window_to_s"] = c.window_hi_ns == UINT64_MAX ? json(nullptr) : json(at(c.window_hi_ns));
      coverage["outside_window_calls"] = c.outside_window_calls;
      if (!c.window_marker.empty()) {
        coverage["window_marker"] = c.window_marker;
        coverage["window_marker_opens"] = c.window_marker_opens;
      }
    }
  }
  return {{"pid", p.pid},
          {"host", p.host},
          {"rank", p.rank},
          {"rank_source", p.rank_source},
          {"label", process_label(p)},
          {"device", p.device},
          {"command", utf8::truncate(cmd, 160)},
          {"events", p.events},
          {"duration_s",
           p.last_ns > p.first_ns ? seconds(p.last_ns - p.first_ns) : 0.0},  // the process's, start-up included
          {"state", state},
          {"searches", p.searches.size()},
          {"memory", mem},
          {"dropped_events", t.stat(trace::kStatDroppedEvents)},
          {"kept_dropped", t.stat(trace::kStatKeptDropped)},
          {"coverage", coverage},
          {"pinning", pin_json(pin_summary(p))},
          {"search_budget", budget_json(budget_summary(p))},
          {"program", program_name(t.process().cmdline)},
          {"launcher", launcher}};
}

// After an injected fault (issue 32): the first injection in the job (which process, call and
// rule, when), and how each process that did work ended, with how long after it — what a chaos
// test asks of a job (did the other ranks stop, were they killed, did the agent start new ones).
// null when nothing was injected.
// "killed by signal 6 (SIGABRT)": the name for the signals a job's processes end by.
std::string signal_text(int sig) {
  const char* name = sig == 6    ? "SIGABRT"
                     : sig == 15 ? "SIGTERM"
                     : sig == 2  ? "SIGINT"
                     : sig == 9  ? "SIGKILL"
                     : sig == 11 ? "SIGSEGV"
                     : sig == 7  ? "SIGBUS"
                     : sig == 1  ? "SIGHUP"
                                 : nullptr;
  return name ? fmt::format("killed by signal {} ({})", sig, name) : fmt::format("killed by signal {}", sig);
}

// Seconds from `from` to `to` (wall nanoseconds), negative when before.
double seconds_from(uint64_t to, uint64_t from) {
  return to >= from ? double(to - from) / 1e9 : -double(from - to) / 1e9;
}

json chaos_json(const AllFacts& all, bool job_did_work) {
  const ProcessFacts* first = nullptr;
  const InjectedFault* fault = nullptr;
  uint64_t first_wall = UINT64_MAX;
  for (const ProcessFacts& p : all.processes) {
    for (const InjectedFault& f : p.injected) {
      uint64_t w = p.trace->wall_ns(f.ts_ns);
      if (w < first_wall) {
        first_wall = w;
        first = &p;
        fault = &f;
      }
    }
  }
  if (first == nullptr) return nullptr;
  std::string rule;
  for (const FaultRuleFacts& r : first->fault_rules) {
    if (r.index == fault->rule) rule = r.name;
  }
  json ends = json::array();
  // When each rank's processes ended (wall), to tell a restarted rank's new process.
  std::multimap<int, uint64_t> rank_ends;
  for (const ProcessFacts& p : all.processes) {
    if (p.rank >= 0) rank_ends.emplace(p.rank, p.trace->wall_ns(p.last_ns));
  }
  for (const ProcessFacts& p : all.processes) {
    // A process that did no device work is a launcher or a helper, unless the fault hit it or it
    // aborted a communicator (a process of NCCL calls only, such as the doubles' tests).
    bool involved = !p.injected.empty() || p.nccl_abort_ns != 0;
    if (!involved && (is_launcher(p, job_did_work) || !p.did_work)) continue;
    const reader::Trace& t = *p.trace;
    uint64_t start = t.wall_ns(p.first_ns), end = t.wall_ns(p.last_ns);
    // What the ending says about the job, where it says something: a watchdog's teardown, a
    // process another one stopped, a rank's new process.
    std::string meaning;
    const bool signaled = t.state() == trace::FileState::kSignaled;
    bool restart = false;
    if (start > first_wall && p.rank >= 0) {
      auto [lo, hi] = rank_ends.equal_range(p.rank);
      for (auto it = lo; it != hi; ++it) restart = restart || (it->second <= start && it->second >= first_wall);
    }
    if (restart) {
      meaning = fmt::format(
          "a new process of rank {}, started after one of that rank ended (a launcher's restart: "
          "torchrun's elastic agent)",
          p.rank);
    } else if (signaled && t.end_signal() == 6 && p.nccl_abort_ns != 0) {
      meaning =
          "its NCCL watchdog gave up (it aborted the communicator after a collective timed out or failed) "
          "and tore the process down";
    } else if (signaled && t.end_signal() == 15 && p.injected.empty() && end >= first_wall) {
      meaning = "stopped from outside after the fault (a launcher stops the other ranks once one has failed)";
    }
    std::string how = t.state() == trace::FileState::kSignaled    ? signal_text(t.end_signal())
                      : t.state() == trace::FileState::kExited    ? "exited"
                      : t.state() == trace::FileState::kExeced    ? "replaced itself (exec)"
                      : t.state() == trace::FileState::kRecording ? "ended without a word (SIGKILL, or still running)"
                                                                  : reader::name_of(t.state());
    ends.push_back({{"process", process_label(p)},
                    {"rank", p.rank},
                    {"ended", how},
                    {"injected", p.injected.size()},
                    {"nccl_abort_after_s",
                     p.nccl_abort_ns ? json(seconds_from(t.wall_ns(p.nccl_abort_ns), first_wall)) : json(nullptr)},
                    {"started_after_s", start > first_wall ? json(double(start - first_wall) / 1e9) : json(nullptr)},
                    {"after_s", seconds_from(end, first_wall)},
                    {"meaning", meaning.empty() ? json(nullptr) : json(meaning)}});
  }
  return {{"first_injection",
           {{"process", process_label(*first)},
            {"rank", first->rank},
            {"api", fault->api},
            {"rule", rule},
            {"ret", fault->ret}}},
          {"ends", ends}};
}

json summarize(const AllFacts& all) {
  std::set<std::string> hosts;
  std::set<int> ranks;
  std::set<std::string> rank_sources;
  int unranked = 0;
  uint64_t events = 0, first_wall = UINT64_MAX, last_wall = 0;
  std::map<std::string, uint64_t> calls;
  json processes = json::array();
  json devices = json::array();
  std::set<std::string> device_keys;
  int unfinished = 0, searches = 0, launchers = 0;
  bool job_did_work =
      std::any_of(all.processes.begin(), all.processes.end(), [](const ProcessFacts& p) { return p.did_work; });
  // The fault plan's rules over the job, by name: what each matched, replaced, and what followed.
  std::map<std::string, json> fault_rules;
  std::vector<std::string> fault_order;
  for (size_t i = 0; i < all.processes.size(); ++i) {
    const ProcessFacts& p = all.processes[i];
    const reader::Trace& t = *p.trace;
    hosts.insert(p.host);
    if (p.rank >= 0) ranks.insert(p.rank);
    if (p.rank >= 0) rank_sources.insert(p.rank_source);
    if (p.rank < 0) ++unranked;
    events += p.events;
    searches += int(p.searches.size());
    if (p.events > 0) {
      first_wall = std::min(first_wall, t.wall_ns(p.first_ns));
      last_wall = std::max(last_wall, t.wall_ns(p.last_ns));
    }
    for (const auto& [api, n] : p.calls_by_api) calls[api] += n;
    if (t.state() == trace::FileState::kRecording) ++unfinished;
    bool launcher = is_launcher(p, job_did_work);
    launchers += launcher ? 1 : 0;
    processes.push_back(process_json(p, launcher));
    for (const FaultRuleFacts& r : p.fault_rules) {
      auto [it, fresh] = fault_rules.try_emplace(r.name, json{{"rule", r.name},
                                                              {"text", r.text},
                                                              {"memory_cap", r.mem_cap},
                                                              {"processes", 0},
                                                              {"matched", 0},
                                                              {"injected", 0},
                                                              {"outcomes", json::object()}});
      if (fresh) fault_order.push_back(r.name);
      json& j = it->second;
      j["processes"] = j["processes"].get<int>() + 1;
      // A rule aimed at a rank (rank=N, rank=random) is in force only where it holds: the ranks it
      // was in force on are where it aimed (with rank=random, its seed is in its text).
      if (p.rank >= 0 && r.text.find("rank=") != std::string::npos) j["ranks"].push_back(p.rank);
      j["matched"] = j["matched"].get<uint64_t>() + r.matched;
      j["injected"] = j["injected"].get<uint64_t>() + r.injected;
      for (const auto& [outcome, n] : r.outcomes) j["outcomes"][outcome] = j["outcomes"].value(outcome, uint64_t(0)) + n;
    }
    for (const auto& [d, dev] : t.devices()) {
      std::string key = p.host + "/" + dev.uuid;
      if (!device_keys.insert(key).second) continue;
      devices.push_back({{"host", p.host}, {"index", d}, {"name", dev.name}, {"uuid", dev.uuid},
                         {"pci_bus_id", dev.pci_bus_id}, {"total_mem", dev.total_mem}});
    }
  }
  std::vector<std::pair<uint64_t, std::string>> by_count;
  for (const auto& [api, n] : calls) by_count.emplace_back(n, api);
  std::sort(by_count.rbegin(), by_count.rend());
  json top = json::object();
  for (size_t k = 0; k < by_count.size() && k < 15; ++k) top[by_count[k].second] = by_count[k].first;
  return {{"processes", all.processes.size()},
          {"hosts", std::vector<std::string>(hosts.begin(), hosts.end())},
          {"ranks", std::vector<int>(ranks.begin(), ranks.end())},
          {"rank_sources", std::vector<std::string>(rank_sources.begin(), rank_sources.end())},
          {"unranked_processes", unranked},
          {"launcher_processes", launchers},
          {"devices", devices},
          {"duration_s", last_wall > first_wall ? double(last_wall - first_wall) / 1e9 : 0},
          {"events", events},
          {"searches", searches},
          {"unfinished_processes", unfinished},
          {"calls_by_api", top},
          {"faults",
           [&] {
             json out = json::array();
             for (const auto& name : fault_order) out.push_back(fault_rules[name]);
             return out;
           }()},
          {"per_process", processes},
          {"chaos", chaos_json(all, job_did_work)},
          {"rank_groups", rank_groups(all.processes, processes)}};
}

}  // namespace

// The program a process ran, as people call it: the script or module a Python interpreter ran
// ("torchrun" for "python3 /venv/bin/torchrun ...", "torch.distributed.run" for "python -m
// torch.distributed.run"), else the executable's file name.
std::string program_name(const std::vector<std::string>& argv) {
  auto base = [](const std::string& path) {
    size_t slash = path.find_last_of('/');
    return slash == std::string::npos || slash + 1 == path.size() ? path : path.substr(slash + 1);
  };
  if (argv.empty()) return "";
  std::string exe = base(argv[0]);
  if (exe.rfind("python", 0) != 0) return exe;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-m" && i + 1 < argv.size()) return argv[i + 1];
    if (a.rfind("-m", 0) == 0 && a.size() > 2) return a.substr(2);
    if (a.rfind("-c", 0) == 0 || a == "-") return exe;
    if (a == "-X" || a == "-W") {
      ++i;  // their argument
    } else if (a.empty() || a[0] != '-') {
      return base(a);
    }
  }
  return exe;
}

Result<Report> analyze(const AnalyzeOptions& options) {
  auto loaded = load_rules(options.rule_dirs);
  if (!loaded) return loaded.error();
  std::map<std::string, RuleSpec> rules = std::move(*loaded);
  for (const auto& s : options.settings) {
    auto r = apply_setting(rules, s);
    if (!r) return r.error();
  }
  for (const auto& id : options.only_rules) {
    if (!rules.count(id)) return Error{fmt::format("--rule {}: no such rule (see 'cuprobe rules')", id)};
  }

  Report report;
  auto opened = reader::open_all(options.paths, &report.warnings);
  if (!opened) return opened.error();
  std::vector<std::unique_ptr<reader::Trace>> traces = std::move(*opened);
  if (traces.empty()) {
    return Error{report.warnings.empty() ? "no trace could be read" : "no trace could be read: " + report.warnings[0]};
  }

  FactOptions fo;
  if (rules.count("research-storm")) fo.warmup_fraction = rules["research-storm"].param("warmup_fraction");
  AllFacts all;
  all.processes.resize(traces.size());
  unsigned workers = options.threads > 0 ? unsigned(options.threads) : std::max(1u, std::thread::hardware_concurrency());
  workers = std::min<unsigned>(workers, unsigned(traces.size()));
  std::atomic<size_t> next{0};
  std::vector<std::string> unreadable(traces.size());  // facts files' facts that could not be read
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < traces.size();) {
      auto f = facts_of(*traces[i], fo);
      if (f) {
        all.processes[i] = std::move(*f);
      } else {
        unreadable[i] = f.error().message;
      }
      traces[i]->release_events();  // resident memory stays at about one trace per worker
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (size_t i = traces.size(); i-- > 0;) {
    if (unreadable[i].empty()) continue;
    report.warnings.push_back(unreadable[i] + "; that process is left out");
    all.processes.erase(all.processes.begin() + long(i));
  }
  if (all.processes.empty()) return Error{"no process could be read: " + report.warnings.back()};
  // Reports list processes (and rules visit them) in an order that does not depend on file names
  // or pids alone: by rank, then by host, device and pid (analysis/common.h).
  std::stable_sort(all.processes.begin(), all.processes.end(), process_before);
  // After the pass: reading the calls can add to what the reader found (a file that changed).
  for (const auto& x : traces) {
    for (const auto& d : x->diagnostics()) report.warnings.push_back(fmt::format("{}: {}", x->path(), d));
  }

  reader::Symbolizer symbols(options.symbol_dirs);
  all.symbols = &symbols;
  for (const auto& [id, spec] : rules) {
    if (!options.only_rules.empty() &&
        std::find(options.only_rules.begin(), options.only_rules.end(), id) == options.only_rules.end()) {
      continue;
    }
    rule_registry().at(id)(spec, all, [&](Finding f) { report.findings.push_back(std::move(f)); });
  }
  note_coverage(all, report.findings);
  std::stable_sort(report.findings.begin(), report.findings.end(), finding_before);
  report.summary = summarize(all);
  for (const ProcessFacts& p : all.processes) {
    ProcessTimes t;
    t.pid = p.pid;
    t.host = p.host;
    t.label = process_label(p);
    t.rank = p.rank;
    t.job_start_wall_ns = p.trace->wall_ns(p.job_start_ns ? p.job_start_ns : p.first_ns);
    t.step_wall_ns.reserve(p.step_starts.size());
    for (uint64_t s : p.step_starts) t.step_wall_ns.push_back(p.trace->wall_ns(s));
    report.processes.push_back(std::move(t));
  }
  return report;
}

bool finding_before(const Finding& a, const Finding& b) {
  if (a.run_event != b.run_event) return a.run_event > b.run_event;
  if (a.severity != b.severity) return a.severity > b.severity;
  return a.impact_s > b.impact_s;
}

json findings_json(const std::vector<Finding>& findings) {
  json out = json::array();
  for (const auto& f : findings) {
    out.push_back({{"rule", f.rule},
                   {"severity", severity_name(f.severity)},
                   {"title", f.title},
                   {"message", f.message},
                   {"evidence", f.evidence},
                   {"problems", f.problems},
                   {"call_sites", f.call_sites},
                   {"pids", f.pids},
                   {"impact_s", f.impact_s},
                   {"run_event", f.run_event == RunEvent::kEndedRun  ? "ended the run"
                                 : f.run_event == RunEvent::kFailure ? "failure"
                                                                     : ""},
                   {"fix", f.fix}});
  }
  return out;
}

json terminal_json(const json& j) {
  if (j.is_string()) return utf8::terminal_safe(j.get_ref<const std::string&>());
  if (j.is_array()) {
    json a = json::array();
    for (const auto& e : j) a.push_back(terminal_json(e));
    return a;
  }
  if (j.is_object()) {
    json o = json::object();
    for (auto it = j.begin(); it != j.end(); ++it) o[utf8::terminal_safe(it.key())] = terminal_json(it.value());
    return o;
  }
  return j;
}

namespace {

// The report with every text that can hold a trace's bytes made safe for a terminal. A finding's
// message is one line (no rule writes a line break), so a line break in it came from a trace.
Report for_terminal(const Report& raw) {
  Report r = raw;
  r.summary = terminal_json(raw.summary);
  for (auto& w : r.warnings) w = utf8::terminal_safe(w);
  for (auto& f : r.findings) {
    f.title = utf8::terminal_safe(f.title);
    f.message = utf8::terminal_safe(f.message);
    f.fix = utf8::terminal_safe(f.fix);
    f.evidence = terminal_json(f.evidence);
    for (auto& p : f.problems) p = utf8::terminal_safe(p);
    for (auto& c : f.call_sites) c = utf8::terminal_safe(c);
  }
  return r;
}

// The ranks line, and the line counting processes without one (docs/analyze-json.md#ranks).
void print_ranks(FILE* out, const json& s) {
  if (!s["ranks"].empty()) {
    std::vector<int> list;
    for (const auto& k : s["ranks"]) list.push_back(k.get<int>());
    std::string ranks = rank_ranges(list);
    std::string from;
    for (const auto& src : s.value("rank_sources", json::array())) {
      std::string name = src == "env"    ? "the launcher's variables"
                         : src == "nccl" ? "NCCL communicators"
                                         : src.get<std::string>();
      from += (from.empty() ? "" : " and ") + name;
    }
    fmt::print(out, "  ranks: {}{}\n", ranks, from.empty() ? "" : " (from " + from + ")");
  }
  // Launchers have no rank either; they are counted on a line of their own.
  int launchers = s.value("launcher_processes", 0), listed = s["processes"].get<int>() - launchers;
  if (int n = s.value("unranked_processes", 0) - launchers; n > 0 && listed > 1) {
    fmt::print(out, "  {} process{} without a rank (no RANK variable, no NCCL communicator seen): named by host, "
                    "device and pid\n", n, n == 1 ? "" : "es");
  }
}

// A process's line of the summary: its events, span, end, searches and memory.
void print_process(FILE* out, const json& p) {
  std::string mem;
  for (const auto& m : p["memory"]) {
    mem += fmt::format("{}device {}: {} allocated, peak {}", mem.empty() ? "" : "; ", m["device"].get<int>(),
                       human_bytes(m["allocated"].get<uint64_t>()), human_bytes(m["peak"].get<uint64_t>()));
    std::map<std::string, uint64_t> by_owner;
    for (auto it = m["peak_by_owner"].begin(); it != m["peak_by_owner"].end(); ++it) by_owner[it.key()] = it.value();
    // Owners are worth naming unless all there is to say is "unknown".
    std::string split = owners_text(by_owner);
    bool only_unknown = split.rfind("unknown ", 0) == 0 && split.find(", ") == std::string::npos;
    if (!split.empty() && !only_unknown) mem += " (" + split + ")";
    if (m.value("reserved_peak", uint64_t(0)) != 0) {
      mem += fmt::format(", {} of address space reserved", human_bytes(m["reserved_peak"].get<uint64_t>()));
    }
  }
  fmt::print(out, "  {}: {} events, {}, {}, {} searches{}{}\n", p["label"].get<std::string>(), p["events"].get<uint64_t>(), seconds_text(p["duration_s"].get<double>()), p["state"].get<std::string>(),
             p["searches"].get<int>(), mem.empty() ? "" : "; " + mem, "");
  if (const json& c = p["coverage"]; c.is_object() && !c["text"].get<std::string>().empty()) {
    fmt::print(out, "    trace holds: {}\n", c["text"].get<std::string>());
  }
  if (const json& c = p["pinning"]; c.is_object()) fmt::print(out, "    plan pinning: {}\n", c["text"].get<std::string>());
  if (const json& c = p["search_budget"]; c.is_object()) fmt::print(out, "    {}\n", c["text"].get<std::string>());
}

// "1 process without CUDA work (a launcher or helper: torchrun, pid 123) not listed": the processes the
// summary marks as launchers, named by program and pid (and host in a job of several), the first
// few of them.
void print_launchers(FILE* out, const json& s) {
  constexpr size_t kNamed = 3;
  std::vector<std::string> named;
  size_t n = 0;
  for (const auto& p : s["per_process"]) {
    if (!p.value("launcher", false)) continue;
    if (++n > kNamed) continue;
    std::string program = p.value("program", "");
    std::string where = s["hosts"].size() > 1 ? " on host " + p["host"].get<std::string>() : "";
    named.push_back(fmt::format("{}{}pid {}{}", program, program.empty() ? "" : ", ", p["pid"].get<uint32_t>(), where));
  }
  if (n == 0) return;
  std::string list;
  for (const auto& x : named) list += (list.empty() ? "" : "; ") + x;
  if (n > named.size()) list += fmt::format("; and {} more", n - named.size());
  // Launchers (torchrun's agent) and helpers (torch.compile's workers) alike.
  fmt::print(out, "  {} process{} without CUDA work (a launcher or helper: {}) not listed\n", n, n == 1 ? "" : "es", list);
}

}  // namespace

// The processes of a job of many (summary.rank_groups): each group of processes alike on one line,
// then the outliers with what makes each differ, the first kOutliersShown of them.
void print_groups(FILE* out, const json& rg) {
  constexpr size_t kOutliersShown = 20;
  for (const auto& g : rg["groups"]) {
    if (g["count"].get<size_t>() == 0) continue;
    std::string who = g["ranks"].get<std::string>().empty() ? "" : "ranks " + g["ranks"].get<std::string>();
    if (size_t u = g["unranked"].get<size_t>())
      who += fmt::format("{}{} without a rank", who.empty() ? "" : " and ", u);
    std::string mem;
    for (const auto& m : g["memory"]) {
      uint64_t lo = m["peak_min"], hi = m["peak_max"];
      mem += fmt::format("; device {} peak {}", m["device"].get<int>(),
                         lo == hi ? human_bytes(hi) : human_bytes(lo) + " to " + human_bytes(hi));
    }
    const json& ev = g["events"];
    const json& du = g["duration_s"];
    fmt::print(out, "  {} of {} processes alike ({} on {} host{}): {}, {}, {} searches, {} problems, {} events, {}{}\n",
               g["count"].get<size_t>(), rg["processes"].get<size_t>(), who, g["hosts"].get<size_t>(),
               g["hosts"].get<size_t>() == 1 ? "" : "s", g["program"].get<std::string>(), g["state"].get<std::string>(),
               g["searches"].get<size_t>(), g["problems"].get<size_t>(),
               ev["min"] == ev["max"] ? fmt::format("{}", ev["min"].get<uint64_t>())
                                      : fmt::format("{} to {}", ev["min"].get<uint64_t>(), ev["max"].get<uint64_t>()),
               du["min"] == du["max"]
                   ? seconds_text(du["min"].get<double>())
                   : seconds_text(du["min"].get<double>()) + " to " + seconds_text(du["max"].get<double>()),
               mem);
  }
  const json& o = rg["outliers"];
  if (!o.empty()) {
    fmt::print(out, "  {} outlier{} (each against the processes alike):\n", o.size(), o.size() == 1 ? "" : "s");
    for (size_t i = 0; i < o.size() && i < kOutliersShown; ++i) {
      std::string why;
      for (const auto& w : o[i]["differs"]) why += (why.empty() ? "" : "; ") + w.get<std::string>();
      fmt::print(out, "    {}: {}\n", o[i]["label"].get<std::string>(), why);
    }
    if (o.size() > kOutliersShown) fmt::print(out, "    and {} more\n", o.size() - kOutliersShown);
  }
  fmt::print(out, "  (cuprobe analyze --per-rank lists every process; --json keeps them all)\n");
}

// The devices of the summary: one line each, or in a job of many, one line per kind of device.
void print_devices(FILE* out, const json& s) {
  constexpr size_t kEach = 8;
  if (s["devices"].size() <= kEach) {
    for (const auto& d : s["devices"]) {
      fmt::print(out, "  device: {} {} {} ({}, {})\n", d["host"].get<std::string>(), d["index"].get<int>(),
                 d["name"].get<std::string>(), human_bytes(d["total_mem"].get<uint64_t>()),
                 d["uuid"].get<std::string>());
    }
    return;
  }
  std::map<std::pair<std::string, uint64_t>, std::pair<size_t, std::set<std::string>>> kinds;
  for (const auto& d : s["devices"]) {
    auto& k = kinds[{d["name"].get<std::string>(), d["total_mem"].get<uint64_t>()}];
    ++k.first;
    k.second.insert(d["host"].get<std::string>());
  }
  for (const auto& [kind, n] : kinds) {
    fmt::print(out, "  devices: {} × {} ({}) on {} host{}\n", n.first, kind.first, human_bytes(kind.second),
               n.second.size(), n.second.size() == 1 ? "" : "s");
  }
}

void print_report(const Report& raw, bool color, FILE* out, bool per_rank) {
  const Report r = for_terminal(raw);
  auto paint = [&](const char* code, const std::string& s) {
    return color ? fmt::format("\033[{}m{}\033[0m", code, s) : s;
  };
  const json& s = r.summary;
  fmt::print(out, "{}\n", paint("1", "cuprobe analysis"));
  std::string hosts;
  constexpr size_t kHostsNamed = 6;
  for (size_t i = 0; i < s["hosts"].size() && i < kHostsNamed; ++i) {
    hosts += (hosts.empty() ? "" : ", ") + s["hosts"][i].get<std::string>();
  }
  if (s["hosts"].size() > kHostsNamed) hosts += fmt::format(" and {} more", s["hosts"].size() - kHostsNamed);
  fmt::print(out, "  {} process{} on {} host{} ({}), {} events over {}\n", s["processes"].get<int>(),
             s["processes"].get<int>() == 1 ? "" : "es", s["hosts"].size(), s["hosts"].size() == 1 ? "" : "s", hosts,
             s["events"].get<uint64_t>(), seconds_text(s["duration_s"].get<double>()));
  print_ranks(out, s);
  print_devices(out, s);
  std::string calls;
  for (auto it = s["calls_by_api"].begin(); it != s["calls_by_api"].end(); ++it) {
    calls += fmt::format("{}{} {}", calls.empty() ? "" : ", ", it.key(), it.value().get<uint64_t>());
  }
  fmt::print(out, "  calls: {}\n", calls);
  if (const json& rg = s["rank_groups"]; rg.is_object() && !per_rank) {
    print_groups(out, rg);
  } else {
    for (const auto& p : s["per_process"]) {
      if (!p.value("launcher", false)) print_process(out, p);
    }
  }
  print_launchers(out, s);
  if (!s["faults"].empty()) {
    fmt::print(out, "  fault injection (these failures were made by cuprobe; findings below leave them out "
                    "unless they explain a finding):\n");
    for (const auto& f : s["faults"]) {
      std::string next;
      for (auto it = f["outcomes"].begin(); it != f["outcomes"].end(); ++it) {
        next += fmt::format("{}{} {}×", next.empty() ? "" : ", ", it.key(), it.value().get<uint64_t>());
      }
      std::string aimed;
      if (f.contains("ranks"))
        aimed = fmt::format(" in force on rank {}:", fmt::join(f["ranks"].get<std::vector<int>>(), ", "));
      fmt::print(
          out, "    {} ({}):{} {} calls matched, {} injected{}\n", f["rule"].get<std::string>(),
          f["memory_cap"].get<bool>() ? "memory cap " + f["text"].get<std::string>() : f["text"].get<std::string>(),
          aimed, f["matched"].get<uint64_t>(), f["injected"].get<uint64_t>(),
          next.empty() ? "" : "; then the application: " + next);
    }
  }
  if (const json& c = s["chaos"]; c.is_object()) {
    const json& f = c["first_injection"];
    fmt::print(out, "    after the first injection ({} on {}, rule {}, returned {}), the processes ended:\n",
               f["api"].get<std::string>(), f["process"].get<std::string>(), f["rule"].get<std::string>(),
               f["ret"].get<int>());
    for (const auto& e : c["ends"]) {
      double after = e["after_s"].get<double>();
      std::string when = e["started_after_s"].is_number()
                             ? fmt::format("started {:.1f} s after it, ended {:.1f} s after it",
                                           e["started_after_s"].get<double>(), after)
                         : after >= 0 ? fmt::format("{:.1f} s after it", after)
                                      : fmt::format("{:.1f} s before it", -after);
      std::string abort;
      if (e["nccl_abort_after_s"].is_number()) {
        double a = e["nccl_abort_after_s"].get<double>();
        abort = fmt::format(
            "; it aborted its NCCL communicator {:.1f} s {} it (PyTorch's watchdog does so after a "
            "collective timed out or failed)",
            std::fabs(a), a >= 0 ? "after" : "before");
      }
      fmt::print(out, "      {}: {}, {}{}{}{}\n", e["process"].get<std::string>(), e["ended"].get<std::string>(), when,
                 e["injected"].get<uint64_t>() ? fmt::format(" ({} injected here)", e["injected"].get<uint64_t>()) : "",
                 abort, e["meaning"].is_string() ? ": " + e["meaning"].get<std::string>() : "");
    }
  }
  for (const auto& w : r.warnings) fmt::print(out, "  {} {}\n", paint("33", "note:"), w);
  fmt::print(out, "\n");
  if (r.findings.empty()) {
    fmt::print(out, "{}\n", paint("32", "No findings."));
    return;
  }
  fmt::print(out, "{}\n", paint("1", fmt::format("{} finding{}", r.findings.size(), r.findings.size() == 1 ? "" : "s")));
  // A rule that found the same thing on many processes (a job of thousands of ranks): its first
  // kSameShown findings in full, the others on one line at the end, by rank (JSON has them all).
  constexpr size_t kSameShown = 3;
  std::map<std::string, size_t> shown;
  std::vector<std::string> folded_order;
  std::map<std::string, std::vector<const Finding*>> folded;
  std::map<uint32_t, int> rank_of_pid;
  for (const auto& p : s["per_process"]) rank_of_pid[p["pid"].get<uint32_t>()] = p["rank"].get<int>();
  for (const auto& f : r.findings) {
    std::string key = f.rule + "\x1f" + f.title;
    if (!per_rank && !f.pids.empty() && shown[key]++ >= kSameShown) {
      if (folded[key].empty()) folded_order.push_back(key);
      folded[key].push_back(&f);
      continue;
    }
    const char* code = f.severity == Severity::kError ? "1;31" : f.severity == Severity::kWarning ? "1;33" : "1;36";
    fmt::print(out, "\n{} {} {}{}\n", paint(code, fmt::format("[{}]", severity_name(f.severity))),
               paint("1", f.rule), f.title,
               f.impact_s > 0 ? fmt::format(" (estimated time lost: {})", seconds_text(f.impact_s)) : "");
    fmt::print(out, "  {}\n", f.message);
    for (const auto& p : f.problems) fmt::print(out, "    - {}\n", p);
    for (const auto& c : f.call_sites) fmt::print(out, "    at {}\n", short_call_site(c));
    if (!f.fix.empty()) fmt::print(out, "  {} {}\n", paint("32", "fix:"), f.fix);
  }
  for (const auto& key : folded_order) {
    const auto& more = folded[key];
    std::vector<int> ranks;
    std::vector<std::string> others;
    for (const Finding* f : more) {
      for (uint32_t pid : f->pids) {
        auto it = rank_of_pid.find(pid);
        if (it != rank_of_pid.end() && it->second >= 0) {
          ranks.push_back(it->second);
        } else if (others.size() < 8) {
          others.push_back(fmt::format("pid {}", pid));
        }
      }
    }
    std::string where = ranks.empty() ? "" : (ranks.size() == 1 ? "rank " : "ranks ") + rank_ranges(ranks);
    for (const auto& o : others) where += (where.empty() ? "" : ", ") + o;
    fmt::print(out, "\n{} {} more {} finding{} like those above ({}), on {}; --per-rank or --json shows each\n",
               paint("1", "..."), more.size(), more.front()->rule, more.size() == 1 ? "" : "s", more.front()->title,
               where);
  }
}

}  // namespace cuprobe::analysis
