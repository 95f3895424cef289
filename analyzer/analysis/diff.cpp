// Two runs compared; see diff.h.
//
// What is measured per process: the step (the median time from one step's start to the next,
// after the first), cuDNN searches and the time they took, the plan each problem ran with and
// what it measured, synchronizations, steady-state allocations, peak memory by owner, failures.
// The difference of each per step is an effect; configuration and workload differences (what
// changed) take the effects they explain, in that order; effects nobody explains are causes of
// their own when above the noise; what the effects do not add up to is unattributed.
#include "analysis/diff.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "analysis/call_site_text.h"
#include "analysis/common.h"
#include "analysis/engine.h"
#include "analysis/facts_io.h"
#include "analysis/pinning.h"
#include "analysis/rank_groups.h"
#include "analysis/search_budget.h"
#include "analysis/trackers/config.h"
#include "trace/symbolize.h"

namespace cuprobe::analysis {

using nlohmann::json;

namespace {

struct Side {
  std::vector<std::unique_ptr<reader::Trace>> traces;
  std::vector<ProcessFacts> procs;  // processes that did CUDA work, in report order
  std::vector<ProcessSettings> settings;
  std::vector<std::string> warnings;
};

Result<Side> load_side(const std::vector<std::string>& paths, int threads, const char* name) {
  Side s;
  auto opened = reader::open_all(paths, &s.warnings);
  if (!opened) return opened.error();
  s.traces = std::move(*opened);
  std::vector<ProcessFacts> all(s.traces.size());
  std::vector<std::string> errors(s.traces.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < s.traces.size();) {
      auto f = facts_of(*s.traces[i], FactOptions{});
      if (f) {
        all[i] = std::move(*f);
      } else {
        errors[i] = f.error().message;
      }
      s.traces[i]->release_events();
    }
  };
  unsigned workers = threads > 0 ? unsigned(threads) : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < std::min<unsigned>(workers, unsigned(s.traces.size())); ++w) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (size_t i = 0; i < all.size(); ++i) {
    if (!errors[i].empty()) {
      s.warnings.push_back(errors[i] + "; left out");
    } else if (all[i].did_work) {
      s.procs.push_back(std::move(all[i]));
    }
  }
  if (s.procs.empty()) return Error{fmt::format("{}: no process that did CUDA work", name)};
  std::stable_sort(s.procs.begin(), s.procs.end(), process_before);
  s.settings = infer_settings(s.procs);
  return s;
}

struct Plan {
  std::string problem, plan;
  double per_step = 0;  // executions per step
  double time_ms = -1;  // what the plan measured in this process's searches, -1 unknown
};

struct Metrics {
  double step_s = 0;
  uint64_t steps = 0;
  double warmup_s = 0;       // from the job's first work to its second step (or its end)
  double warm_search_s = 0;  // of it, in searches
  int warm_searches = 0;     // how many searches the warm-up made
  double search_s = 0;       // per step, searches after the warm-up
  int searches = 0;
  double sync_s = 0, alloc_s = 0;          // per step
  double sync_calls = 0;                   // per step
  std::map<std::string, double> sync_by_api;  // seconds per step
  double allocs = 0, alloc_bytes = 0;         // steady-state allocations and frees, and bytes allocated, per step
  uint64_t peak = 0;                       // the largest device peak
  std::map<std::string, uint64_t> owners;  // live by owner at that peak
  std::map<uint64_t, Plan> plans;          // by problem hash
  uint64_t failures = 0, ooms = 0, injected = 0;
};

Metrics metrics_of(const ProcessFacts& p) {
  Metrics m;
  m.steps = std::max<uint64_t>(p.steps, 1);
  std::vector<double> steps;
  for (size_t i = 1; i + 1 < p.step_starts.size(); ++i)
    steps.push_back(seconds(p.step_starts[i + 1] - p.step_starts[i]));
  if (steps.empty() && p.step_starts.size() == 2) steps.push_back(seconds(p.step_starts[1] - p.step_starts[0]));
  if (!steps.empty()) {
    std::nth_element(steps.begin(), steps.begin() + long(steps.size() / 2), steps.end());
    m.step_s = steps[steps.size() / 2];
  } else {
    m.step_s = span_s(p) / double(m.steps);  // no steps seen: the job's time as one step
  }
  const double n = double(m.steps);
  const uint64_t warm_end = p.second_pass_ns ? p.second_pass_ns : p.last_ns;
  m.warmup_s = seconds(warm_end > p.job_start_ns ? warm_end - p.job_start_ns : 0);
  const double steady_steps = double(std::max<uint64_t>(m.steps > 1 ? m.steps - 1 : 1, 1));
  // What each plan measured in the process's searches (the last time it was timed), by problem,
  // engine and knobs: the plan a problem ended on need not be a search's winner (a plan file, a
  // deferred search under the budget).
  std::map<std::tuple<uint64_t, int64_t, std::string>, double> measured;
  for (const auto& s : p.searches) {
    double took = seconds(s.end_ns > s.start_ns ? s.end_ns - s.start_ns : 0);
    if (s.start_ns < warm_end) {
      m.warm_search_s += took;
      ++m.warm_searches;
    } else {
      m.search_s += took / steady_steps;
    }
    ++m.searches;
    for (const auto& c : s.candidates) {
      if (c.time_ms >= 0) measured[{s.problem_hash, c.engine, c.knobs}] = c.time_ms;
    }
  }
  for (const auto& [api, ns] : p.sync_ns) {
    m.sync_s += seconds(ns) / n;
    m.sync_by_api[api] = seconds(ns) / n;
  }
  m.sync_calls = double(p.sync_calls) / n;
  m.alloc_s = seconds(p.steady_alloc_ns) / n;
  m.allocs = double(p.steady_allocs + p.steady_frees) / n;
  m.alloc_bytes = double(p.steady_alloc_bytes) / n;
  for (const auto& [d, mem] : p.memory) {
    if (mem.peak >= m.peak) {
      m.peak = mem.peak;
      m.owners = mem.live_by_owner;
    }
  }
  for (const auto& [hash, use] : p.problems) {
    if (use.plans.empty()) continue;
    const PlanUse& last = use.plans.back();
    auto t = measured.find({hash, last.engine, last.knobs});
    m.plans[hash] = Plan{use.problem, last.plan, double(last.executions) / n, t == measured.end() ? -1 : t->second};
  }
  for (const auto& f : p.cudnn_failures) m.failures += f.routine ? 0 : f.count;
  m.ooms = p.ooms.size();
  m.injected = p.injected.size();
  return m;
}

