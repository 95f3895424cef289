// algo-divergence: the same problem resolved to different engines, knobs or algorithms on
// different processes (ranks, devices, hosts), or within one process over time (a silent plan
// switch). Differences between candidates of near-equal measured time, at knob level, are
// expected with benchmark searches and reported as such; different engines with different
// measured times or different numerical notes are what matters.
#include <algorithm>
#include <map>
#include <set>

#include "analysis/common.h"
#include "analysis/rules.h"

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

void algo_divergence(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double near_tie = spec.param("near_tie");
  double slower = spec.param("slower_share");
  double noise = spec.param("timing_noise");
  std::map<uint64_t, std::string> names;
  std::vector<std::map<uint64_t, Choice>> per_process;
  for (const auto& p : all.processes) per_process.push_back(choices_of(p, names));

  // Across processes.
  int engine_clear = 0;  // different engines, not within the noise
  int compared = 0, engine_level = 0, knob_level = 0, near_ties = 0, numerics = 0;
  nlohmann::json items = nlohmann::json::array();
  std::vector<std::string> problems;
  double worst_gap = 0;
  // Per process: the measured time of the plans it chose for the diverging problems.
  std::vector<double> chosen_ms(all.processes.size(), 0);
  std::vector<int> chosen_n(all.processes.size(), 0);
  size_t with_cudnn = 0;
  for (const auto& m : per_process) with_cudnn += m.empty() ? 0 : 1;
  for (const auto& [hash, name] : names) {
    std::map<Choice, std::vector<size_t>> by_choice;
    for (size_t i = 0; i < per_process.size(); ++i) {
      auto it = per_process[i].find(hash);
      if (it != per_process[i].end()) by_choice[it->second].push_back(i);
    }
    size_t seen = 0;
    for (const auto& [c, v] : by_choice) seen += v.size();
    if (seen < 2) continue;
    ++compared;
    if (by_choice.size() < 2) continue;
    std::set<int64_t> engines;
    std::set<uint32_t> notes;
    for (const auto& [c, v] : by_choice) {
      engines.insert(c.engine);
      notes.insert(c.notes);
    }
    bool engine_diff = engines.size() > 1;
    bool notes_diff = notes.size() > 1;
    // The largest relative gap any process measured between two of the choices, and whether
    // the measurements contradict each other (each process timed its own choice faster: the
    // order is within the noise of one timing).
    double gap = -1;
    bool contradict = false;
    std::vector<std::pair<Choice, const std::vector<size_t>*>> cs;
    for (const auto& [c, v] : by_choice) cs.emplace_back(c, &v);
    for (size_t a = 0; a < cs.size(); ++a) {
      for (size_t b = a + 1; b < cs.size(); ++b) {
        int a_faster = 0, b_faster = 0;
        for (const auto& p : all.processes) {
          double ta, tb;
          if (measured_both(p, hash, cs[a].first, cs[b].first, &ta, &tb)) {
            gap = std::max(gap, std::fabs(ta - tb) / std::min(ta, tb));
            (ta <= tb ? a_faster : b_faster)++;
          }
        }
        contradict = contradict || (a_faster > 0 && b_faster > 0);
      }
    }
    bool tie = gap >= 0 && (gap <= near_tie || (contradict && gap <= noise));
    (engine_diff ? engine_level : knob_level)++;
    engine_clear += engine_diff && !tie ? 1 : 0;
    near_ties += tie ? 1 : 0;
    numerics += notes_diff ? 1 : 0;
    worst_gap = std::max(worst_gap, gap);
    nlohmann::json choices = nlohmann::json::array();
    std::string line = name + ":";
    for (const auto& [c, v] : by_choice) {
      std::vector<uint32_t> pids;
      for (size_t i : v) {
        pids.push_back(all.processes[i].pid);
        if (c.time_ms > 0) chosen_ms[i] += c.time_ms;
        ++chosen_n[i];
      }
      choices.push_back({{"engine", c.engine}, {"knobs", c.knobs}, {"time_ms", c.time_ms}, {"notes", c.notes}, {"pids", pids}});
      line += fmt::format(" engine {} [{}] on {} process{}{};", c.engine, c.knobs, v.size(), v.size() == 1 ? "" : "es",
                          c.time_ms > 0 ? fmt::format(" ({:.3f} ms)", c.time_ms) : "");
    }
    items.push_back({{"problem", name}, {"level", engine_diff ? "engine" : "knobs"}, {"near_tie", tie},
                     {"measured_gap", gap}, {"measurements_contradict", contradict}, {"numerics_differ", notes_diff}, {"choices", choices}});
    if (problems.size() < 5) problems.push_back(line);
  }
  int diverged = engine_level + knob_level;
  if (diverged > 0) {
    nlohmann::json per = nlohmann::json::array();
    std::string totals;
    double lo = 0, hi = 0;
    for (size_t i = 0; i < all.processes.size(); ++i) {
      if (chosen_n[i] == 0) continue;
      per.push_back({{"process", process_label(all.processes[i])}, {"chosen_plans_ms", chosen_ms[i]},
                     {"problems", chosen_n[i]}});
      totals += fmt::format("{}{} {:.3f} ms", totals.empty() ? "" : ", ", process_label(all.processes[i]), chosen_ms[i]);
      lo = lo == 0 ? chosen_ms[i] : std::min(lo, chosen_ms[i]);
      hi = std::max(hi, chosen_ms[i]);
    }
    nlohmann::json ev = {{"processes", with_cudnn}, {"problems_compared", compared},
                         {"chosen_plans_time", totals.empty() ? "not measured" : totals},
                         {"chosen_plans_spread", lo > 0 ? hi / lo - 1 : 0},
                         {"per_process", per},
                         {"diverging", diverged},          {"engine_level", engine_level},
                         {"knob_level", knob_level},       {"near_ties", near_ties},
                         {"numerics_differ", numerics},    {"largest_measured_gap", worst_gap},
                         {"items", items}};
    Finding f = make_finding(spec, ev, 0);
    // Knob-level choices between candidates of near-equal time are what benchmark searches do.
    bool significant = numerics > 0 || engine_clear > 0 || (lo > 0 && hi / lo - 1 >= slower);
    f.severity = significant ? spec.severity : Severity::kInfo;
    f.title = "The same cuDNN problem ran with different plans on different processes";
    f.problems = problems;
    for (const auto& p : all.processes) f.pids.push_back(p.pid);
    emit(std::move(f));
  }

  // Within one process over time.
  for (const auto& p : all.processes) {
    nlohmann::json switches = nlohmann::json::array();
    std::vector<std::string> lines;
    for (const auto& [hash, use] : p.problems) {
      if (use.plans.size() < 2 || hash == 0) continue;
      std::string l = use.problem + ":";
      nlohmann::json plans = nlohmann::json::array();
      for (const auto& u : use.plans) {
        l += fmt::format(" {} x{};", u.plan, u.executions);
        plans.push_back({{"plan", u.plan}, {"executions", u.executions}, {"first_ns", u.first_ns}, {"last_ns", u.last_ns}});
      }
      switches.push_back({{"problem", use.problem}, {"plans", plans}});
      if (lines.size() < 5) lines.push_back(l);
    }
    if (switches.empty()) continue;
    nlohmann::json ev = {{"process", process_label(p)}, {"switched_problems", switches.size()}, {"items", switches}};
    Finding f;
    f.rule = spec.id;
    f.severity = spec.severity;
    f.title = "A cuDNN problem switched plans within one process";
    f.message = fmt::format("{}: {} problem{} ran with more than one plan over time (after a failure, a new search, or "
                            "a cache miss)",
                            process_label(p), switches.size(), switches.size() == 1 ? "" : "s");
    f.evidence = ev;
    f.fix = spec.fix;
    f.problems = lines;
    f.pids.push_back(p.pid);
    emit(std::move(f));
  }
}

const RegisterRule kRegister("algo-divergence", algo_divergence);

}  // namespace
}  // namespace cuprobe::analysis
