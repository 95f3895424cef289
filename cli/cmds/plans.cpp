// `cuprobe plans export|show`: the cuDNN plans earlier runs chose, as a plan file that
// `cuprobe record --pin-plans` (CUPROBE_PIN_PLANS) replays (docs/plan-pinning.md, issue 16).
//
// A plan is the winner of one plan selection the trace rebuilt (reader::SearchTracker): for a
// problem (its signature hash; for the backend API also the smallest data alignment, which is part
// of PyTorch's cache key), on a GPU model and cuDNN version, the engine and knobs (backend) or the
// algorithm and math type (legacy), with the time its search measured. Several runs (every rank,
// every host) merge: where they chose differently, the plan with the shortest measured time wins
// (a benchmark winner before a heuristic pick) and the others are listed as conflicts.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/engine.h"
#include "analysis/facts.h"
#include "analysis/facts_io.h"
#include "cli.h"
#include "cmds/output_file.h"
#include "cmds/plans.h"
#include "cuprobe/trace_format.h"
#include "plan_pin_text.h"
#include "trace/reader.h"
#include "trace/searches.h"
#include "utf8.h"

namespace cuprobe::cli {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kHelp = R"HELP(Usage: cuprobe plans export [-o FILE] [--merge] RUN...
       cuprobe plans show FILE

export  writes the cuDNN plans the runs chose to FILE (default plans.json): for each problem, GPU
        model and cuDNN version, the plan its selection ended on (the benchmark winner where
        cudnn.benchmark searched, else the heuristic pick), with the time its search measured,
        what the search cost, and where it came from (run, rank, process). RUN is a run
        directory, a trace file or dump JSON Lines; several RUNs (all ranks, several jobs) merge,
        and where they chose differently the fastest measured plan wins and the others are
        listed as conflicts. --merge keeps FILE's plans and adds the runs' (the runs' plan wins
        only where it measured faster). Selections a run made under plan pinning are not
        sources: they timed the pinned plan alone. Selections the search budget answered
        (record --search-budget) are written as heuristic picks, without a measured time: any
        run's benchmark winner for the problem takes their place when files merge.
show    prints a plan file: one line per plan, its source and conflicts.

Replay a file with `cuprobe record --pin-plans FILE -- COMMAND` (or CUPROBE_PIN_PLANS=FILE under
plain LD_PRELOAD): every selection of a problem in the file ends on its plan after one
candidate; docs/plan-pinning.md.

Options:
  -o, --output FILE   where export writes (default plans.json)
  --merge             export: start from FILE's plans
  -q, --quiet         export: no summary line
  -h, --help          this text

Exit status: 0 done, 2 usage error, no plan in the runs, or a FILE that is not a plan file.
)HELP";

constexpr const char* kFormat = "cuprobe-plans/1";

struct Source {
  std::string run;
  uint32_t pid = 0;
  int rank = -1;
  std::string host;
  double at_s = -1;  // when the selection began, seconds into the process's trace
  json to_json() const {
    json j = {{"run", run}, {"pid", pid}, {"host", host}};
    j["rank"] = rank >= 0 ? json(rank) : json(nullptr);
    if (at_s >= 0) j["at_s"] = std::round(at_s * 1000) / 1000;
    return j;
  }
  static Source from_json(const json& j) {
    Source s;
    s.run = j.value("run", "");
    s.pid = j.value("pid", 0u);
    s.rank = j.contains("rank") && j["rank"].is_number_integer() ? j["rank"].get<int>() : -1;
    s.host = j.value("host", "");
    s.at_s = j.value("at_s", -1.0);
    return s;
  }
};