std::string ms_text(double s) { return fmt::format("{:+.2f} ms", s * 1e3); }
std::string plain_ms(double s) { return fmt::format("{:.2f} ms", s * 1e3); }

// What differs between the two sides' configuration, each with the effects it explains.
struct Change {
  std::string kind;  // "configuration", "workload"
  std::string what;
  std::set<std::string> explains;  // effect names: searches, plans, syncs, allocations, memory, failures
  json details = json::object();
};

// A library version, "unknown" when the trace has none.
std::string version_or_unknown(const ProcessFacts& p, const std::string& name) {
  std::string v = library_version(p, name);
  return v.empty() ? std::string("unknown") : v;
}

std::string setting_word(Setting s, const char* on, const char* off) {
  return s == Setting::kUnknown ? "unknown" : s == Setting::kOn ? on : off;
}

// The value all processes of a side share ("" when they differ or none says).
template <class F>
std::string common_value(const Side& s, const std::vector<size_t>& which, F value) {
  std::set<std::string> seen;
  for (size_t i : which) seen.insert(value(s.procs[i], s.settings[i]));
  return seen.size() == 1 ? *seen.begin() : (seen.empty() ? "" : "mixed");
}

// A setting a run is configured with: its name, its value in one process, and the effects a
// difference in it explains.
struct Dim {
  const char* name;
  std::function<std::string(const ProcessFacts&, const ProcessSettings&)> value;
  std::set<std::string> explains;
};

const std::vector<Dim>& setting_dims() {
  static const std::vector<Dim> dims = {
      {"cudnn.benchmark",
       [](const ProcessFacts&, const ProcessSettings& s) {
         return setting_word(s.benchmark, "on (timed searches)", "off (heuristics)");
       },
       {"searches", "plans", "memory"}},  // a search's workspace is part of the peak
      {"deterministic mode",
       [](const ProcessFacts&, const ProcessSettings& s) { return setting_word(s.deterministic, "on", "off"); },
       {"plans"}},
      {"TF32",
       [](const ProcessFacts&, const ProcessSettings& s) { return setting_word(s.tf32, "on", "off"); },
       {"plans"}},
      {"cuDNN",
       [](const ProcessFacts& p, const ProcessSettings&) { return cudnn_version_text(p.config.cudnn); },
       {"plans", "searches"}},
      {"CUDA runtime",
       [](const ProcessFacts& p, const ProcessSettings&) { return cuda_version_text(p.config.cuda_runtime); },
       {"plans"}},
      {"GPU", [](const ProcessFacts& p, const ProcessSettings&) { return p.config.gpu; }, {"plans", "searches"}},
      {"PyTorch",
       [](const ProcessFacts& p, const ProcessSettings&) { return version_or_unknown(p, "torch"); },
       {"plans", "searches", "memory", "allocations", "syncs"}},
      {"NCCL", [](const ProcessFacts& p, const ProcessSettings&) { return version_or_unknown(p, "nccl"); }, {"syncs"}},
      {"NVIDIA driver",
       [](const ProcessFacts& p, const ProcessSettings&) { return version_or_unknown(p, "nvidia_driver"); },
       {"plans"}},
      {"CUDA driver (newest CUDA it supports)",
       [](const ProcessFacts& p, const ProcessSettings&) { return cuda_version_text(p.config.cuda_driver); },
       {"plans"}},
      {"plan file (record --pin-plans)",
       [](const ProcessFacts& p, const ProcessSettings&) {
         PinSummary s = pin_summary(p);
         return s.active ? fmt::format("{} plans pinned", s.pinned) : std::string("none");
       },
       {"searches", "plans"}},
      {"search budget (record --search-budget)",
       [](const ProcessFacts& p, const ProcessSettings&) {
         BudgetSummary s = budget_summary(p);
         return s.active ? fmt::format("{} selections budgeted", s.budgeted) : std::string("none");
       },
       {"searches", "plans"}},
      {"memory cap (record --mem-cap)",
       [](const ProcessFacts& p, const ProcessSettings&) {
         std::string t;
         for (const auto& [d, bytes] : p.mem_cap)
           t += fmt::format("{}device {}: {}", t.empty() ? "" : ", ", d, human_bytes(bytes));
         return t.empty() ? std::string("none") : t;
       },
       {"memory", "failures", "allocations"}},
      {"fault plan (record --fault)",
       [](const ProcessFacts& p, const ProcessSettings&) {
         std::string t;
         for (const auto& r : p.fault_rules) {
           if (!r.mem_cap) t += (t.empty() ? "" : "; ") + r.text;
         }
         return t.empty() ? std::string("none") : t;
       },
       {"failures", "searches", "plans"}},
      {"PyTorch allocator configuration",
       [](const ProcessFacts& p, const ProcessSettings&) {
         return p.alloc_conf.empty() ? std::string("unset") : p.alloc_conf;
       },
       {"memory", "allocations", "failures"}},
  };
  return dims;
}

