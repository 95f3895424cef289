// research-storm: cuDNN benchmark searches that go on through the job (new shapes keep arriving
// with cudnn.benchmark on). Judges the cause, not the count: severity comes from the projected
// cost, the searches and their share of time in the LAST HALF of the job (by steps when they are
// known), so a job that stopped searching early is at most info and says when it stopped. The
// evidence names one pattern (kPattern*: a contract with the GPU scenario corpus,
// tests/gpu/scenarios/*/expected.json) with searching_stopped, last_search_s,
// last_half_searches and last_half_share.
#include <algorithm>
#include <map>
#include <set>

#include "analysis/common.h"
#include "analysis/pinning.h"
#include "analysis/rules.h"
#include "analysis/search_budget.h"
#include "trace/problem_view.h"

namespace cuprobe::analysis {
namespace {

constexpr const char* kPatternUnbounded = "unbounded dynamic shapes";
constexpr const char* kPatternBuckets = "shape buckets";
constexpr const char* kPatternPartialBatch = "last partial batch";
constexpr const char* kPatternEvalBatch = "evaluation batch size";
constexpr const char* kPatternRepeats = "same shapes searched again";
// Not a pattern of its own (it is kPatternUnbounded), but its own fix.
constexpr const char* kFixDynamicBatch = "dynamic batch dimension";

std::string range_of(const std::set<int64_t>& v) {
  if (v.size() <= 1) return v.empty() ? "" : std::to_string(*v.begin());
  return fmt::format("{}..{} ({} values)", *v.begin(), *v.rbegin(), v.size());
}

bool is_backward(const std::string& op) { return op == "conv_dgrad" || op == "conv_wgrad"; }

// One benchmark search with what the patterns read of it.
struct Searched {
  const reader::SearchRecord* s;
  reader::ProblemShape shape;  // 1-D convolutions without their dummy height
  std::vector<int64_t> shape_class;  // every data tensor's dims (reader::shape_class)
  uint64_t layer = 0;          // reader::layer_key, 0 for a problem known by its text only
  bool repeat = false;         // its problem was searched before
};

// What the searches of one process amount to, and which pattern they follow.
struct Verdict {
  std::string pattern;
  std::string summary;  // the pattern as this job shows it
  std::string fix;
  std::string varying;
  bool benign = false;  // nothing to fix: info at most
  std::set<uint64_t> focus_layers;  // the layers the pattern is about, named first among the problems
};

uint64_t executions_of(const ProcessFacts& p, uint64_t hash) {
  auto it = p.problems.find(hash);
  if (it == p.problems.end()) return 0;
  uint64_t n = 0;
  for (const auto& u : it->second.plans) n += u.executions;
  return n;
}

// What varies between the shapes one layer was searched at (the first layer searched, when it was
// searched at several shapes, else the layer with the most shapes: on a 1-D or 2-D network the
// input layer sees the raw input sizes; later layers see them strided).
struct Variation {
  std::set<int64_t> batch, channels, spatial;
  std::set<size_t> spatial_dims;  // which spatial dimensions vary
  size_t shapes = 0;              // distinct shape classes (every data tensor) of that layer
};

// Layers whose batch dimension is a dynamic one: searched at more distinct batch sizes than a
// job has buckets (a detection head runs on as many crops as the step has proposals). Read per
// layer over every layer, not from the input layer: the images may come in a few sizes while a
// later layer's batch changes every step. Layers of equal width share a key; their batch is the
// same at every depth, so sharing does not inflate the count (their spatial sizes would).
struct DynamicBatch {
  std::set<uint64_t> layers;  // their reader::layer_key (forward and backward problems apart)
  std::set<int64_t> batch;    // the values, over those layers
};

DynamicBatch dynamic_batch(const std::vector<Searched>& all, double max_buckets) {
  std::map<uint64_t, std::set<int64_t>> by_layer;
  for (const auto& s : all) {
    if (s.repeat || s.shape.dims.size() < 2 || s.layer == 0) continue;
    by_layer[s.layer].insert(s.shape.dims[0]);
  }
  DynamicBatch out;
  for (const auto& [layer, values] : by_layer) {
    if (double(values.size()) <= max_buckets) continue;
    out.layers.insert(layer);
    out.batch.insert(values.begin(), values.end());
  }
  return out;
}

Variation variation(const std::vector<Searched>& all) {
  std::map<uint64_t, std::vector<const Searched*>> by_layer;
  std::vector<uint64_t> order;
  for (const auto& s : all) {
    if (s.repeat || s.shape.dims.size() < 2) continue;
    auto& v = by_layer[s.layer];
    if (v.empty()) order.push_back(s.layer);
    v.push_back(&s);
  }
  uint64_t best = 0;
  size_t most = 0;
  for (uint64_t l : order) {
    if (by_layer[l].size() > most) {
      most = by_layer[l].size();
      best = l;
    }
  }
  // The job's first layer (its input layer, searched first) sees the raw input sizes, and its key
  // is rarely shared: later layers of equal width share one key and would add their strided
  // sizes to the count. It is read when it was searched at more than one shape.
  if (!order.empty() && by_layer[order.front()].size() > 1) {
    best = order.front();
    most = by_layer[best].size();
  }
  Variation v;
  if (most == 0) return v;
  std::set<std::vector<int64_t>> shapes;
  const std::vector<int64_t>& first = by_layer[best].front()->shape.dims;
  for (const Searched* s : by_layer[best]) {
    const auto& d = s->shape.dims;
    shapes.insert(s->shape_class.empty() ? d : s->shape_class);
    v.batch.insert(d[0]);
    v.channels.insert(d[1]);
    for (size_t k = 2; k < d.size(); ++k) {
      v.spatial.insert(d[k]);
      if (k < first.size() && d[k] != first[k]) v.spatial_dims.insert(k);
    }
  }
  v.shapes = shapes.size();
  return v;
}

Verdict classify(const RuleSpec& spec, const ProcessFacts& p, const std::vector<Searched>& all, size_t late,
                 size_t late_repeats, size_t untyped) {
  Verdict out;
  const Variation var = variation(all);
  std::vector<std::string> varying;
  if (var.batch.size() > 1) varying.push_back("batch varies " + range_of(var.batch));
  if (var.spatial_dims.size() > 0) varying.push_back("spatial size varies " + range_of(var.spatial));
  if (var.channels.size() > 1) varying.push_back("channels vary " + range_of(var.channels));
  std::set<int64_t> align;
  for (const auto& s : all) {
    if (s.s->align) align.insert(s.s->align);
  }
  if (align.size() > 1) varying.push_back("pointer alignment varies " + range_of(align) + " bytes");
  if (untyped > 0) {
    varying.push_back(fmt::format("what varies is not known for {} of them (problems of a trace recorded before trace "
                                  "format 2, known by their text only)",
                                  untyped));
  }
  if (varying.empty()) varying.push_back("the same shapes, searched again");
  for (const auto& v : varying) out.varying += (out.varying.empty() ? "" : "; ") + v;

  size_t distinct = 0;
  uint64_t runs = 0;
  for (const auto& s : all) {
    if (s.repeat) continue;
    ++distinct;
    runs += executions_of(p, s.s->problem_hash);
  }
  double runs_each = distinct > 0 ? double(runs) / double(distinct) : 0;

  // Cache evictions or alignment changes: research-repeat reports those, this rule only names them.
  if (late > 0 && late_repeats * 2 >= late) {
    out.pattern = kPatternRepeats;
    out.benign = true;
    out.summary = fmt::format("{} of the {} searches after warm-up were for problems already searched", late_repeats, late);
    out.fix = spec.fix_for(out.pattern);
    return out;
  }
  const DynamicBatch dyn = dynamic_batch(all, spec.param("bucket_max_sizes"));
  if (!dyn.layers.empty()) {
    const size_t n = dyn.layers.size();
    out.pattern = kPatternUnbounded;
    out.summary = fmt::format("a dynamic batch dimension: {} convolution{} (forward and backward counted apart) ran at "
                              "{} different batch sizes ({}..{}), so whatever the input sizes, every new batch size "
                              "is a new timed search for each of them ({} distinct problems, {:.1f} runs each)",
                              n, n == 1 ? "" : "s", dyn.batch.size(), *dyn.batch.begin(), *dyn.batch.rbegin(),
                              distinct, runs_each);
    out.varying = fmt::format("batch varies {} in {} convolution{}; ", range_of(dyn.batch), n, n == 1 ? "" : "s") +
                  out.varying;
    out.focus_layers = dyn.layers;
    out.fix = spec.fix_for(kFixDynamicBatch);
    return out;
  }
  if (untyped == 0 && var.shapes > 1 && var.spatial_dims.empty() && var.channels.size() <= 1 && var.batch.size() > 1) {
    // Only the batch differs. The job's batch is that of its first problem.
    int64_t main_batch = 0;
    for (const auto& s : all) {
      if (!s.shape.dims.empty()) {
        main_batch = s.shape.dims[0];
        break;
      }
    }
    std::map<int64_t, std::set<std::string>> ops_by_batch;
    std::map<int64_t, uint64_t> runs_by_batch;
    for (const auto& s : all) {
      if (s.shape.dims.empty()) continue;
      ops_by_batch[s.shape.dims[0]].insert(s.shape.op);
      if (!s.repeat) runs_by_batch[s.shape.dims[0]] += executions_of(p, s.s->problem_hash);
    }
    bool main_trains = false, others_forward_only = true, others_smaller = true;
    std::set<int64_t> others;
    for (const auto& [b, ops] : ops_by_batch) {
      bool backward = std::any_of(ops.begin(), ops.end(), is_backward);
      if (b == main_batch) {
        main_trains = backward;
        continue;
      }
      others.insert(b);
      if (backward) others_forward_only = false;
      if (b > main_batch) others_smaller = false;
    }
    std::string other_list;
    for (int64_t b : others) other_list += (other_list.empty() ? "" : ", ") + std::to_string(b);
    if (main_trains && others_forward_only) {
      out.pattern = kPatternEvalBatch;
      out.benign = true;
      out.summary = fmt::format("batch {} runs forward convolutions only (an evaluation under no_grad; training runs at "
                                "batch {}): its problems are searched once, then cached",
                                other_list, main_batch);
      out.fix = spec.fix_for(out.pattern);
      return out;
    }
    uint64_t other_runs = 0;
    for (int64_t b : others) other_runs += runs_by_batch[b];
    double max_runs = spec.param("partial_batch_max_runs");
    if (others_smaller && others.size() <= 2 && double(other_runs) <= double(runs_by_batch[main_batch]) * max_runs) {
      out.pattern = kPatternPartialBatch;
      out.benign = true;
      out.summary = fmt::format("only the batch differs: a smaller batch of {} (of {}) comes once per epoch-like "
                                "period, searched once",
                                other_list, main_batch);
      out.fix = spec.fix_for(out.pattern);
      return out;
    }
  }
  if (untyped == 0 && var.shapes > 0 && double(var.shapes) <= spec.param("bucket_max_sizes") &&
      runs_each >= spec.param("bucket_min_runs")) {
    out.pattern = kPatternBuckets;
    out.benign = true;
    out.summary = fmt::format("{} input shapes that repeat ({:.0f} runs per searched problem): each was searched once",
                              var.shapes, runs_each);
    out.fix = spec.fix_for(out.pattern);
    return out;
  }
  out.pattern = kPatternUnbounded;
  out.summary = fmt::format("new shapes keep arriving ({} distinct problems, {:.1f} runs each): every new shape is a "
                            "new timed search",
                            distinct, runs_each);
  out.fix = spec.fix_for(out.pattern);
  return out;
}

// What searching costs the job now and would cost a longer run. The latest window is the last
// quarter of the job's steps (at least 2; by time when fewer than 8 steps are known). The
// projection assumes the window's rate goes on: a run 10 times as long adds 9 times the job's
// length at the window's share, so a storm that is dying down projects low and one that is not
// projects its window's share.
struct Cost {
  double window_share = 0;
  double projected_share = 0;
  std::string window_text;  // "the last 4 of 16 steps", "the last quarter of the job's time"
  std::string projection;   // the sentence the finding says
};

Cost measure_cost(const ProcessFacts& p, const std::vector<Searched>& searched, uint64_t search_ns) {
  Cost c;
  const uint64_t start = p.job_start_ns, end = p.last_ns;
  const size_t steps = p.step_starts.size();
  uint64_t from = start + (end - start) / 4 * 3;
  c.window_text = "the last quarter of the job's time";
  if (steps >= 8) {
    size_t n = std::max<size_t>(2, steps / 4);
    from = p.step_starts[steps - n];
    c.window_text = fmt::format("the last {} of its {} steps", n, steps);
  }
  uint64_t in_window = 0;
  for (const auto& s : searched) {
    uint64_t a = std::max(s.s->start_ns, from), b = std::max(s.s->end_ns, s.s->start_ns);
    if (b > a) in_window += b - a;
  }
  const double window_s = seconds(end - std::min(end, from));
  c.window_share = window_s > 0 ? std::min(1.0, seconds(in_window) / window_s) : 0;
  const double span = seconds(end - start);
  c.projected_share = span > 0 ? (seconds(search_ns) + 9 * span * c.window_share) / (10 * span) : 0;
  c.projection = fmt::format("{} spent {:.0f}% of their time searching; if that rate holds, a run 10 times as long "
                             "would spend {:.0f}% of its time in searches",
                             c.window_text, c.window_share * 100, c.projected_share * 100);
  return c;
}

// A pattern that is paid once ("buckets", a partial batch, an evaluation batch) whose searches
// still cost in the last half is a storm after all. Repeats stay research-repeat's to judge.
void overrule_by_cost(const RuleSpec& spec, Verdict& v, size_t half_n) {
  if (!v.benign || v.pattern == kPatternRepeats) return;
  v.benign = false;
  v.summary = fmt::format("new shapes keep arriving although they looked like {} ({}): {} searches in the last half "
                          "of the job",
                          v.pattern, v.summary, half_n);
  v.pattern = kPatternUnbounded;
  v.fix = spec.fix_for(v.pattern);
}

// The steps of the job's last half (from `half`, a step's start), and how many of them searched.
struct HalfSteps {
  size_t all = 0, searching = 0;
};
HalfSteps steps_searching(const ProcessFacts& p, const std::vector<Searched>& searched, uint64_t half) {
  const auto& starts = p.step_starts;
  std::set<size_t> steps;
  for (const auto& s : searched) {
    if (s.s->start_ns >= half)
      steps.insert(size_t(std::upper_bound(starts.begin(), starts.end(), s.s->start_ns) - starts.begin()));
  }
  return {size_t(starts.end() - std::lower_bound(starts.begin(), starts.end(), half)), steps.size()};
}

// The operations searched, in words ("conv_dgrad, conv_fwd").
std::string ops_of(const std::vector<Searched>& searched) {
  std::set<std::string> ops;
  for (const auto& s : searched) {
    if (!s.shape.op.empty()) ops.insert(s.shape.op);
  }
  std::string list;
  for (const auto& o : ops) list += (list.empty() ? "" : ", ") + o;
  return list.empty() ? "cuDNN problems" : list;
}

// Searches per tenth of the job, to show whether they die down.
std::vector<int> per_tenth(const ProcessFacts& p, const std::vector<Searched>& searched) {
  const uint64_t start = p.job_start_ns, end = p.last_ns;
  std::vector<int> timeline(10, 0);
  for (const auto& s : searched) {
    uint64_t at = std::max(s.s->start_ns, start);
    size_t bucket = size_t(double(at - start) / double(end - start) * 10);
    timeline[std::min<size_t>(bucket, 9)]++;
  }
  return timeline;
}

// Up to five of the late searches' problems, those of the layers the verdict points at first.
std::vector<std::string> problems_named(const Verdict& v, const std::vector<const Searched*>& late_list) {
  std::set<std::string> names;
  for (int pass = v.focus_layers.empty() ? 1 : 0; pass < 2; ++pass) {
    for (const auto* s : late_list) {
      if (names.size() >= 5) break;
      if (pass == 0 && v.focus_layers.count(s->layer) == 0) continue;
      names.insert(s->s->problem);
    }
  }
  return {names.begin(), names.end()};
}

// A storm the search budget kept in check: the searches that ran were too few to judge, the
// selections it answered say the shapes kept changing. Reported at info with what it saved.
Finding budget_contained(const RuleSpec& spec, const ProcessFacts& p, const BudgetSummary& b) {
  nlohmann::json ev = {{"process", process_label(p)},
                       {"pattern", "contained by the search budget"},
                       {"summary", budget_text(b)},
                       {"budgeted", b.budgeted},
                       {"searches_saved_s", b.expected_ms / 1e3},
                       {"searches", b.searches},
                       {"search_time_s", b.search_ms / 1e3},
                       {"run_s", b.job_ms / 1e3}};
  const double choosing = b.job_ms > 0 ? b.took_ms / b.job_ms : 0;
  ev["choosing_share"] = choosing;
  Finding f = make_finding(spec, ev, 0);
  f.severity = Severity::kInfo;
  f.message = fmt::format("{}: new problems kept coming, the search budget answered them: {}", process_label(p),
                          budget_text(b));
  f.fix =
      "Nothing needed while the budget runs; the shapes still change (bucket or pad them to let every shape "
      "have the benchmark's plan).";
  // Heuristic plans that still went through the framework's benchmark path, none of them searched
  // later: if the shapes do not repeat, turning the benchmark off gives them the same kind of plan
  // for less.
  if (b.searched_later == 0 && b.budgeted > 0 && choosing >= spec.param("budget_choosing_share")) {
    f.fix = fmt::format(
        "Choosing the budgeted problems' heuristic plans through the benchmark path still took {:.0f}% of the run "
        "({:.1f} ms each: the framework asks cuDNN's heuristics twice and times the one plan it is left with; with "
        "benchmark off it asks once and runs the first plan that works: 1.0 against 2.8 ms per new problem on an "
        "H100), and none of them was searched later. If these shapes do not repeat, turn "
        "torch.backends.cudnn.benchmark off for this model; if they do, bucket or pad them so that the benchmark's "
        "plans are reused.",
        100 * choosing, b.took_ms / b.budgeted);
  }
  f.pids.push_back(p.pid);
  return f;
}

void research_storm(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  const double min_late = spec.param("min_late_searches");
  const double min_half = spec.param("min_last_half_searches");
  const double min_half_share = spec.param("min_last_half_share");
  const double error_share = spec.param("error_share");
  const double min_step_share = spec.param("min_last_half_step_share");
  for (const ProcessFacts& p : all.processes) {
    const uint64_t start = p.job_start_ns, end = p.last_ns;
    if (end <= start) continue;
    // A trace cut short before its second step (a snapshot of a running job, a process killed
    // during its first step): every search so far is the first step's, and nothing says yet
    // whether more will come. Judged once the job is further on.
    if (p.trace && !trace::finalized(p.trace->state()) && p.step_starts.size() < 2) continue;
    std::vector<Searched> searched;
    for (const auto& s : p.searches) {
      if (s.benchmark() && !s.was_steered()) {
        searched.push_back(
            Searched{&s, reader::problem_shape(s.problem_info), reader::shape_class(s.problem_info), 0, false});
      }
    }
    if (searched.empty()) continue;
    std::sort(searched.begin(), searched.end(),
              [](const Searched& a, const Searched& b) { return a.s->start_ns < b.s->start_ns; });
    // The last half of the job: from its middle step when steps are known, else its middle.
    const bool by_steps = p.step_starts.size() >= 4;
    const uint64_t half = last_half_start(p);
    const uint64_t warm = p.warmup_end_ns;

    std::set<uint64_t> seen, late_seen;
    size_t late = 0, late_repeats = 0, untyped = 0, half_n = 0;
    uint64_t search_ns = 0, late_ns = 0, half_ns = 0;
    const reader::SearchRecord* last = nullptr;
    std::vector<const Searched*> late_list;
    for (auto& s : searched) {
      s.repeat = !seen.insert(s.s->problem_hash).second;
      if (s.s->problem_info != nullptr) s.layer = reader::layer_key(*s.s->problem_info);
      if (s.shape.op.empty()) ++untyped;
      uint64_t wall = s.s->end_ns > s.s->start_ns ? s.s->end_ns - s.s->start_ns : 0;
      search_ns += wall;
      if (s.s->start_ns >= warm) {
        ++late;
        late_ns += wall;
        late_repeats += s.repeat;
        late_list.push_back(&s);
        late_seen.insert(s.s->problem_hash);
      }
      if (s.s->start_ns >= half) {
        ++half_n;
        half_ns += wall;
      }
      last = s.s;
    }
    const BudgetSummary budget = budget_summary(p);
    if (double(late) < min_late) {
      if (budget.budgeted > 0) emit(budget_contained(spec, p, budget));
      continue;
    }

    const double span = span_s(p);
    const double half_span = seconds(end - std::min(end, half));
    const double half_share = half_span > 0 ? seconds(half_ns) / half_span : 0;
    const double late_span = end > warm ? seconds(end - warm) : 0;
    const bool stopped = half_n == 0;
    Verdict v = classify(spec, p, searched, late, late_repeats, untyped);
    const Cost cost = measure_cost(p, searched, search_ns);
    // The cost decides: a pattern that is paid once ("buckets", a partial batch, an evaluation
    // batch) is nothing to fix only while searching stops or costs little. Repeats are
    // research-repeat's to judge.
    const bool costly = double(half_n) >= min_half && half_share >= min_half_share;
    // ... and paid in many steps: a pattern's one-off shapes (the partial batch at the end of a
    // one-epoch job, an evaluation pass) fall in a few steps, a storm's in most of them.
    const HalfSteps half_steps = by_steps ? steps_searching(p, searched, half) : HalfSteps{};
    const bool spread = !by_steps || double(half_steps.searching) >= min_step_share * double(half_steps.all);
    if (costly && spread) overrule_by_cost(spec, v, half_n);

    Severity severity = Severity::kInfo;
    if (!v.benign && costly) severity = half_share >= error_share ? Severity::kError : Severity::kWarning;
    // When searching stopped: the step of its last search (steps counted from 1), and how much of
    // the job came after it.
    const double last_s = job_s(p, last->start_ns);
    const uint64_t last_end = std::max(last->end_ns, last->start_ns);
    const double quiet_tail = end > last_end ? double(end - last_end) / double(end - start) : 0;
    size_t last_step = size_t(std::upper_bound(p.step_starts.begin(), p.step_starts.end(), last->start_ns) -
                              p.step_starts.begin());
    std::string when;
    if (stopped) {
      when = fmt::format("searching stopped {}{:.1f} s into the job; no search in the last {:.0f}% of its {:.1f} s",
                         p.step_starts.empty() ? "" : fmt::format("at step {}, ", std::max<size_t>(1, last_step)),
                         last_s, quiet_tail * 100, span);
    } else {
      when = fmt::format("{} searches in the last half of the job{}, {:.1f}% of its time ({:.2f} s of {:.1f} s)", half_n,
                         by_steps ? " (by steps)" : "", half_share * 100, seconds(half_ns), half_span);
      if (!v.benign) when += "; " + cost.projection;
    }
    if (v.benign) v.summary += " — nothing to fix";
    if (budget.active) when += "; " + budget_text(budget);

    const std::string op_list = ops_of(searched);
    const std::vector<int> timeline = per_tenth(p, searched);
    nlohmann::json ev = {{"process", process_label(p)},
                         {"pattern", v.pattern},
                         {"summary", v.summary},
                         {"when", when},
                         {"searching_stopped", stopped},
                         {"last_search_s", last_s},
                         {"last_search_step", p.step_starts.empty() ? 0 : std::max<size_t>(1, last_step)},
                         {"last_half_searches", half_n},
                         {"last_half_share", half_share},
                         {"last_half_by", by_steps ? "steps" : "time"},
                         {"last_half_steps_searching", half_steps.searching},
                         {"last_half_steps", half_steps.all},
                         {"searches", searched.size()},
                         {"late_searches", late},
                         {"distinct_shapes", late_seen.size()},  // of the late searches
                         {"distinct_shapes_in_all", seen.size()},
                         {"ops", op_list},
                         {"varying", v.varying},
                         {"search_time_s", seconds(search_ns)},
                         {"late_search_time_s", seconds(late_ns)},
                         {"search_share", span > 0 ? seconds(search_ns) / span : 0},
                         {"latest_window", cost.window_text},
                         {"latest_window_share", cost.window_share},
                         {"projected_share_10x", cost.projected_share},
                         {"late_share", late_span > 0 ? seconds(late_ns) / late_span : 0},
                         {"run_s", span},
                         {"startup_s", seconds(start - std::min(start, p.first_ns))},
                         {"steps", p.steps},
                         {"warmup_end_s", job_s(p, warm)},
                         {"warmup_by", p.second_pass_ns ? "second pass over the first problem" : "share of the job"},
                         {"searches_per_tenth_of_job", timeline}};
    Finding f = make_finding(spec, ev, seconds(half_ns));
    f.severity = severity;
    if (!late_list.empty()) f.at_wall_ns = p.trace->wall_ns(late_list.front()->s->start_ns);
    f.fix = v.fix;
    f.pids.push_back(p.pid);
    f.problems = problems_named(v, late_list);
    std::vector<reader::StackId> stacks;
    for (const auto* s : late_list) stacks.push_back(s->s->stack);
    f.call_sites = top_sites(all, p, stacks, "late searches from");
    emit(std::move(f));
  }
}

const RegisterRule kRegister("research-storm", research_storm);

}  // namespace
}  // namespace cuprobe::analysis