struct Plan {
  // Identity.
  uint64_t hash = 0;
  bool legacy = false;
  uint32_t align = 0;
  std::string gpu;
  int64_t cudnn = 0;
  // What was chosen.
  std::string problem;
  int64_t engine = -1;
  std::string knobs;  // backend knob text; legacy "math=N[,nondeterministic]"
  int32_t math = -1;  // legacy: math type and determinism, from the trace's algorithm results
  bool deterministic = true;  // (or, for a plan read back from a file, its knob text)
  double time_ms = -1;
  uint64_t workspace = 0;
  uint32_t notes = 0;
  reader::SearchMode mode = reader::SearchMode::kBenchmark;
  double search_ms = -1;
  int candidates = 0;
  int seen = 1;  // selections that ended on this plan
  Source from;
  std::vector<json> conflicts;

  std::tuple<uint64_t, bool, uint32_t, std::string, int64_t> key() const { return {hash, legacy, align, gpu, cudnn}; }
  bool same_choice(const Plan& o) const { return engine == o.engine && knobs == o.knobs; }
  // Whether this plan should win over `o` for the same key.
  bool better_than(const Plan& o) const {
    bool bench = mode == reader::SearchMode::kBenchmark && time_ms > 0;
    bool obench = o.mode == reader::SearchMode::kBenchmark && o.time_ms > 0;
    if (bench != obench) return bench;
    return time_ms > 0 && o.time_ms > 0 && time_ms < o.time_ms;
  }
};

// A legacy plan's math type and determinism from a plan file's knob text, which is all the file
// holds of them ("math=N[,nondeterministic]", as reader::legacy_candidates writes it). Plans from
// a trace take them from its algorithm results instead.
void legacy_fields_from_knobs(Plan& p) {
  auto at = p.knobs.find("math=");
  p.math = at == std::string::npos ? -1 : std::atoi(p.knobs.c_str() + at + 5);
  p.deterministic = p.knobs.find("nondeterministic") == std::string::npos;
}

// The string the shim reads (common/plan_pin_text.h writes and parses it).
std::string pin_string(const Plan& p) {
  pins::PinWords w;
  w.hash = p.hash;
  w.legacy = p.legacy;
  w.engine = p.engine;
  w.align = p.align;
  w.gpu = p.gpu.c_str();
  w.cudnn = p.cudnn;
  w.math = p.math;
  w.deterministic = p.deterministic;
  w.knobs = p.knobs.c_str();
  w.time_ms = p.time_ms;
  w.search_ms = p.search_ms;
  std::string s(pins::format_pin(w, nullptr, 0), '\0');
  pins::format_pin(w, s.data(), s.size() + 1);
  return s;
}

json plan_json(const Plan& p) {
  json j = {{"problem", p.problem},
            {"hash", fmt::format("0x{:016x}", p.hash)},
            {"api", p.legacy ? "legacy" : "backend"},
            {"gpu", p.gpu},
            {"cudnn", p.cudnn},
            {"mode", reader::name_of(p.mode)},
            {"engine", p.engine},
            {"knobs", p.knobs},
            {"workspace", p.workspace},
            {"seen", p.seen},
            {"from", p.from.to_json()}};
  if (!p.legacy) j["align"] = p.align;
  j["time_ms"] = p.time_ms >= 0 ? json(std::round(p.time_ms * 1e6) / 1e6) : json(nullptr);
  j["search_ms"] = p.search_ms >= 0 ? json(std::round(p.search_ms * 1e3) / 1e3) : json(nullptr);
  if (p.candidates) j["candidates"] = p.candidates;
  if (p.notes) j["notes"] = p.notes;
  if (!p.conflicts.empty()) j["conflicts"] = p.conflicts;
  j["pin"] = pin_string(p);
  return j;
}