// Of the processes `ia` of A and `ib` of B.
void configuration_changes(const Side& a, const std::vector<size_t>& ia, const Side& b, const std::vector<size_t>& ib,
                           std::vector<Change>& out) {
  for (const auto& d : setting_dims()) {
    std::string va = common_value(a, ia, d.value), vb = common_value(b, ib, d.value);
    // A setting one side's traces cannot tell (pinned selections show one candidate, so nothing
    // of deterministic mode or TF32) is not a difference.
    if (va == vb || va == "unknown" || vb == "unknown") continue;
    out.push_back({"configuration",
                   fmt::format("{}: {} in A, {} in B", d.name, va, vb),
                   d.explains,
                   {{"setting", d.name}, {"a", va}, {"b", vb}}});
  }
  // Environment variables the shim recorded (CUPROBE_*, PYTORCH_*, CUDNN_*, NCCL_*, ...), of the
  // first process of each side; those above already say what they change.
  const auto& ea = a.procs[ia.front()].trace->process().environment;
  const auto& eb = b.procs[ib.front()].trace->process().environment;
  std::set<std::string> names;
  for (const auto& [k, v] : ea) names.insert(k);
  for (const auto& [k, v] : eb) names.insert(k);
  for (const auto& k : names) {
    // Where and how quietly it was recorded; and the variables the settings above stand for.
    static const std::set<std::string> kSaid = {
        "CUPROBE_OUT",       "CUPROBE_QUIET",         "CUPROBE_MEM_CAP",         "CUPROBE_FAULTS",
        "CUPROBE_PIN_PLANS", "CUPROBE_SEARCH_BUDGET", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"};
    if (kSaid.count(k)) continue;
    auto ia = ea.find(k), ib = eb.find(k);
    std::string va = ia == ea.end() ? "unset" : ia->second, vb = ib == eb.end() ? "unset" : ib->second;
    if (va == vb) continue;
    out.push_back(
        {"environment", fmt::format("{}={} in A, {} in B", k, va, vb), {}, {{"variable", k}, {"a", va}, {"b", vb}}});
  }
}

// Pairs of processes, rank to rank when every process of both sides has one, else by label
// (program and device), in report order among processes of one label.
std::vector<std::pair<size_t, size_t>> match(const Side& a, const Side& b, bool* by_rank) {
  auto ranked = [](const Side& s) {
    return std::all_of(s.procs.begin(), s.procs.end(), [](const ProcessFacts& p) { return p.rank >= 0; });
  };
  std::vector<std::pair<size_t, size_t>> pairs;
  *by_rank = ranked(a) && ranked(b);
  if (*by_rank) {
    std::map<int, size_t> rb;
    for (size_t j = 0; j < b.procs.size(); ++j) rb[b.procs[j].rank] = j;
    for (size_t i = 0; i < a.procs.size(); ++i) {
      if (auto it = rb.find(a.procs[i].rank); it != rb.end()) pairs.emplace_back(i, it->second);
    }
  } else {
    // By label: the program and the device, then in order among processes of the same label.
    auto label = [](const ProcessFacts& p) {
      return fmt::format("{} cuda:{}", program_name(p.trace->process().cmdline), p.device);
    };
    std::map<std::string, std::vector<size_t>> lb;
    for (size_t j = 0; j < b.procs.size(); ++j) lb[label(b.procs[j])].push_back(j);
    std::map<std::string, size_t> used;
    for (size_t i = 0; i < a.procs.size(); ++i) {
      std::string k = label(a.procs[i]);
      auto it = lb.find(k);
      if (it != lb.end() && used[k] < it->second.size()) pairs.emplace_back(i, it->second[used[k]++]);
    }
  }
  return pairs;
}

// What the processes ran that the other side's did not (new shapes, another model), from the
// problems each side's matched processes ran.
void workload_changes(const std::vector<Metrics>& ma, const std::vector<Metrics>& mb, std::vector<Change>& out) {
  std::map<uint64_t, std::string> pa, pb;
  for (const auto& m : ma) {
    for (const auto& [h, plan] : m.plans) pa[h] = plan.problem;
  }
  for (const auto& m : mb) {
    for (const auto& [h, plan] : m.plans) pb[h] = plan.problem;
  }
  std::vector<std::string> only_b, only_a;
  for (const auto& [h, t] : pb) {
    if (!pa.count(h)) only_b.push_back(t);
  }
  for (const auto& [h, t] : pa) {
    if (!pb.count(h)) only_a.push_back(t);
  }
  if (only_b.empty() && only_a.empty()) return;
  auto first = [](const std::vector<std::string>& v) {
    json out = json::array();
    for (size_t i = 0; i < v.size() && i < 5; ++i) out.push_back(v[i]);
    return out;
  };
  out.push_back(
      {"workload",
       fmt::format("the problems differ: {} cuDNN problem{} ran only in B, {} only in A (other shapes, layers or "
                   "dtypes), of {} in A and {} in B",
                   only_b.size(), only_b.size() == 1 ? "" : "s", only_a.size(), pa.size(), pb.size()),
       {"searches", "plans", "memory"},
       {{"only_in_b", only_b.size()},
        {"only_in_a", only_a.size()},
        {"examples_b", first(only_b)},
        {"examples_a", first(only_a)}}});
}

// Effects per step (B minus A, averaged over the pairs) and what the plans that changed measured.
struct Effects {
  std::map<std::string, double> s;  // searches, plans, syncs, allocations
  json plan_changes = json::array();
  int plans_changed = 0, plans_compared = 0;
  double step_a = 0, step_b = 0;
  double warm_a = 0, warm_b = 0;                    // the warm-up
  double warm_search_a = 0, warm_search_b = 0;       // the warm-up's searches, each side (seconds)
  double warm_searches_a = 0, warm_searches_b = 0;   // how many, each side
  double warm_search() const { return warm_search_b - warm_search_a; }  // their change (B minus A)
  uint64_t peak_a = 0, peak_b = 0;
  std::map<std::string, int64_t> owner_delta;
  int64_t failures = 0, ooms = 0, injected = 0;
  // Per step, averaged over the pairs: synchronizations (calls, time by API) and steady-state
  // allocations (calls, bytes), each side.
  double sync_calls_a = 0, sync_calls_b = 0, sync_a = 0, sync_b = 0;
  std::map<std::string, std::pair<double, double>> sync_by_api;  // api -> (A, B) seconds per step
  double allocs_a = 0, allocs_b = 0, alloc_bytes_a = 0, alloc_bytes_b = 0, alloc_a = 0, alloc_b = 0;
};

Effects effects_of(const std::vector<Metrics>& ma, const std::vector<Metrics>& mb) {
  Effects e;
  const double n = double(ma.size());
  std::map<std::string, json> changes;  // problem text -> example change
  for (size_t k = 0; k < ma.size(); ++k) {
    const Metrics& a = ma[k];
    const Metrics& b = mb[k];
    e.step_a += a.step_s / n;
    e.step_b += b.step_s / n;
    e.warm_a += a.warmup_s / n;
    e.warm_b += b.warmup_s / n;
    e.warm_search_a += a.warm_search_s / n;
    e.warm_search_b += b.warm_search_s / n;
    e.warm_searches_a += a.warm_searches / n;
    e.warm_searches_b += b.warm_searches / n;
    e.s["searches"] += (b.search_s - a.search_s) / n;
    e.s["syncs"] += (b.sync_s - a.sync_s) / n;
    e.s["allocations"] += (b.alloc_s - a.alloc_s) / n;
    e.sync_calls_a += a.sync_calls / n;
    e.sync_calls_b += b.sync_calls / n;
    e.sync_a += a.sync_s / n;
    e.sync_b += b.sync_s / n;
    for (const auto& [api, v] : a.sync_by_api) e.sync_by_api[api].first += v / n;
    for (const auto& [api, v] : b.sync_by_api) e.sync_by_api[api].second += v / n;
    e.allocs_a += a.allocs / n;
    e.allocs_b += b.allocs / n;
    e.alloc_bytes_a += a.alloc_bytes / n;
    e.alloc_bytes_b += b.alloc_bytes / n;
    e.alloc_a += a.alloc_s / n;
    e.alloc_b += b.alloc_s / n;
    e.peak_a = std::max(e.peak_a, a.peak);
    e.peak_b = std::max(e.peak_b, b.peak);
    std::set<std::string> owners;
    for (const auto& [o, v] : a.owners) owners.insert(o);
    for (const auto& [o, v] : b.owners) owners.insert(o);
    for (const auto& o : owners) {
      auto ia = a.owners.find(o), ib = b.owners.find(o);
      int64_t d = int64_t(ib == b.owners.end() ? 0 : ib->second) - int64_t(ia == a.owners.end() ? 0 : ia->second);
      e.owner_delta[o] += d / int64_t(ma.size());
    }
    e.failures += int64_t(b.failures) - int64_t(a.failures);
    e.ooms += int64_t(b.ooms) - int64_t(a.ooms);
    e.injected += int64_t(b.injected) - int64_t(a.injected);
    for (const auto& [h, pb] : b.plans) {
      auto it = a.plans.find(h);
      if (it == a.plans.end()) continue;
      const Plan& pa = it->second;
      ++e.plans_compared;
      if (pa.plan == pb.plan) continue;
      ++e.plans_changed;
      double contrib = pa.time_ms >= 0 && pb.time_ms >= 0 ? (pb.time_ms - pa.time_ms) / 1e3 * pb.per_step : 0;
      e.s["plans"] += contrib / n;
      if (!changes.count(pb.problem)) {
        changes[pb.problem] = {{"problem", pb.problem},
                               {"a", pa.plan},
                               {"b", pb.plan},
                               {"a_ms", pa.time_ms >= 0 ? json(pa.time_ms) : json(nullptr)},
                               {"b_ms", pb.time_ms >= 0 ? json(pb.time_ms) : json(nullptr)},
                               {"runs_per_step", pb.per_step}};
      }
    }
  }
  e.s.try_emplace("plans", 0.0);
  for (auto& [t, c] : changes) {
    if (e.plan_changes.size() < 10) e.plan_changes.push_back(c);
  }
  return e;
}

const char* effect_text(const std::string& name) {
  if (name == "searches") return "time in cuDNN searches";
  if (name == "plans") return "the plans that changed (their measured times)";
  if (name == "syncs") return "time blocked in synchronizations";
  if (name == "allocations") return "time in steady-state allocations";
  return "";
}

// What was measured of synchronizations and steady-state allocations, both sides, per step (the
// "syncs" and "allocations" objects of cuprobe-diff/1).
json syncs_json(const Effects& e) {
  json by_api = json::object();
  for (const auto& [api, v] : e.sync_by_api) by_api[api] = {{"a_s", v.first}, {"b_s", v.second}};
  return {{"a_calls_per_step", e.sync_calls_a},
          {"b_calls_per_step", e.sync_calls_b},
          {"a_s_per_step", e.sync_a},
          {"b_s_per_step", e.sync_b},
          {"by_api", by_api},
          {"a_sites", json::array()},
          {"b_sites", json::array()}};
}

json allocations_json(const Effects& e) {
  return {{"a_calls_per_step", e.allocs_a},
          {"b_calls_per_step", e.allocs_b},
          {"a_bytes_per_step", e.alloc_bytes_a},
          {"b_bytes_per_step", e.alloc_bytes_b},
          {"a_s_per_step", e.alloc_a},
          {"b_s_per_step", e.alloc_b},
          {"a_sites", json::array()},
          {"b_sites", json::array()}};
}

// An effect nothing configured explains, in words with what was measured of it.
std::string effect_what(const std::string& name, const Effects& e) {
  if (name == "syncs") {
    // The API whose time changed most.
    std::string api;
    double most = 0;
    for (const auto& [n, v] : e.sync_by_api) {
      if (std::fabs(v.second - v.first) > most) {
        most = std::fabs(v.second - v.first);
        api = n;
      }
    }
    std::string t =
        fmt::format("{}: {:.1f} calls per step in A, {:.1f} in B", effect_text(name), e.sync_calls_a, e.sync_calls_b);
    if (!api.empty()) {
      const auto& v = e.sync_by_api.at(api);
      t += fmt::format("; most of it in {} ({} per step in A, {} in B)", api, plain_ms(v.first), plain_ms(v.second));
    }
    return t;
  }
  if (name == "allocations") {
    return fmt::format("{}: {:.1f} allocations and frees per step in A ({}/step), {:.1f} in B ({}/step)",
                       effect_text(name), e.allocs_a, human_bytes(uint64_t(e.alloc_bytes_a)), e.allocs_b,
                       human_bytes(uint64_t(e.alloc_bytes_b)));
  }
  return effect_text(name);
}

json causes_of(std::vector<Change>& changes, const Effects& e, double noise, double* unattributed, json* notes) {
  json causes = json::array();
  std::set<std::string> taken;
  double attributed = 0;
  // Changes first (configuration, then workload, then environment): what differs explains the
  // effects it can, each effect once.
  std::stable_sort(changes.begin(), changes.end(), [](const Change& x, const Change& y) {
    auto rank = [](const std::string& k) { return k == "configuration" ? 0 : k == "workload" ? 1 : 2; };
    return rank(x.kind) < rank(y.kind);
  });
  for (const auto& c : changes) {
    double contrib = 0;
    json parts = json::object();
    json warm = nullptr, memory = nullptr;
    if (c.explains.count("memory") && !taken.count("memory") && e.peak_b != e.peak_a) {
      taken.insert("memory");
      memory = int64_t(e.peak_b) - int64_t(e.peak_a);
    }
    for (const auto& name : c.explains) {
      auto it = e.s.find(name);
      if (it == e.s.end() || taken.count(name)) continue;
      taken.insert(name);
      contrib += it->second;
      parts[name] = it->second;
      if (name == "searches") warm = e.warm_search();
    }
    attributed += contrib;
    causes.push_back({{"kind", c.kind},
                      {"what", c.what},
                      {"contribution_s_per_step", parts.empty() ? json(nullptr) : json(contrib)},
                      {"effects", parts},
                      {"warmup_searches_s", warm},
                      {"peak_memory_delta", memory},
                      {"details", c.details}});
  }
  // Effects no change explains: causes of their own above the noise.
  std::vector<std::pair<std::string, double>> rest;
  for (const auto& [name, v] : e.s) {
    if (!taken.count(name) && std::fabs(v) > noise) rest.emplace_back(name, v);
  }
  std::sort(rest.begin(), rest.end(),
            [](const auto& x, const auto& y) { return std::fabs(x.second) > std::fabs(y.second); });
  for (const auto& [name, v] : rest) {
    attributed += v;
    causes.push_back({{"kind", name},
                      {"what", effect_what(name, e)},
                      {"contribution_s_per_step", v},
                      {"effects", {{name, v}}},
                      {"warmup_searches_s", nullptr},
                      {"peak_memory_delta", nullptr},
                      {"details", name == "syncs"         ? syncs_json(e)
                                  : name == "allocations" ? allocations_json(e)
                                                          : json::object()}});
  }
  // The warm-up's searches, when no change took them and they moved by more than a tenth of A's
  // warm-up (at least 5 ms): a cause when the warm-up searched more or less; the same searches at
  // another speed are a note. On an H100, two runs of one ResNet-50 made the same 68 searches in
  // 10.8 s and 3.4 s: a machine's first process loads cuDNN's kernels and heuristics cold, later
  // ones find them cached.
  bool warm_moved = std::fabs(e.warm_search()) > std::max(0.1 * e.warm_a, 5e-3);
  if (!taken.count("searches") && warm_moved && std::lround(e.warm_searches_a) == std::lround(e.warm_searches_b)) {
    notes->push_back(fmt::format(
        "the warm-up's {} cuDNN searches took {:.3f} s in A and {:.3f} s in B: the same searches at another speed "
        "(a machine's first process loads cuDNN's kernels cold, later ones find them cached), not a difference "
        "in the job",
        std::lround(e.warm_searches_a), e.warm_search_a, e.warm_search_b));
  } else if (!taken.count("searches") && warm_moved) {
    causes.push_back({{"kind", "searches"},
                      {"what", fmt::format("time in cuDNN searches during the warm-up ({} searches in A, {} in B)",
                                           std::lround(e.warm_searches_a), std::lround(e.warm_searches_b))},
                      {"contribution_s_per_step", nullptr},
                      {"effects", json::object()},
                      {"warmup_searches_s", e.warm_search()},
                      {"peak_memory_delta", nullptr},
                      {"details", json::object()}});
  }
  // Peak memory nothing explains: a tenth of A's peak, at least 64 MiB.
  int64_t dpeak = int64_t(e.peak_b) - int64_t(e.peak_a);
  if (!taken.count("memory") && std::fabs(double(dpeak)) > std::max(0.1 * double(e.peak_a), double(64ull << 20))) {
    causes.push_back({{"kind", "memory"},
                      {"what", "peak device memory"},
                      {"contribution_s_per_step", nullptr},
                      {"effects", json::object()},
                      {"warmup_searches_s", nullptr},
                      {"peak_memory_delta", dpeak},
                      {"details", json::object()}});
  }
  for (const auto& [name, v] : e.s) {
    if (!taken.count(name) && std::fabs(v) <= noise) attributed += v;
  }
  *unattributed = (e.step_b - e.step_a) - attributed;
  return causes;
}

}  // namespace

