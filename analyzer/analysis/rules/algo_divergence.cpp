// algo-divergence: the same problem resolved to different engines, knobs or algorithms on
// different processes (ranks, devices, hosts), or within one process over time (a silent plan
// switch). Differences between candidates of near-equal measured time, at knob level, are
// expected with benchmark searches and reported as such; different engines with different
// measured times or different numerical notes are what matters.
//
// Across processes the finding names its cause first (evidence.cause, a contract with the GPU
// scenario corpus): "configuration drift between ranks" (benchmark, legacy API, deterministic or
// TF32 differ, as trackers/config.h infers them), "library, driver or GPU drift", "clearly different
// plans", or "timing noise among near-equal candidates" (info). A time is shown only where the
// process measured it: heuristic selections time nothing (issue 13: "0.000 ms on rank 1").
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "analysis/common.h"
#include "analysis/pinning.h"
#include "analysis/rank_groups.h"
#include "analysis/rules.h"
#include "analysis/trackers/config.h"
#include "cudnn_status.h"
#include "enum_names.h"

namespace cuprobe::analysis {
namespace {

struct Choice {
  int64_t engine = -1;
  std::string knobs;
  double time_ms = -1;  // its measured time where the process searched
  uint32_t notes = 0;
  bool operator<(const Choice& o) const { return std::tie(engine, knobs) < std::tie(o.engine, o.knobs); }
};

// What each process settled on for each problem: the plan it ran most outside searches, with
// the time its search measured for it.
std::map<uint64_t, Choice> choices_of(const ProcessFacts& p, std::map<uint64_t, std::string>& names) {
  std::map<uint64_t, Choice> out;
  for (const auto& [hash, use] : p.problems) {
    if (use.plans.empty() || hash == 0) continue;
    const PlanUse* best = &use.plans[0];
    for (const auto& u : use.plans) best = u.executions > best->executions ? &u : best;
    Choice c{best->engine, best->knobs, -1, 0};
    for (const auto& s : p.searches) {
      if (s.problem_hash != hash) continue;
      for (const auto& cand : s.candidates) {
        if (cand.engine == c.engine && cand.knobs == c.knobs) {
          if (cand.time_ms >= 0) c.time_ms = cand.time_ms;
          c.notes = cand.notes;
        }
      }
    }
    out[hash] = c;
    names[hash] = use.problem;
  }
  return out;
}

// The times one process measured for two plans of a problem, when its search timed both.
bool measured_both(const ProcessFacts& p, uint64_t hash, const Choice& a, const Choice& b, double* ta, double* tb) {
  for (const auto& s : p.searches) {
    if (s.problem_hash != hash) continue;
    double x = -1, y = -1;
    for (const auto& c : s.candidates) {
      if (c.engine == a.engine && c.knobs == a.knobs) x = c.time_ms;
      if (c.engine == b.engine && c.knobs == b.knobs) y = c.time_ms;
    }
    if (x > 0 && y > 0) {
      *ta = x;
      *tb = y;
      return true;
    }
  }
  return false;
}

// Every candidate a process's searches timed, by problem, engine and knobs: its fastest timing.
using Timings = std::map<std::tuple<uint64_t, int64_t, std::string>, double>;
Timings timings_of(const ProcessFacts& p) {
  Timings out;
  for (const auto& s : p.searches) {
    for (const auto& c : s.candidates) {
      if (c.time_ms <= 0) continue;
      auto [it, fresh] = out.try_emplace({s.problem_hash, c.engine, c.knobs}, c.time_ms);
      if (!fresh) it->second = std::min(it->second, c.time_ms);
    }
  }
  return out;
}

// How much slower process a measured than process b, typically: the median ratio of their times
// for the candidates both timed (1.0: the same; 1.3: a measured 30% slower). 0 when fewer than
// `min_common` candidates were timed by both. A search disturbed by other work on its GPU, or by
// throttling, times everything slower; two ranks timing near-equal candidates time them in
// different orders, but not systematically apart.
double measurement_scale(const Timings& a, const Timings& b, size_t min_common) {
  std::vector<double> ratios;
  for (const auto& [key, ta] : a) {
    auto it = b.find(key);
    if (it != b.end()) ratios.push_back(ta / it->second);
  }
  if (ratios.size() < std::max<size_t>(min_common, 1)) return 0;
  auto mid = ratios.begin() + ptrdiff_t(ratios.size() / 2);
  std::nth_element(ratios.begin(), mid, ratios.end());
  return *mid;
}

// "rank 1", "rank 0 and rank 2", "rank 0, rank 1 and pid 7"; three ranks and more as ranges
// ("ranks 0-511, 513-1023 and pid 7"): a job of a thousand ranks stays one readable clause.
std::string join_names(const std::vector<std::string>& names) {
  std::vector<int> ranks;
  std::vector<std::string> rest;
  for (const auto& n : names) {
    int r = -1;
    if (n.rfind("rank ", 0) == 0 && n.size() > 5 && n.find_first_not_of("0123456789", 5) == std::string::npos) {
      r = std::atoi(n.c_str() + 5);
    }
    if (r >= 0) {
      ranks.push_back(r);
    } else {
      rest.push_back(n);
    }
  }
  std::vector<std::string> parts = ranks.size() >= 3 ? std::vector<std::string>{"ranks " + rank_ranges(ranks)} : names;
  if (ranks.size() >= 3) parts.insert(parts.end(), rest.begin(), rest.end());
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

// The processes (of `who`) whose setting is `value`, named.
std::vector<std::string> with_setting(const AllFacts& all, const std::vector<size_t>& who,
                                      const std::vector<ProcessSettings>& settings, Setting ProcessSettings::*field,
                                      Setting value) {
  std::vector<std::string> out;
  for (size_t i : who) {
    if (settings[i].*field == value) out.push_back(short_process_name(all.processes[i]));
  }
  return out;
}

// Why the processes chose differently, when their configuration says it: one clause per setting
// that differs between them ("rank 1 chose its plans by heuristics (benchmark off), rank 0 by timing").
std::vector<std::string> configuration_drift(const AllFacts& all, const std::vector<size_t>& who,
                                             const std::vector<ProcessSettings>& settings, nlohmann::json& differs) {
  struct Dimension {
    Setting ProcessSettings::*field;
    const char* name;
    bool on_first;  // name the processes with the setting on first
    const char* first;   // {0}: the processes named first; {1}: "its" or "their"
    const char* second;  // {0}: the others
  };
  const Dimension dims[] = {
      {&ProcessSettings::benchmark, "benchmark", false, "{0} chose {1} plans by heuristics (benchmark off)",
       "{0} by timing (benchmark on)"},
      {&ProcessSettings::legacy_api, "legacy_api", true, "{0} chose {1} plans through the legacy API (cudnnFind*/cudnnGet*)",
       "{0} through the backend API"},
      {&ProcessSettings::deterministic, "deterministic", true,
       "{0} ran in deterministic mode (never offered a non-deterministic engine)", "{0} did not"},
      {&ProcessSettings::tf32, "tf32", false, "{0} had TF32 off for float32 convolutions (no tensor-core engine among {1} candidates)",
       "{0} had it on"},
  };
  std::vector<std::string> clauses;
  for (const Dimension& d : dims) {
    auto on = with_setting(all, who, settings, d.field, Setting::kOn);
    auto off = with_setting(all, who, settings, d.field, Setting::kOff);
    if (on.empty() || off.empty()) continue;
    const auto& a = d.on_first ? on : off;
    const auto& b = d.on_first ? off : on;
    clauses.push_back(fmt::format(fmt::runtime(d.first), join_names(a), a.size() == 1 ? "its" : "their") + ", " +
                      fmt::format(fmt::runtime(d.second), join_names(b)));
    differs.push_back(d.name);
  }
  return clauses;
}

// Versions and GPU models that differ between the processes: "cuDNN 9.19.0 on rank 0, 9.14.0 on rank 1".
std::vector<std::string> library_drift(const AllFacts& all, const std::vector<size_t>& who, nlohmann::json& differs) {
  struct Value {
    const char* name;
    const char* label;
    std::function<std::string(const ProcessConfig&)> text;
  };
  const Value values[] = {
      {"cudnn_version", "cuDNN", [](const ProcessConfig& c) { return c.cudnn < 0 ? "" : cudnn_version_text(c.cudnn); }},
      {"cuda_runtime_version", "CUDA runtime",
       [](const ProcessConfig& c) { return c.cuda_runtime < 0 ? "" : cuda_version_text(c.cuda_runtime); }},
      {"cuda_driver_version", "driver CUDA version",
       [](const ProcessConfig& c) { return c.cuda_driver < 0 ? "" : cuda_version_text(c.cuda_driver); }},
      {"cudnn_cudart_version", "cuDNN's CUDA",
       [](const ProcessConfig& c) { return c.cudnn_cudart < 0 ? "" : cuda_version_text(c.cudnn_cudart); }},
      {"gpu", "GPU", [](const ProcessConfig& c) { return c.gpu; }},
  };
  std::vector<std::string> clauses;
  for (const Value& v : values) {
    std::map<std::string, std::vector<std::string>> by_value;
    for (size_t i : who) {
      std::string t = v.text(all.processes[i].config);
      if (!t.empty()) by_value[t].push_back(short_process_name(all.processes[i]));
    }
    if (by_value.size() < 2) continue;
    std::string clause = v.label;
    bool first = true;
    for (const auto& [t, names] : by_value) {
      clause += fmt::format("{} {} on {}", first ? "" : ",", t, join_names(names));
      first = false;
    }
    clauses.push_back(clause);
    differs.push_back(v.name);
  }
  return clauses;
}

// Why processes ran different plans, most specific first. Its name is the evidence's "cause" and
// the key of the fix in rules/algo-divergence.json (a contract with the scenario corpus).
enum class Cause { kPinning, kConfiguration, kLibrary, kFailedPlan, kClearlyDifferent, kTimingNoise };

constexpr std::pair<Cause, const char*> kCauseNames[] = {
    {Cause::kPinning, "plan pinning differs between ranks"},
    {Cause::kConfiguration, "configuration drift between ranks"},
    {Cause::kLibrary, "library, driver or GPU drift"},
    {Cause::kFailedPlan, "a plan failed on some processes"},
    {Cause::kClearlyDifferent, "clearly different plans"},
    {Cause::kTimingNoise, "timing noise among near-equal candidates"},
};

const char* name_of(Cause c) { return name_in(kCauseNames, c); }

struct Params {
  double near_tie, slower, noise, clear_gap;
  size_t min_common;
};

// One problem that diverged: which processes chose what, and how the measurements compare.
struct ProblemDivergence {
  std::map<Choice, std::vector<size_t>> by_choice;
  bool engine_diff = false, notes_diff = false;
  double gap = -1;          // the largest relative gap any process measured between two of the choices
  bool contradict = false;  // each process timed its own choice faster: the order is within the noise
  int far_measurers = 0;    // processes that themselves timed two of the choices past clear_gap apart
  bool tie = false;
};

// The choices of one problem compared across processes.
ProblemDivergence compare_problem(const AllFacts& all, uint64_t hash, std::map<Choice, std::vector<size_t>> by_choice,
                                  const Params& prm) {
  ProblemDivergence d;
  d.by_choice = std::move(by_choice);
  std::set<int64_t> engines;
  std::set<uint32_t> notes;
  for (const auto& [c, v] : d.by_choice) {
    engines.insert(c.engine);
    notes.insert(c.notes);
  }
  d.engine_diff = engines.size() > 1;
  d.notes_diff = notes.size() > 1;
  std::vector<const Choice*> cs;
  for (const auto& [c, v] : d.by_choice) cs.push_back(&c);
  for (size_t a = 0; a < cs.size(); ++a) {
    for (size_t b = a + 1; b < cs.size(); ++b) {
      int a_faster = 0, b_faster = 0;
      for (const auto& p : all.processes) {
        double ta, tb;
        if (measured_both(p, hash, *cs[a], *cs[b], &ta, &tb)) {
          double g = std::fabs(ta - tb) / std::min(ta, tb);
          d.gap = std::max(d.gap, g);
          d.far_measurers += g > prm.clear_gap ? 1 : 0;
          (ta <= tb ? a_faster : b_faster)++;
        }
      }
      d.contradict = d.contradict || (a_faster > 0 && b_faster > 0);
    }
  }
  d.tie = d.gap >= 0 && (d.gap <= prm.near_tie || (d.contradict && d.gap <= prm.noise));
  return d;
}

// Everything compared across processes, problem by problem.
struct CrossProcess {
  int engine_clear = 0;  // different engines, not within the noise
  int engine_far = 0;    // of those, measured more than clear_gap apart
  int compared = 0, engine_level = 0, knob_level = 0, near_ties = 0, numerics = 0;
  int contradicted = 0;  // differing problems whose measurements contradict
  int pin_mixed = 0;     // differing problems pinned on some processes and not on others
  std::string pin_clause;
  // Differing problems where a process tried the plan another process runs and it failed there
  // (its build or a run): that process moved on to another plan, as PyTorch does (issue 33).
  int failed_elsewhere = 0;
  std::string failed_clause;
  nlohmann::json items = nlohmann::json::array();
  std::vector<std::string> problems;
  double worst_gap = 0;
  // Per process: the measured time of the plans it chose for the diverging problems, and of how
  // many of them it measured one (only a benchmark search measures: never print a time for the others).
  std::vector<double> chosen_ms;
  std::vector<int> chosen_n, measured_n;
  int diverged() const { return engine_level + knob_level; }
};

void count_problem(const ProblemDivergence& d, const Params& prm, CrossProcess& x) {
  (d.engine_diff ? x.engine_level : x.knob_level)++;
  x.engine_clear += d.engine_diff && !d.tie ? 1 : 0;
  // A far gap the processes contradict (each timed its own engine faster) that only one of them
  // measured is one outlier timing, not a slower engine: two healthy ranks sharing an H200 timed
  // a candidate 7.6x and 13x off while the other rank timed the two engines close and their
  // chosen plans added up to within 3% (docs/dev/validation.md, issue 25). Far gaps measured by
  // several processes in opposite directions are systematic: the "same" GPUs differ.
  x.engine_far += d.engine_diff && !d.tie && d.gap > prm.clear_gap && (!d.contradict || d.far_measurers >= 2) ? 1 : 0;
  x.near_ties += d.tie ? 1 : 0;
  x.contradicted += d.contradict ? 1 : 0;
  x.numerics += d.notes_diff ? 1 : 0;
  x.worst_gap = std::max(x.worst_gap, d.gap);
}

// The problem's item (evidence) and line (the finding's problem list); adds the chosen plans'
// measured times to their processes' totals.
void describe_problem(const AllFacts& all, const std::vector<std::map<uint64_t, Choice>>& per_process, uint64_t hash,
                      const std::string& name, const ProblemDivergence& d, CrossProcess& x) {
  nlohmann::json choices = nlohmann::json::array();
  std::string line = name + ":";
  for (const auto& [c, v] : d.by_choice) {
    std::vector<uint32_t> pids;
    double measured = -1;  // what the processes of this choice measured for it
    for (size_t i : v) {
      pids.push_back(all.processes[i].pid);
      double t = per_process[i].at(hash).time_ms;
      if (t > 0) {
        x.chosen_ms[i] += t;
        ++x.measured_n[i];
        measured = measured < 0 ? t : std::min(measured, t);
      }
      ++x.chosen_n[i];
    }
    choices.push_back(
        {{"engine", c.engine}, {"knobs", c.knobs}, {"time_ms", measured}, {"notes", c.notes}, {"pids", pids}});
    line += fmt::format(" engine {} [{}] on {} process{}{};", c.engine, c.knobs, v.size(), v.size() == 1 ? "" : "es",
                        measured > 0 ? fmt::format(" ({:.3f} ms)", measured) : " (not measured)");
  }
  x.items.push_back({{"problem", name},
                     {"level", d.engine_diff ? "engine" : "knobs"},
                     {"near_tie", d.tie},
                     {"measured_gap", d.gap},
                     {"measurements_contradict", d.contradict},
                     {"numerics_differ", d.notes_diff},
                     {"choices", choices}});
  if (x.problems.size() < 5) x.problems.push_back(line);
}

// Plan pinning: a problem every process ran pinned to the same plan cannot diverge; one pinned on
// some processes and not on others (a step-aside, a problem missing from one rank's file) can.
void describe_pinning(const AllFacts& all, const std::vector<PinSummary>& pins, uint64_t hash,
                      const ProblemDivergence& d, CrossProcess& x) {
  std::map<std::string, std::vector<std::string>> by_state;
  bool any_pinned = false;
  for (const auto& [c, v] : d.by_choice) {
    for (size_t i : v) {
      auto st = pins[i].state.find(hash);
      any_pinned |= st != pins[i].state.end() && st->second == trace::PinOutcome::kPinned;
      by_state[st == pins[i].state.end() ? (pins[i].active ? "not in the plan file" : "not pinned")
                                         : reader::name_of(st->second)]
          .push_back(short_process_name(all.processes[i]));
    }
  }
  if (by_state.size() < 2 || !any_pinned) return;
  nlohmann::json pj = nlohmann::json::object();
  std::string clause;
  for (const auto& [state, who] : by_state) {
    pj[state] = who;
    clause += fmt::format("{}{} on {}", clause.empty() ? "" : ", ", state, join_names(who));
  }
  x.items.back()["pinning"] = pj;
  if (x.pin_mixed++ == 0) x.pin_clause = clause;
}

std::vector<std::string> names_of(const AllFacts& all, const std::vector<size_t>& procs) {
  std::vector<std::string> out;
  for (size_t i : procs) out.push_back(short_process_name(all.processes[i]));
  return out;
}

// A process whose selection tried the plan another process runs, and saw it fail.
void describe_failure(const AllFacts& all, uint64_t hash, const ProblemDivergence& d, CrossProcess& x) {
  for (const auto& [mine, procs] : d.by_choice) {
    for (size_t i : procs) {
      for (const auto& s : all.processes[i].searches) {
        if (s.problem_hash != hash) continue;
        for (const auto& c : s.candidates) {
          bool failed = c.build_status != 0 || c.exec_status > 0;
          if (!failed || (c.engine == mine.engine && c.knobs == mine.knobs)) continue;
          auto other = std::find_if(d.by_choice.begin(), d.by_choice.end(), [&](const auto& o) {
            return o.first.engine == c.engine && o.first.knobs == c.knobs;
          });
          if (other == d.by_choice.end()) continue;
          std::string clause = fmt::format(
              "on {} the plan {} runs (engine {} [{}]) failed ({} {}) and it ran engine {} [{}]",
              short_process_name(all.processes[i]), join_names(names_of(all, other->second)), c.engine, c.knobs,
              c.build_status != 0 ? "building it:" : "running it:",
              cudnn_status_text(c.build_status != 0 ? c.build_status : c.exec_status), mine.engine, mine.knobs);
          x.items.back()["failed_on"] = short_process_name(all.processes[i]);
          if (x.failed_elsewhere++ == 0) x.failed_clause = clause;
          return;
        }
      }
    }
  }
}

CrossProcess compare_processes(const AllFacts& all, const std::vector<std::map<uint64_t, Choice>>& per_process,
                               const std::map<uint64_t, std::string>& names, const Params& prm) {
  CrossProcess x;
  x.chosen_ms.assign(all.processes.size(), 0);
  x.chosen_n.assign(all.processes.size(), 0);
  x.measured_n.assign(all.processes.size(), 0);
  std::vector<PinSummary> pins;
  for (const auto& p : all.processes) pins.push_back(pin_summary(p));
  for (const auto& [hash, name] : names) {
    std::map<Choice, std::vector<size_t>> by_choice;
    size_t seen = 0;
    for (size_t i = 0; i < per_process.size(); ++i) {
      auto it = per_process[i].find(hash);
      if (it != per_process[i].end()) {
        by_choice[it->second].push_back(i);
        ++seen;
      }
    }
    if (seen < 2) continue;
    ++x.compared;
    if (by_choice.size() < 2) continue;
    ProblemDivergence d = compare_problem(all, hash, std::move(by_choice), prm);
    count_problem(d, prm, x);
    describe_problem(all, per_process, hash, name, d, x);
    describe_pinning(all, pins, hash, d, x);
    describe_failure(all, hash, d, x);
  }
  return x;
}

// Each process's chosen plans added up, where it measured them.
struct Totals {
  nlohmann::json per = nlohmann::json::array();
  std::string text;
  double spread = 0;  // how far apart the totals of the processes that measured every choice are
  bool known = false;
};

Totals totals_of(const AllFacts& all, const std::vector<ProcessSettings>& settings, const CrossProcess& x) {
  Totals t;
  double lo = 0, hi = 0;
  int fully_measured = 0;
  for (size_t i = 0; i < all.processes.size(); ++i) {
    if (x.chosen_n[i] == 0) continue;
    const ProcessFacts& p = all.processes[i];
    const ProcessSettings& s = settings[i];
    std::string why = s.benchmark == Setting::kOff ? "heuristics" : "no timed search in the trace";
    nlohmann::json entry = {{"process", process_label(p)},
                            {"problems", x.chosen_n[i]},
                            {"measured", x.measured_n[i]},
                            {"selection", s.selection}};
    std::string text;
    if (x.measured_n[i] == 0) {
      entry["chosen_plans_ms"] = nullptr;
      text = fmt::format("not measured ({})", why);
    } else {
      entry["chosen_plans_ms"] = x.chosen_ms[i];
      text = fmt::format("{:.3f} ms", x.chosen_ms[i]);
      if (x.measured_n[i] < x.chosen_n[i])
        text += fmt::format(" for {} of {} problems", x.measured_n[i], x.chosen_n[i]);
    }
    // Totals are compared only where a process measured every one of its choices.
    if (x.measured_n[i] == x.chosen_n[i]) {
      ++fully_measured;
      lo = lo == 0 ? x.chosen_ms[i] : std::min(lo, x.chosen_ms[i]);
      hi = std::max(hi, x.chosen_ms[i]);
    }
    t.per.push_back(entry);
    t.text += fmt::format("{}{} {}", t.text.empty() ? "" : ", ", process_label(p), text);
  }
  t.known = fully_measured >= 2 && lo > 0;
  t.spread = t.known ? hi / lo - 1 : 0;
  if (t.known) t.text += fmt::format(" ({:.1f}% apart)", 100 * t.spread);
  return t;
}

// The largest median ratio between two processes' timings of the same candidates, and which two.
struct Scale {
  double ratio = 0;
  std::string slow, fast;
};

Scale largest_scale(const AllFacts& all, const std::vector<size_t>& with_cudnn, const CrossProcess& x,
                    size_t min_common) {
  Scale s;
  std::vector<std::pair<size_t, Timings>> timed;
  for (size_t i : with_cudnn) {
    if (x.measured_n[i] > 0) timed.emplace_back(i, timings_of(all.processes[i]));
  }
  for (const auto& [i, ti] : timed) {
    for (const auto& [j, tj] : timed) {
      if (i == j) continue;
      double r = measurement_scale(ti, tj, min_common);
      if (r > s.ratio) {
        s = Scale{r, process_label(all.processes[i]), process_label(all.processes[j])};
      }
    }
  }
  return s;
}

// The decision: which cause, and what it rests on.
struct Verdict {
  Cause cause = Cause::kTimingNoise;
  std::vector<std::string> config, library;  // clauses, where the processes differ
  nlohmann::json config_differs = nlohmann::json::array(), library_differs = nlohmann::json::array();
  bool ranked = false;         // every process has a rank
  bool spread_counts = false;  // the totals' spread is a real difference
  bool disturbed = false;      // one process timed everything systematically slower
  Scale scale;
};

Verdict classify(const AllFacts& all, const std::vector<size_t>& with_cudnn,
                 const std::vector<ProcessSettings>& settings, const CrossProcess& x, const Totals& totals,
                 const Params& prm) {
  Verdict v;
  v.config = configuration_drift(all, with_cudnn, settings, v.config_differs);
  v.library = library_drift(all, with_cudnn, v.library_differs);
  v.ranked = std::all_of(with_cudnn.begin(), with_cudnn.end(), [&](size_t i) { return all.processes[i].rank >= 0; });
  // When every differing problem's measurements contradict (each process timed its own choice
  // faster), the totals compare each process's timing of its own plans: a spread there says a
  // process is slower only if it measured systematically slower, the same candidates too (a
  // disturbed search). Otherwise it is the noise of single timings (two healthy DDP ranks
  // sharing one H200: totals 10.9% apart, the candidates both timed a median 0.6% apart).
  v.scale = largest_scale(all, with_cudnn, x, prm.min_common);
  bool all_contradict = x.contradicted == x.diverged();
  v.disturbed = v.scale.ratio >= 1 + prm.slower;
  v.spread_counts = totals.spread >= prm.slower && (!all_contradict || v.disturbed);
  // Where every process measured its own choices, what the job pays is their totals: different
  // engines whose totals stay within `slower_share` are timing noise on small kernels (on one
  // H200 shared by two healthy DDP ranks, single problems timed 112% and 118% apart while the
  // totals were 4-5% apart). A gap beyond `clear_gap` is not noise whatever the totals; without
  // comparable totals, an engine-level gap outside the noise counts.
  bool clear = x.numerics > 0 || v.spread_counts || x.engine_far > 0 || (x.engine_clear > 0 && !totals.known);
  v.cause = x.pin_mixed > 0      ? Cause::kPinning
            : !v.config.empty()  ? Cause::kConfiguration
            : !v.library.empty() ? Cause::kLibrary
            : x.failed_elsewhere > 0 ? Cause::kFailedPlan
            : clear              ? Cause::kClearlyDifferent
                                 : Cause::kTimingNoise;
  return v;
}

std::string joined(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t k = 0; k < parts.size(); ++k) out += (k ? sep : "") + parts[k];
  return out;
}

std::string cause_text(const Verdict& v, const CrossProcess& x, const Totals& totals, const Params& prm) {
  switch (v.cause) {
    case Cause::kPinning:
      return fmt::format(
          "{} of the differing problems ran pinned on some processes and not on others (e.g. {}): "
          "the pinned ones ran the plan file's plan, the others chose their own",
          x.pin_mixed, x.pin_clause);
    case Cause::kConfiguration:
      return joined(v.config, "; ") +
             fmt::format(": the {} are configured differently", v.ranked ? "ranks" : "processes");
    case Cause::kLibrary:
      return fmt::format("the {} run different libraries, drivers or GPUs: ", v.ranked ? "ranks" : "processes") +
             joined(v.library, "; ");
    case Cause::kFailedPlan:
      return fmt::format(
          "with the same configuration and versions, {} of the differing problems ran another plan where the "
          "first choice failed: {}",
          x.failed_elsewhere, x.failed_clause);
    case Cause::kClearlyDifferent: {
      std::vector<std::string> what;
      if (x.engine_clear > 0) {
        what.push_back(fmt::format("{} problem{} ran with different engines not within the timing noise",
                                   x.engine_clear, x.engine_clear == 1 ? "" : "s"));
      }
      if (x.numerics > 0) what.push_back(fmt::format("{} with different numerical notes", x.numerics));
      if (v.spread_counts) {
        what.push_back(fmt::format("the chosen plans' measured times are {:.1f}% apart", 100 * totals.spread));
      }
      if (v.spread_counts && v.disturbed) {
        what.push_back(
            fmt::format("{} timed the candidates it shared with {} a median {:.0f}% slower (a disturbed "
                        "search: other work on the GPU, throttling)",
                        v.scale.slow, v.scale.fast, 100 * (v.scale.ratio - 1)));
      }
      return "with the same configuration and versions, " + joined(what, ", ");
    }
    case Cause::kTimingNoise:
      break;
  }
  if (totals.spread >= prm.slower) {
    return fmt::format(
        "with the same configuration and versions, each process's chosen plans add up to {:.1f}% apart "
        "by its own timing, but every differing problem's measurements contradict (each process timed "
        "its own choice faster){}: timing noise of single measurements, no rank is slower for it",
        100 * totals.spread,
        v.scale.ratio > 0 ? fmt::format(" and the processes timed the candidates they both timed alike "
                                        "(median ratio {:.3f})",
                                        v.scale.ratio)
                          : std::string());
  }
  if (x.engine_clear > 0) {
    return fmt::format(
        "with the same configuration and versions, {} problem{} ran with different engines timed apart, "
        "but each process's chosen plans add up to within {:.1f}% of the others': timing noise of "
        "single measurements, no rank is slower for it",
        x.engine_clear, x.engine_clear == 1 ? "" : "s", 100 * totals.spread);
  }
  return "with the same configuration and versions, the plans differ only between candidates of near-equal measured "
         "time (knob-level choices or near ties), as benchmark searches do";
}

nlohmann::json settings_evidence(const AllFacts& all, const std::vector<size_t>& with_cudnn,
                                 const std::vector<ProcessSettings>& settings) {
  auto setting_json = [](Setting s) -> nlohmann::json {
    return s == Setting::kUnknown ? nlohmann::json(nullptr) : nlohmann::json(s == Setting::kOn);
  };
  nlohmann::json out = nlohmann::json::array();
  for (size_t i : with_cudnn) {
    const ProcessConfig& c = all.processes[i].config;
    out.push_back({{"process", process_label(all.processes[i])},
                   {"selection", settings[i].selection},
                   {"benchmark", setting_json(settings[i].benchmark)},
                   {"legacy_api", setting_json(settings[i].legacy_api)},
                   {"deterministic", setting_json(settings[i].deterministic)},
                   {"tf32", setting_json(settings[i].tf32)},
                   {"cudnn_version", c.cudnn},
                   {"cuda_runtime_version", c.cuda_runtime},
                   {"cuda_driver_version", c.cuda_driver},
                   {"gpu", c.gpu}});
  }
  return out;
}

void across_processes(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  const Params prm{spec.param("near_tie"), spec.param("slower_share"), spec.param("timing_noise"),
                   spec.param("clear_gap"), size_t(spec.param("min_common_candidates"))};
  std::map<uint64_t, std::string> names;
  std::vector<std::map<uint64_t, Choice>> per_process;
  for (const auto& p : all.processes) per_process.push_back(choices_of(p, names));
  CrossProcess x = compare_processes(all, per_process, names, prm);
  if (x.diverged() == 0) return;
  std::vector<size_t> with_cudnn;
  for (size_t i = 0; i < per_process.size(); ++i) {
    if (!per_process[i].empty()) with_cudnn.push_back(i);
  }
  std::vector<ProcessSettings> settings = infer_settings(all.processes);
  Totals totals = totals_of(all, settings, x);
  // The cause, first: what differs between the processes, then what differs between the plans.
  Verdict v = classify(all, with_cudnn, settings, x, totals, prm);
  nlohmann::json ev = {{"cause", name_of(v.cause)},
                       {"cause_text", cause_text(v, x, totals, prm)},
                       {"configuration_differs", v.config_differs},
                       {"library_differs", v.library_differs},
                       {"settings", settings_evidence(all, with_cudnn, settings)},
                       {"processes", with_cudnn.size()},
                       {"problems_compared", x.compared},
                       {"chosen_plans_time", totals.text.empty() ? "not measured" : totals.text},
                       {"chosen_plans_spread", totals.spread},
                       {"measurements_contradict", x.contradicted},
                       {"measurement_scale", v.scale.ratio},
                       {"per_process", totals.per},
                       {"diverging", x.diverged()},
                       {"engine_level", x.engine_level},
                       {"knob_level", x.knob_level},
                       {"near_ties", x.near_ties},
                       {"numerics_differ", x.numerics},
                       {"largest_measured_gap", x.worst_gap},
                       {"items", x.items}};
  Finding f = make_finding(spec, ev, 0);
  f.severity = v.cause == Cause::kTimingNoise ? Severity::kInfo : spec.severity;
  f.title = "The same cuDNN problem ran with different plans on different processes";
  f.fix = spec.fix_for(name_of(v.cause));
  f.problems = x.problems;
  for (const auto& p : all.processes) f.pids.push_back(p.pid);
  emit(std::move(f));
}

// Whether a problem's plans are ones the program chose to run itself, not a switch: every plan a
// candidate of one search of the problem, some of them no search's winner (the program timing
// that search's candidates itself: cudnn-frontend's autotune runs each built plan, then the
// fastest), or every plan the first answer of its own heuristic search (the program asked cuDNN a
// new question for each graph: another heuristics mode, plan index or engine filter; the same
// question asked again, as PyTorch does after losing a cached plan, gets the same first plan).
// Seen on cudnn-frontend's samples on an H100 (docs/dev/validation.md, issue 33): a matmul
// autotuned over 9 plans, norm graphs built per test.
bool chosen_by_program(const ProblemUse& use, const std::vector<reader::SearchRecord>& searches) {
  auto same = [](const PlanUse& u, const reader::SearchCandidate& c) {
    return c.engine == u.engine && c.knobs == u.knobs && c.build_status == 0;
  };
  bool all_first_answers = true;
  for (const auto& u : use.plans) {
    bool first_answer = false;
    for (const auto& s : searches) {
      if (s.problem_hash != use.hash || s.mode != reader::SearchMode::kHeuristic || s.winner != 0) continue;
      first_answer = first_answer || (!s.candidates.empty() && same(u, s.candidates[0]));
    }
    all_first_answers = all_first_answers && first_answer;
  }
  if (all_first_answers) return true;
  // Timing by the program shows as a candidate run that no selection chose. A plan cache that lost
  // its plan and searched again (PyTorch) runs only winners: a switch.
  bool ran_a_loser = std::any_of(use.plans.begin(), use.plans.end(), [&](const PlanUse& u) {
    return std::none_of(searches.begin(), searches.end(), [&](const reader::SearchRecord& s) {
      return s.problem_hash == use.hash && s.winner >= 0 && same(u, s.candidates[size_t(s.winner)]);
    });
  });
  if (!ran_a_loser) return false;
  for (const auto& s : searches) {
    if (s.problem_hash != use.hash || s.candidates.size() < use.plans.size()) continue;
    bool all_candidates = std::all_of(use.plans.begin(), use.plans.end(), [&](const PlanUse& u) {
      return std::any_of(s.candidates.begin(), s.candidates.end(),
                         [&](const reader::SearchCandidate& c) { return same(u, c); });
    });
    if (all_candidates) return true;
  }
  return false;
}

// Within one process over time. PyTorch's plan cache is per thread: a problem run on two threads
// (forward on the main thread, backward on autograd's) is searched on each, and each search may
// pick another near-equal plan. One plan per thread is that, not a switch. Nor is the search
// budget's deferred search moving a budgeted problem to its winner (search_budget.h).
void within_process(const RuleSpec& spec, const ProcessFacts& p, const Emit& emit) {
  nlohmann::json switches = nlohmann::json::array();
  std::vector<std::string> lines;
  size_t per_thread = 0, switched = 0, by_program = 0;
  std::set<uint64_t> moved_by_budget;
  if (p.trace != nullptr) {
    for (const auto& e : p.trace->pins()) {
      if (e.outcome == trace::PinOutcome::kSearchedLater && e.moved) moved_by_budget.insert(e.problem_hash);
    }
  }
  for (const auto& [hash, use] : p.problems) {
    if (use.plans.size() < 2 || hash == 0 || moved_by_budget.count(hash)) continue;
    std::set<uint32_t> threads;
    bool one_per_thread = true;
    for (const auto& u : use.plans)
      one_per_thread = one_per_thread && !u.several_threads && threads.insert(u.tid).second;
    if (!one_per_thread && chosen_by_program(use, p.searches)) {
      ++by_program;
      continue;
    }
    (one_per_thread ? per_thread : switched)++;
    std::string l = use.problem + ":";
    nlohmann::json plans = nlohmann::json::array();
    for (const auto& u : use.plans) {
      l += fmt::format(" {} x{}{};", u.plan, u.executions, one_per_thread ? fmt::format(" on thread {}", u.tid) : "");
      plans.push_back({{"plan", u.plan},
                       {"executions", u.executions},
                       {"first_ns", u.first_ns},
                       {"last_ns", u.last_ns},
                       {"tid", u.tid},
                       {"several_threads", u.several_threads}});
    }
    switches.push_back({{"problem", use.problem}, {"plans", plans}, {"one_plan_per_thread", one_per_thread}});
    // Real switches first.
    if (!one_per_thread)
      lines.insert(lines.begin(), l);
    else
      lines.push_back(l);
  }
  if (switches.empty()) return;
  if (lines.size() > 5) lines.resize(5);
  Finding f;
  f.rule = spec.id;
  f.severity = switched > 0 ? spec.severity : Severity::kInfo;
  f.title = switched > 0 ? "A cuDNN problem switched plans within one process"
                         : "A cuDNN problem ran with a different plan on each thread";
  std::string per_thread_text =
      per_thread == 0 ? ""
                      : fmt::format(
                            "{} problem{} ran with one plan per thread (PyTorch's plan cache is per thread: "
                            "each thread searched on its own and picked its own near-equal plan; expected)",
                            per_thread, per_thread == 1 ? "" : "s");
  if (switched > 0) {
    f.message = fmt::format(
        "{}: {} problem{} ran with more than one plan over time on the same thread (after a "
        "failure, a new search, or a cache miss){}{}",
        process_label(p), switched, switched == 1 ? "" : "s", per_thread ? "; " : "", per_thread_text);
  } else {
    f.message = fmt::format("{}: {}", process_label(p), per_thread_text);
  }
  f.evidence = {{"process", process_label(p)},
                {"switched_problems", switched},
                {"one_plan_per_thread", per_thread},
                {"chosen_by_program", by_program},
                {"items", switches}};
  f.fix = switched > 0 ? spec.fix : spec.fix_for("one plan per thread");
  f.problems = lines;
  f.pids.push_back(p.pid);
  emit(std::move(f));
}

void algo_divergence(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  across_processes(spec, all, emit);
  for (const auto& p : all.processes) within_process(spec, p, emit);
}

const RegisterRule kRegister("algo-divergence", algo_divergence);

}  // namespace
}  // namespace cuprobe::analysis