// A plan file's plans; throws UsageError naming the file and the entry when it is not one.
std::vector<Plan> read_plan_file(const std::string& path) {
  std::string text = read_input_file("plan file", path, pins::kMaxPlanFileBytes);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw UsageError(fmt::format("'{}' is not JSON: {}", path, e.what()));
  }
  if (!j.is_object() || j.value("format", "") != kFormat || !j.contains("plans") || !j["plans"].is_array()) {
    throw UsageError(fmt::format("'{}' is not a plan file (no \"format\": \"{}\" with \"plans\"); write one with "
                                 "cuprobe plans export",
                                 path, kFormat));
  }
  std::vector<Plan> out;
  size_t index = 0;
  for (const auto& e : j["plans"]) {
    try {
      Plan p;
      std::string hash = e.at("hash").get<std::string>();
      p.hash = std::stoull(hash.substr(hash.rfind("0x", 0) == 0 ? 2 : 0), nullptr, 16);
      p.legacy = e.at("api").get<std::string>() == "legacy";
      p.align = e.value("align", 0u);
      p.gpu = e.value("gpu", "");
      p.cudnn = e.value("cudnn", int64_t(0));
      p.problem = e.value("problem", "");
      p.engine = e.at("engine").get<int64_t>();
      p.knobs = e.value("knobs", "");
      p.time_ms = e.contains("time_ms") && e["time_ms"].is_number() ? e["time_ms"].get<double>() : -1;
      p.search_ms = e.contains("search_ms") && e["search_ms"].is_number() ? e["search_ms"].get<double>() : -1;
      p.workspace = e.value("workspace", uint64_t(0));
      p.notes = e.value("notes", 0u);
      if (p.legacy) legacy_fields_from_knobs(p);
      std::string mode = e.value("mode", "benchmark");
      if (!value_in(reader::kSearchModeNames, mode, &p.mode)) {
        throw std::runtime_error(fmt::format("mode '{}' is not benchmark or heuristic", mode));
      }
      p.candidates = e.value("candidates", 0);
      p.seen = e.value("seen", 1);
      if (e.contains("from")) p.from = Source::from_json(e["from"]);
      if (e.contains("conflicts") && e["conflicts"].is_array()) p.conflicts = e["conflicts"].get<std::vector<json>>();
      out.push_back(std::move(p));
    } catch (const std::exception& x) {
      throw UsageError(fmt::format("'{}': plan {} is not readable: {}", path, index + 1, x.what()));
    }
    ++index;
  }
  return out;
}

// Adds `p` to the plans by key: the better of two different choices stays, the other becomes a
// conflict; the same choice seen again counts.
void merge(std::map<decltype(Plan().key()), Plan>& plans, Plan p) {
  auto [it, fresh] = plans.try_emplace(p.key(), p);
  if (fresh) return;
  Plan& have = it->second;
  if (have.same_choice(p)) {
    have.seen += p.seen;
    if (p.time_ms > 0 && (have.time_ms <= 0 || p.time_ms < have.time_ms)) have.time_ms = p.time_ms;
    return;
  }
  for (auto& c : have.conflicts) {  // already a conflict: count it
    if (c.value("engine", int64_t(-2)) == p.engine && c.value("knobs", "") == p.knobs) {
      c["seen"] = c.value("seen", 1) + p.seen;
      if (p.better_than(have)) break;
      return;
    }
  }
  auto conflict_of = [](const Plan& x) {
    json c = {{"engine", x.engine},
              {"knobs", x.knobs},
              {"mode", reader::name_of(x.mode)},
              {"seen", x.seen},
              {"from", x.from.to_json()}};
    c["time_ms"] = x.time_ms >= 0 ? json(std::round(x.time_ms * 1e6) / 1e6) : json(nullptr);
    return c;
  };
  if (p.better_than(have)) {
    std::vector<json> older = std::move(have.conflicts);
    std::erase_if(older, [&](const json& c) { return c.value("engine", int64_t(-2)) == p.engine && c.value("knobs", "") == p.knobs; });
    older.push_back(conflict_of(have));
    p.conflicts = std::move(older);
    p.seen = std::max(p.seen, 1);
    have = std::move(p);
  } else {
    have.conflicts.push_back(conflict_of(p));
  }
}

std::string device_name(const reader::Trace& t, int device) {
  auto it = t.devices().find(device);
  if (it == t.devices().end() && !t.devices().empty()) it = t.devices().begin();
  return it == t.devices().end() ? std::string() : it->second.name;
}