namespace {

// Processes `ia` of A against `ib` of B (ia[k] with ib[k]): what diff_runs and diff_ranks report
// of a comparison.
json compare(const Side& a, const std::vector<size_t>& ia, const Side& b, const std::vector<size_t>& ib) {
  std::vector<Metrics> ma, mb;
  json pair_list = json::array();
  for (size_t k = 0; k < ia.size(); ++k) {
    ma.push_back(metrics_of(a.procs[ia[k]]));
    mb.push_back(metrics_of(b.procs[ib[k]]));
    pair_list.push_back({{"a", process_label(a.procs[ia[k]])}, {"b", process_label(b.procs[ib[k]])}});
  }
  Effects e = effects_of(ma, mb);
  std::vector<Change> changes;
  configuration_changes(a, ia, b, ib, changes);
  workload_changes(ma, mb, changes);
  // Noise: a tenth of A's step, at least 0.5 ms: identical runs' steps and searches differ by
  // about that much from run to run (docs/commands/diff.md).
  const double noise = std::max(0.1 * e.step_a, 0.5e-3);
  // Plans that changed with nothing configured differently: the benchmark's own choice between
  // near-equal plans (on an H100, two runs of one ResNet-50 ended 30 of 68 problems on other knobs
  // of the same engines, measured within a microsecond), or another machine's timing. A cause
  // when what they measured differs by more than the noise, or when a side's times are unknown;
  // else a note, not a cause.
  json notes = json::array();
  if (e.plans_changed > 0) {
    bool explained =
        std::any_of(changes.begin(), changes.end(), [](const Change& c) { return c.explains.count("plans") != 0; });
    bool measured = std::all_of(e.plan_changes.begin(), e.plan_changes.end(),
                                [](const json& c) { return c["a_ms"].is_number() && c["b_ms"].is_number(); });
    std::string what = fmt::format("{} of {} problems ran with other plans", e.plans_changed, e.plans_compared);
    if (explained || !measured || std::fabs(e.s.at("plans")) > noise) {
      changes.push_back({"plans", what, {"plans"}, {{"changed", e.plan_changes}}});
    } else {
      notes.push_back(
          fmt::format("{}, as the benchmark's choice between plans that measured alike: {} per step "
                      "in all, below the noise",
                      what, ms_text(e.s.at("plans"))));
    }
  }
  double unattributed = 0;
  json causes = causes_of(changes, e, noise, &unattributed, &notes);
  if (e.ooms != 0 || e.failures != 0 || e.injected != 0) {
    causes.push_back(
        {{"kind", "failures"},
         {"what", fmt::format("failures per process: out-of-memory {:+d}, cuDNN {:+d}, injected {:+d} (B minus A)",
                              e.ooms, e.failures, e.injected)},
         {"contribution_s_per_step", nullptr},
         {"effects", json::object()},
         {"warmup_searches_s", nullptr},
         {"peak_memory_delta", nullptr},
         {"details", {{"ooms", e.ooms}, {"cudnn_failures", e.failures}, {"injected", e.injected}}}});
  }
  json owners = json::object();
  for (const auto& [o, d] : e.owner_delta) {
    if (d != 0) owners[o] = d;
  }
  // Where the steady-state allocations came from, each side (of the first pair), when their
  // number changed by half a call per step or more: symbolizing is only worth it then.
  json allocations = allocations_json(e);
  reader::Symbolizer symbols;  // opened only if a side's sites are asked for
  AllFacts sites;
  sites.symbols = &symbols;
  const ProcessFacts& pa = a.procs[ia.front()];
  const ProcessFacts& pb = b.procs[ib.front()];
  if (std::fabs(e.allocs_b - e.allocs_a) >= 0.5) {
    allocations["a_sites"] = top_sites(sites, pa, pa.steady_alloc_stacks, "steady-state allocations from");
    allocations["b_sites"] = top_sites(sites, pb, pb.steady_alloc_stacks, "steady-state allocations from");
  }
  // Likewise where the synchronizations came from (a sample of them in long runs).
  json syncs = syncs_json(e);
  if (std::fabs(e.sync_calls_b - e.sync_calls_a) >= 0.5) {
    syncs["a_sites"] = top_sites(sites, pa, pa.sync_stacks, "synchronizations from", 3, pa.sync_stack_stride);
    syncs["b_sites"] = top_sites(sites, pb, pb.sync_stacks, "synchronizations from", 3, pb.sync_stack_stride);
    if (syncs["a_sites"].empty() && syncs["b_sites"].empty()) {
      syncs["sites_note"] =
          "where they came from is not known: synchronizations carry their call stacks only when recorded with "
          "cuprobe record --stacks all";
    }
  }
  for (auto& c : causes) {
    if (c["kind"] == "allocations") c["details"] = allocations;
    if (c["kind"] == "syncs") c["details"] = syncs;
  }
  // Processes whose traces lack routine calls from part of the run (the flight recorder's ring, a
  // capture window): their synchronizations per step are of the part kept.
  json coverage = {{"a", json::array()}, {"b", json::array()}};
  for (size_t k = 0; k < ia.size(); ++k) {
    if (std::string t = coverage_text(a.procs[ia[k]]); !t.empty())
      coverage["a"].push_back({{"process", process_label(a.procs[ia[k]])}, {"text", t}});
    if (std::string t = coverage_text(b.procs[ib[k]]); !t.empty())
      coverage["b"].push_back({{"process", process_label(b.procs[ib[k]])}, {"text", t}});
  }
  return json{
      {"syncs", syncs},
      {"allocations", allocations},
      {"coverage", coverage},
      {"pairs", pair_list},
      {"step_time",
       {{"a_s", e.step_a},
        {"b_s", e.step_b},
        {"delta_s", e.step_b - e.step_a},
        {"ratio", e.step_a > 0 ? json(e.step_b / e.step_a) : json(nullptr)},
        {"throughput_ratio", e.step_b > 0 ? json(e.step_a / e.step_b) : json(nullptr)}}},
      {"warmup",
       {{"a_s", e.warm_a}, {"b_s", e.warm_b}, {"delta_s", e.warm_b - e.warm_a}, {"searches_delta_s", e.warm_search()}}},
      {"peak_memory",
       {{"a", e.peak_a}, {"b", e.peak_b}, {"delta", int64_t(e.peak_b) - int64_t(e.peak_a)}, {"by_owner", owners}}},
      {"causes", causes},
      {"unattributed_s_per_step", unattributed},
      {"notes", notes},
      {"noise_s_per_step", noise}};
}

}  // namespace

Result<json> diff_runs(const DiffOptions& o) {
  auto a = load_side(o.a, o.threads, "A");
  if (!a) return a.error();
  auto b = load_side(o.b, o.threads, "B");
  if (!b) return b.error();
  bool by_rank = false;
  auto pairs = match(*a, *b, &by_rank);
  if (pairs.empty()) return Error{"no process of A matches one of B (by rank, or by program and device)"};
  std::vector<size_t> ia, ib;
  for (const auto& [i, j] : pairs) {
    ia.push_back(i);
    ib.push_back(j);
  }
  json d = compare(*a, ia, *b, ib);
  auto side = [](const Side& s, const std::vector<std::string>& paths, const json& step, const json& peak) {
    return json{
        {"paths", paths}, {"processes", s.procs.size()}, {"step_s", step}, {"peak", peak}, {"warnings", s.warnings}};
  };
  d["format"] = "cuprobe-diff/1";
  d["a"] = side(*a, o.a, d["step_time"]["a_s"], d["peak_memory"]["a"]);
  d["b"] = side(*b, o.b, d["step_time"]["b_s"], d["peak_memory"]["b"]);
  d["matched_by"] = by_rank ? "rank" : "program and device";
  return d;
}

Result<json> diff_ranks(const DiffOptions& o) {
  auto s = load_side(o.a, o.threads, "the run");
  if (!s) return s.error();
  if (s->procs.size() < 2) return Error{"--ranks compares a job's ranks: this run has one process that did CUDA work"};
  // The typical process: of the processes configured as most of them are (every setting diff
  // compares), the one whose step is their median. By step alone, a job of ranks with steps alike
  // could take its one differently configured rank as the typical one and blame all the others.
  std::map<std::string, std::vector<size_t>> by_settings;
  for (size_t i = 0; i < s->procs.size(); ++i) {
    std::string key;
    for (const auto& d : setting_dims()) key += d.value(s->procs[i], s->settings[i]) + '\n';
    by_settings[key].push_back(i);
  }
  const std::vector<size_t>* most = nullptr;
  for (const auto& [key, which] : by_settings) {
    if (most == nullptr || which.size() > most->size()) most = &which;
  }
  std::vector<std::pair<double, size_t>> steps;
  for (size_t i : *most) steps.emplace_back(metrics_of(s->procs[i]).step_s, i);
  std::sort(steps.begin(), steps.end());
  const size_t typical = steps[steps.size() / 2].second;
  json ranks = json::array();
  for (size_t i = 0; i < s->procs.size(); ++i) {
    if (i == typical) continue;
    json c = compare(*s, {typical}, *s, {i});
    double delta = c["step_time"]["delta_s"];
    if (c["causes"].empty() && std::fabs(delta) <= c["noise_s_per_step"].get<double>()) continue;
    // Said of this process against the typical one, not of runs A and B.
    for (auto& cause : c["causes"]) {
      std::string w = cause["what"];
      auto swap = [&](const std::string& from, const std::string& to) {
        for (size_t at; (at = w.find(from)) != std::string::npos;) w.replace(at, from.size(), to);
      };
      swap(" in A, ", " in the typical process, ");
      if (w.size() >= 5 && w.compare(w.size() - 5, 5, " in B") == 0) w.replace(w.size() - 5, 5, " here");
      swap("(B minus A)", "(here minus the typical process)");
      swap("ran only in B, ", "ran only here, ");
      cause["what"] = w;
    }
    ranks.push_back({{"process", process_label(s->procs[i])},
                     {"rank", s->procs[i].rank},
                     {"step_s", c["step_time"]["b_s"]},
                     {"delta_s", delta},
                     {"causes", c["causes"]},
                     {"unattributed_s_per_step", c["unattributed_s_per_step"]}});
  }
  std::stable_sort(ranks.begin(), ranks.end(), [](const json& x, const json& y) {
    return x["delta_s"].get<double>() > y["delta_s"].get<double>();
  });
  return json{{"format", "cuprobe-diff-ranks/1"},
              {"paths", o.a},
              {"processes", s->procs.size()},
              {"typical", process_label(s->procs[typical])},
              {"typical_step_s", steps[steps.size() / 2].first},
              {"noise_s_per_step", std::max(0.1 * steps[steps.size() / 2].first, 0.5e-3)},
              {"ranks", ranks},
              {"warnings", s->warnings}};
}