// The plans the runs' selections ended on.
size_t plans_of_runs(const std::vector<std::string>& runs, std::map<decltype(Plan().key()), Plan>& plans,
                     std::vector<std::string>& warnings, size_t* pinned_skipped, bool include_pinned = false) {
  size_t found = 0;
  for (const auto& run : runs) {
    auto traces = reader::open_all({run}, &warnings);
    if (!traces) throw UsageError(traces.error().message);
    for (auto& t : *traces) {
      auto read = analysis::facts_of(*t, analysis::FactOptions{});
      if (!read) {
        warnings.push_back(read.error().message + "; its plans are left out");
        continue;
      }
      analysis::ProcessFacts& f = *read;
      std::set<uint64_t> pinned;
      std::map<uint64_t, const reader::PinEvent*> later;  // deferred searches of budgeted problems
      for (const auto& p : t->pins()) {
        if (p.outcome == trace::PinOutcome::kPinned) pinned.insert(p.problem_hash);
        if (p.outcome == trace::PinOutcome::kSearchedLater && p.engine >= 0 && p.pinned_ms >= 0)
          later[p.problem_hash] = &p;
      }
      auto prop = t->properties().find(uint32_t(trace::Property::kCudnnVersion));
      int64_t cudnn = prop == t->properties().end() ? 0 : prop->second;
      for (const auto& s : f.searches) {
        if (s.winner < 0 || s.problem_hash == 0 || s.winner >= int(s.candidates.size())) continue;
        if (pinned.count(s.problem_hash) && !include_pinned) {
          ++*pinned_skipped;
          continue;
        }
        // Plan files pin cuDNN's choices; cuBLASLt's are recorded, not pinned (docs/plan-pinning.md).
        if (!s.cudnn()) continue;
        const auto& c = s.candidates[size_t(s.winner)];
        if (c.engine < 0) continue;
        Plan p;
        p.hash = s.problem_hash;
        p.legacy = !s.backend();
        p.align = p.legacy ? 0 : s.align;
        p.gpu = device_name(*t, s.device >= 0 ? s.device : f.device);
        p.cudnn = cudnn;
        p.problem = s.problem;
        p.engine = c.engine;
        p.knobs = c.knobs;
        p.math = c.math;
        p.deterministic = c.deterministic;
        p.time_ms = c.time_ms;
        p.workspace = c.workspace;
        p.notes = c.notes;
        p.mode = s.mode;
        if (auto l = later.find(s.problem_hash); s.steered == trace::PinOutcome::kBudgeted && l != later.end()) {
          // Searched later by the budget: the winner of the candidates the application allowed,
          // timed on the job's data among those fitting the heuristic plan's workspace (which
          // stays the workspace written: an upper bound). Its numerical notes were not recorded.
          p.engine = l->second->engine;
          p.knobs = l->second->knobs ? t->knobs_text(l->second->knobs) : "";
          p.time_ms = l->second->pinned_ms;
          if (p.engine != c.engine || p.knobs != c.knobs) p.notes = 0;
        } else if (s.steered == trace::PinOutcome::kBudgeted) {
          // The search budget gave it cuDNN's heuristic choice: one candidate timed, not a
          // benchmark winner (a later run's search of the problem beats it when files merge).
          p.mode = reader::SearchMode::kHeuristic;
          p.time_ms = -1;
        }
        p.search_ms = s.end_ns > s.start_ns ? double(s.end_ns - s.start_ns) / 1e6 : -1;
        p.candidates = int(s.candidates.size());
        p.from = Source{run, t->pid(), f.rank, f.host, s.start_ns >= f.first_ns ? double(s.start_ns - f.first_ns) / 1e9 : -1};
        merge(plans, std::move(p));
        ++found;
      }
    }
    for (const auto& t : *traces) {
      for (const auto& d : t->diagnostics()) warnings.push_back(fmt::format("{}: {}", t->path(), d));
    }
  }
  return found;
}