void print_diff_ranks(const json& d, FILE* out) {
  constexpr size_t kShown = 20;
  fmt::print(out, "cuprobe diff --ranks: {} processes; the typical one is {} (step {})\n", d["processes"].get<size_t>(),
             d["typical"].get<std::string>(), plain_ms(d["typical_step_s"]));
  const json& r = d["ranks"];
  if (r.empty()) {
    fmt::print(out, "\nEvery process looks like the typical one (no difference above {} per step).\n",
               plain_ms(d["noise_s_per_step"]));
  }
  for (size_t i = 0; i < r.size() && i < kShown; ++i) {
    fmt::print(out, "\n{}: step {} ({} against the typical one)\n", r[i]["process"].get<std::string>(),
               plain_ms(r[i]["step_s"]), ms_text(r[i]["delta_s"]));
    int k = 0;
    for (const auto& c : r[i]["causes"]) {
      std::string contrib = c["contribution_s_per_step"].is_number()
                                ? fmt::format(": {} per step", ms_text(c["contribution_s_per_step"]))
                                : "";
      fmt::print(out, "  {}. [{}] {}{}\n", ++k, c["kind"].get<std::string>(), c["what"].get<std::string>(), contrib);
    }
    fmt::print(out, "  unattributed: {} per step\n", ms_text(r[i]["unattributed_s_per_step"]));
  }
  if (r.size() > kShown)
    fmt::print(out, "\nand {} more processes that differ (--json lists them all)\n", r.size() - kShown);
  for (const auto& w : d["warnings"]) fmt::print(out, "  note: {}\n", w.get<std::string>());
}

namespace {
// Where each side's synchronizations or allocations came from, when the diff placed them.
void print_sites(FILE* out, const json& measured) {
  for (const char* side : {"a_sites", "b_sites"}) {
    for (const auto& site : measured[side]) {
      fmt::print(out, "    {}: {}\n", side[0] == 'a' ? "A" : "B", short_call_site(site.get<std::string>()));
    }
  }
}
}  // namespace

void print_diff(const json& d, FILE* out) {
  const json& a = d["a"];
  const json& b = d["b"];
  fmt::print(out, "cuprobe diff: A ({} process{}) against B ({} process{}), {} pair{} matched by {}\n",
             a["processes"].get<size_t>(), a["processes"] == 1 ? "" : "es", b["processes"].get<size_t>(),
             b["processes"] == 1 ? "" : "es", d["pairs"].size(), d["pairs"].size() == 1 ? "" : "s",
             d["matched_by"].get<std::string>());
  const json& st = d["step_time"];
  double sa = st["a_s"], sb = st["b_s"];
  fmt::print(out, "  step time: {} in A, {} in B ({}{})\n", plain_ms(sa), plain_ms(sb), ms_text(sb - sa),
             sa > 0 && sb > 0
                 ? fmt::format(", {:+.0f}%; steps per second {:+.0f}%", (sb / sa - 1) * 100, (sa / sb - 1) * 100)
                 : "");
  const json& w = d["warmup"];
  fmt::print(
      out, "  warm-up (first work to the second step): {:.3f} s in A, {:.3f} s in B ({:+.3f} s; searches {:+.3f} s)\n",
      w["a_s"].get<double>(), w["b_s"].get<double>(), w["delta_s"].get<double>(), w["searches_delta_s"].get<double>());
  const json& pm = d["peak_memory"];
  std::string owners;
  for (auto it = pm["by_owner"].begin(); it != pm["by_owner"].end(); ++it) {
    int64_t v = it.value();
    owners += fmt::format("{}{} {}{}", owners.empty() ? "" : ", ", it.key(), v < 0 ? "-" : "+",
                          human_bytes(uint64_t(std::llabs(v))));
  }
  fmt::print(out, "  peak memory: {} in A, {} in B{}\n", human_bytes(pm["a"]), human_bytes(pm["b"]),
             owners.empty() ? "" : " (" + owners + ")");
  if (const json& sy = d["syncs"];
      sy["a_calls_per_step"].get<double>() > 0 || sy["b_calls_per_step"].get<double>() > 0) {
    fmt::print(out, "  synchronizations per step: {:.1f} calls, {} blocked in A; {:.1f} calls, {} in B\n",
               sy["a_calls_per_step"].get<double>(), plain_ms(sy["a_s_per_step"]), sy["b_calls_per_step"].get<double>(),
               plain_ms(sy["b_s_per_step"]));
    print_sites(out, sy);
    if (sy.contains("sites_note")) fmt::print(out, "    ({})\n", sy["sites_note"].get<std::string>());
  }
  if (const json& al = d["allocations"];
      al["a_calls_per_step"].get<double>() > 0 || al["b_calls_per_step"].get<double>() > 0) {
    fmt::print(out, "  steady-state allocations and frees per step: {:.1f} ({}, {}) in A; {:.1f} ({}, {}) in B\n",
               al["a_calls_per_step"].get<double>(), human_bytes(uint64_t(al["a_bytes_per_step"].get<double>())),
               plain_ms(al["a_s_per_step"]), al["b_calls_per_step"].get<double>(),
               human_bytes(uint64_t(al["b_bytes_per_step"].get<double>())), plain_ms(al["b_s_per_step"]));
    print_sites(out, al);
  }
  if (d["causes"].empty()) {
    fmt::print(out, "\nNo difference above the noise ({} per step).\n", plain_ms(d["noise_s_per_step"]));
  } else {
    fmt::print(out, "\ncauses, what differs first, then measured effects by size:\n");
    int k = 0;
    for (const auto& c : d["causes"]) {
      std::string contrib;
      if (c["contribution_s_per_step"].is_number()) {
        std::string parts;
        for (auto it = c["effects"].begin(); it != c["effects"].end(); ++it) {
          parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", it.key(), ms_text(it.value()));
        }
        contrib = fmt::format(": {} per step ({})", ms_text(c["contribution_s_per_step"]), parts);
      }
      if (c["peak_memory_delta"].is_number()) {
        int64_t v = c["peak_memory_delta"];
        contrib += fmt::format("{}peak memory {}{}", contrib.empty() ? ": " : "; ", v < 0 ? "-" : "+",
                               human_bytes(uint64_t(std::llabs(v))));
      }
      if (c["warmup_searches_s"].is_number()) {
        contrib += fmt::format("{}warm-up searches {:+.3f} s", contrib.empty() ? ": " : "; ",
                               c["warmup_searches_s"].get<double>());
      }
      fmt::print(out, "  {}. [{}] {}{}\n", ++k, c["kind"].get<std::string>(), c["what"].get<std::string>(), contrib);
      if (c["kind"] == "plans") {
        for (const auto& p : c["details"]["changed"]) {
          auto t = [](const json& v) {
            return v.is_number() ? fmt::format("{:.3f} ms", v.get<double>()) : std::string("not measured");
          };
          fmt::print(out, "       {}: {} ({}) in A, {} ({}) in B\n", p["problem"].get<std::string>(),
                     p["a"].get<std::string>(), t(p["a_ms"]), p["b"].get<std::string>(), t(p["b_ms"]));
        }
      }
    }
  }
  fmt::print(out, "  unattributed: {} per step (the noise threshold is {}: a tenth of A's step, at least 0.5 ms)\n",
             ms_text(d["unattributed_s_per_step"]), plain_ms(d["noise_s_per_step"]));
  for (const auto& n : d["notes"]) fmt::print(out, "  note: {}\n", n.get<std::string>());
  for (const auto& w : a["warnings"]) fmt::print(out, "  note (A): {}\n", w.get<std::string>());
  for (const auto& w : b["warnings"]) fmt::print(out, "  note (B): {}\n", w.get<std::string>());
  for (const char* side : {"a", "b"}) {
    for (const auto& c : d["coverage"][side]) {
      fmt::print(out, "  note ({}): {}: {}; its synchronizations per step are of the part kept\n",
                 side[0] == 'a' ? "A" : "B", c["process"].get<std::string>(), c["text"].get<std::string>());
    }
  }
}