std::string no_plans_text(const std::vector<std::string>& runs, size_t pinned_skipped) {
  return fmt::format("no plan selection in {}: the runs made no cuDNN plan choice that the trace holds whole{}",
                     fmt::join(runs, ", "), pinned_skipped ? " (the pinned ones are not sources)" : "");
}

// The plan file's document (format cuprobe-plans/1) of the runs' plans.
json plan_document(const std::vector<std::string>& runs, const std::map<decltype(Plan().key()), Plan>& plans) {
  json doc = {{"format", kFormat}, {"written_by", "cuprobe plans export"}};
  char when[32];
  std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  doc["written_at"] = when;
  doc["runs"] = runs;
  json list = json::array();
  for (const auto& [key, p] : plans) list.push_back(plan_json(p));
  doc["plans"] = std::move(list);
  return doc;
}

int plans_export(const Args& args) {
  std::string out = "plans.json";
  bool merge_file = false, quiet = false;
  OptionParser options(kHelp);
  options.value("-o,--output", [&](const std::string& v) { out = v; });
  options.flag("--merge", [&] { merge_file = true; });
  options.flag("-q,--quiet", [&] { quiet = true; });
  std::vector<std::string> runs;
  if (!options.parse(args, &runs)) return kExitOk;
  if (runs.empty()) throw UsageError("no run given; usage: cuprobe plans export [-o FILE] RUN...");
  std::map<decltype(Plan().key()), Plan> plans;
  size_t kept = 0;
  std::error_code ec;
  if (merge_file && fs::exists(out, ec)) {
    for (auto& p : read_plan_file(out)) {
      merge(plans, std::move(p));
      ++kept;
    }
  }
  std::vector<std::string> warnings;
  size_t pinned_skipped = 0;
  size_t found = plans_of_runs(runs, plans, warnings, &pinned_skipped);
  for (const auto& w : warnings) fmt::print(stderr, "cuprobe plans: note: {}\n", utf8::terminal_safe(w));
  if (plans.empty()) {
    fmt::print(stderr, "cuprobe plans: {}\n", no_plans_text(runs, pinned_skipped));
    return kExitUsage;
  }
  size_t conflicts = 0;
  for (const auto& [key, p] : plans) conflicts += p.conflicts.empty() ? 0 : 1;
  json doc = plan_document(runs, plans);
  {
    OutputFile file("-o", out);
    {
      std::ofstream o(file.temp(), std::ios::trunc);
      o << doc.dump(1, ' ', false, json::error_handler_t::replace) << "\n";
      if (!o.flush()) throw UsageError(fmt::format("cannot write '{}'", out));
    }
    if (std::string err = file.commit(); !err.empty()) throw UsageError(fmt::format("cannot write '{}': {}", out, err));
  }
  if (!quiet) {
    fmt::print(stderr, "cuprobe plans: {} plans ({} selections{}{}) -> {}{}\n", plans.size(), found,
               kept ? fmt::format(", {} kept from the file", kept) : "",
               pinned_skipped ? fmt::format(", {} pinned ones left out", pinned_skipped) : "", out,
               conflicts ? fmt::format("; {} problems were chosen differently across runs (fastest kept, see plans show)",
                                       conflicts)
                         : "");
  }
  return kExitOk;
}

int plans_show(const Args& args) {
  OptionParser options(kHelp);
  std::vector<std::string> files;
  if (!options.parse(args, &files)) return kExitOk;
  if (files.size() != 1) throw UsageError("usage: cuprobe plans show FILE");
  std::vector<Plan> plans = read_plan_file(files[0]);
  // A plan file comes from elsewhere: nothing in it reaches the terminal raw.
  for (auto& p : plans) {
    for (std::string* s : {&p.problem, &p.knobs, &p.gpu, &p.from.run}) *s = utf8::terminal_safe(*s);
    for (auto& c : p.conflicts) c = analysis::terminal_json(c);
  }
  std::map<std::pair<std::string, int64_t>, int> groups;
  for (const auto& p : plans) ++groups[{p.gpu, p.cudnn}];
  fmt::print("{}: {} plans\n", utf8::terminal_safe(files[0]), plans.size());
  for (const auto& [g, n] : groups) {
    fmt::print("  {} plans for {} with cuDNN {}\n", n, g.first.empty() ? "an unknown GPU" : g.first,
               g.second > 0 ? fmt::format("{}.{}.{}", g.second / 10000, g.second / 100 % 100, g.second % 100) : "?");
  }
  for (const auto& p : plans) {
    std::string problem = p.problem.size() > 72 ? p.problem.substr(0, 69) + "..." : p.problem;
    std::string choice = p.legacy ? fmt::format("algo {} {}", p.engine, p.knobs)
                                  : fmt::format("engine {}{}{}", p.engine, p.knobs.empty() ? "" : " ", p.knobs);
    fmt::print("\n{}\n  {} ({}{}), {}\n  from {} rank {} pid {}{}\n", problem, choice,
               p.time_ms >= 0 ? fmt::format("{:.3f} ms", p.time_ms) : "not timed",
               p.mode == reader::SearchMode::kHeuristic ? ", heuristic pick" : "",
               p.search_ms >= 0 ? fmt::format("its search took {:.1f} ms over {} candidates", p.search_ms, p.candidates)
                                : "search time unknown",
               p.from.run, p.from.rank >= 0 ? std::to_string(p.from.rank) : "?", p.from.pid,
               p.seen > 1 ? fmt::format(", chosen {} times", p.seen) : "");
    for (const auto& c : p.conflicts) {
      const json& t = c["time_ms"];
      fmt::print("  conflict: engine {} {} ({}) chosen {} times, e.g. {} rank {}\n", c.value("engine", int64_t(-1)),
                 c.value("knobs", ""), t.is_number() ? fmt::format("{:.3f} ms", t.get<double>()) : "not timed",
                 c.value("seen", 1), c["from"].value("run", ""),
                 c["from"]["rank"].is_number() ? std::to_string(c["from"]["rank"].get<int>()) : "?");
    }
  }
  return kExitOk;
}

}  // namespace

Result<json> exported_plans(const std::vector<std::string>& runs, std::vector<std::string>* warnings) {
  std::map<decltype(Plan().key()), Plan> plans;
  size_t pinned_skipped = 0;
  // What the run ran, pinned selections included (an export leaves them out: they are not sources).
  plans_of_runs(runs, plans, *warnings, &pinned_skipped, true);
  if (plans.empty()) return Error{no_plans_text(runs, pinned_skipped)};
  return plan_document(runs, plans);
}

int cmd_plans(const Args& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::fputs(kHelp, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  Args rest(args.begin() + 1, args.end());
  if (args[0] == "export") return plans_export(rest);
  if (args[0] == "show") return plans_show(rest);
  throw UsageError(fmt::format("unknown action '{}' (export or show)", args[0]));
}

// Used by `record --pin-plans-learn`.
int plans_learn(const std::string& file, const std::string& run) {
  return plans_export({"--merge", "-o", file, run});
}

// Used by `record --pin-plans`: how many plans FILE holds (throws UsageError when it is not a plan file).
// The shim's own reading of the file (common/plan_pin_text.h), with its words: what record says
// is what the job will do.
size_t plans_count(const std::string& file) {
  std::string text = read_input_file("plan file", file, pins::kMaxPlanFileBytes);
  if (text.empty()) throw UsageError(fmt::format("plan file {}: the file is empty", file));
  size_t n = 0, bad_at = 0;
  if (!pins::parse_pins(text.data(), text.size(), nullptr, &n, &bad_at)) {
    throw UsageError(fmt::format("plan file {}: a \"pin\" string near byte {} is not one cuprobe plans export writes",
                                 file, bad_at));
  }
  if (n == 0) {
    throw UsageError(fmt::format("plan file {}: no \"pin\" entries (write the file with cuprobe plans export)", file));
  }
  return n;
}

}  // namespace cuprobe::cli