Result<json> diff_plan_files(const json& a, const json& b) {
  struct Entry {
    std::string problem, plan;
    json time_ms;
  };
  auto read = [](const json& f, const char* side, std::map<std::string, Entry>* out) -> std::string {
    if (!f.is_object() || f.value("format", "") != "cuprobe-plans/1" || !f.contains("plans") ||
        !f["plans"].is_array()) {
      return fmt::format("{}: not a plan file (cuprobe plans export writes format cuprobe-plans/1)", side);
    }
    for (const auto& p : f["plans"]) {
      if (!p.is_object()) continue;
      // A plan holds for one problem on one GPU model with one cuDNN version (docs/plan-pinning.md).
      std::string key = fmt::format("{}/{}/{}/{}", p.value("hash", ""), p.value("api", ""), p.value("gpu", ""),
                                    p.value("cudnn", int64_t(0)));
      std::string knobs = p.value("knobs", "");
      std::string plan = p.value("api", "") == "legacy" ? fmt::format("algo {}", p.value("engine", int64_t(-1)))
                                                        : fmt::format("engine {}{}", p.value("engine", int64_t(-1)),
                                                                      knobs.empty() ? "" : " [" + knobs + "]");
      (*out)[key] = Entry{p.value("problem", ""), plan, p.contains("time_ms") ? p["time_ms"] : json(nullptr)};
    }
    return "";
  };
  std::map<std::string, Entry> pa, pb;
  if (std::string e = read(a, "A", &pa); !e.empty()) return Error{e};
  if (std::string e = read(b, "B", &pb); !e.empty()) return Error{e};
  json changed = json::array(), only_a = json::array(), only_b = json::array();
  size_t same = 0;
  for (const auto& [k, eb] : pb) {
    auto it = pa.find(k);
    if (it == pa.end()) {
      only_b.push_back({{"problem", eb.problem}, {"plan", eb.plan}});
    } else if (it->second.plan != eb.plan) {
      changed.push_back({{"problem", eb.problem},
                         {"a", it->second.plan},
                         {"b", eb.plan},
                         {"a_ms", it->second.time_ms},
                         {"b_ms", eb.time_ms}});
    } else {
      ++same;
    }
  }
  for (const auto& [k, ea] : pa) {
    if (!pb.count(k)) only_a.push_back({{"problem", ea.problem}, {"plan", ea.plan}});
  }
  return json{{"format", "cuprobe-diff-plans/1"},
              {"a_plans", pa.size()},
              {"b_plans", pb.size()},
              {"same", same},
              {"changed", changed},
              {"only_in_a", only_a},
              {"only_in_b", only_b}};
}

void print_diff_plans(const json& d, FILE* out) {
  constexpr size_t kShown = 20;
  fmt::print(
      out,
      "cuprobe diff (plan files): {} plans in A, {} in B; {} the same, {} other plans, {} only in A, {} only in B\n",
      d["a_plans"].get<size_t>(), d["b_plans"].get<size_t>(), d["same"].get<size_t>(), d["changed"].size(),
      d["only_in_a"].size(), d["only_in_b"].size());
  for (const char* side : {"a_exported_from", "b_exported_from"}) {
    if (d.contains(side))
      fmt::print(out, "  {}: the plans of {} as cuprobe plans export gives them\n", side[0] == 'a' ? "A" : "B",
                 d[side].get<std::string>());
  }
  auto t = [](const json& v) {
    return v.is_number() ? fmt::format("{:.3f} ms", v.get<double>()) : std::string("not measured");
  };
  const json& c = d["changed"];
  if (!c.empty()) fmt::print(out, "\nother plans:\n");
  for (size_t i = 0; i < c.size() && i < kShown; ++i) {
    fmt::print(out, "  {}: {} ({}) in A, {} ({}) in B\n", c[i]["problem"].get<std::string>(),
               c[i]["a"].get<std::string>(), t(c[i]["a_ms"]), c[i]["b"].get<std::string>(), t(c[i]["b_ms"]));
  }
  if (c.size() > kShown) fmt::print(out, "  and {} more (--json lists them all)\n", c.size() - kShown);
  for (const char* side : {"only_in_a", "only_in_b"}) {
    const json& o = d[side];
    if (o.empty()) continue;
    fmt::print(out, "\n{}:\n", std::string(side) == "only_in_a" ? "only in A" : "only in B");
    for (size_t i = 0; i < o.size() && i < kShown; ++i) {
      fmt::print(out, "  {}: {}\n", o[i]["problem"].get<std::string>(), o[i]["plan"].get<std::string>());
    }
    if (o.size() > kShown) fmt::print(out, "  and {} more (--json lists them all)\n", o.size() - kShown);
  }
}

}  // namespace cuprobe::analysis
