// `cuprobe report`: one self-contained HTML file about a job (export.h). The page's markup,
// style and script are fixed text (report_page.h); the job goes in as one JSON document inside a
// <script type="application/json"> element, which the script draws into tables and inline SVG.
// Nothing is fetched: the file opens from disk, offline, and mails as an attachment.
//
// The data is aggregated while the timeline is walked, so that a job of tens of millions of calls
// gives a page of a few MB and a walk whose memory does not grow with the job: device memory and
// plan searches are kept in one time grid of at most kMaxBuckets buckets (its width doubles, and
// neighbouring buckets merge, whenever the job's span outgrows it), memory keeping each bucket's
// peak (with the owners at that moment) and its last value; tables are cut to their first rows
// with the count of the rest. What was aggregated is said in the page and in
// ExportStats::aggregated.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "analysis/common.h"
#include "cudnn_status.h"
#include "export/export.h"
#include "export/report_page.h"

namespace cuprobe::exporter {

namespace {

using nlohmann::json;

constexpr int64_t kMaxBuckets = 2000;   // time buckets over the job, per memory chart and process
constexpr int64_t kMinBuckets = 400;    // with many memory charts, fewer buckets each
constexpr int64_t kPointBudget = 16000; // memory buckets over all charts, before the cut above
constexpr size_t kMaxRows = 200;        // rows of a table (divergence, markers)
constexpr size_t kMaxSteps = 2000;      // step starts per process drawn
constexpr size_t kMaxEvidence = 50;     // entries of a list in a finding's evidence
constexpr size_t kMaxLines = 30;        // a finding's problems or call sites

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The job's time split into buckets of `width` ns from `origin`. A time outside the span held so
// far widens it; when the span would exceed `limit` buckets, the width doubles and `regrid` is
// told to merge each pair of buckets (k -> floor(k / 2)).
class Grid {
 public:
  Grid(uint64_t origin, int64_t limit) : origin_(origin), limit_(limit) {}
  template <typename Regrid>
  int64_t bucket(uint64_t wall_ns, Regrid&& regrid) {
    for (;;) {
      int64_t k = floor_div(int64_t(wall_ns - origin_), width_);
      int64_t lo = any_ ? std::min(lo_, k) : k, hi = any_ ? std::max(hi_, k) : k;
      if (hi - lo < limit_) {
        lo_ = lo;
        hi_ = hi;
        any_ = true;
        return k;
      }
      width_ *= 2;
      lo_ = floor_div(lo_, 2);
      hi_ = floor_div(hi_, 2);
      regrid();
    }
  }
  int64_t width_ns() const { return width_; }
  double seconds(uint64_t wall_ns) const { return double(int64_t(wall_ns - origin_)) / 1e9; }

 private:
  uint64_t origin_;
  int64_t limit_;
  int64_t width_ = 1000;  // 1 us: doubled as often as the job's span needs
  int64_t lo_ = 0, hi_ = 0;
  bool any_ = false;
};

// Merges each pair of buckets of a map keyed by bucket index.
template <typename V, typename Merge>
void halve(std::map<int64_t, V>& m, Merge&& merge) {
  std::map<int64_t, V> out;
  for (auto& [k, v] : m) {
    auto [it, fresh] = out.try_emplace(floor_div(k, 2), std::move(v));
    if (!fresh) merge(it->second, v);  // v is the later bucket (the map is in order)
  }
  m = std::move(out);
}

struct MemBucket {
  uint64_t peak = 0;
  std::vector<uint64_t> at_peak;  // live bytes by owner index when the total peaked
  uint64_t last = 0;
  std::vector<uint64_t> at_last;
};

struct Oom {
  double t = 0;
  uint64_t size = 0;
  uint64_t live = 0;  // live bytes of the process on that device when it failed
  std::string api, owner;
  int32_t ret = 0;
  bool injected = false;
};

// Device memory of one process on one device.
struct MemChart {
  size_t process = 0;
  int device = -1;
  std::vector<std::string> owners;
  std::unordered_map<const std::string*, size_t> owner_index;  // the walk's names, this process only
  std::vector<uint64_t> now;
  uint64_t total = 0;
  uint64_t peak = 0;
  double peak_t = 0;
  uint64_t samples = 0;
  std::map<int64_t, MemBucket> buckets;
  std::vector<Oom> ooms;
  uint64_t ooms_total = 0;
};

struct Lane {  // plan searches of one process
  std::map<int64_t, std::array<uint32_t, 2>> counts;  // benchmark, heuristic
  uint64_t benchmark = 0, heuristic = 0, incomplete = 0;
  std::vector<uint64_t> steps;          // step starts, wall clock
  std::vector<uint32_t> per_step;       // searches before step 0 ([0]), in step k ([k + 1])
};

struct ProcessRow {
  uint32_t pid = 0;
  int rank = -1;
  std::string host, label, command;
  uint64_t events = 0, first_wall = 0, last_wall = 0;
  Lane lane;
};

using Plan = std::pair<int64_t, std::string>;  // engine or algorithm, knobs
struct ProblemUse {
  std::map<Plan, uint64_t> runs;  // executions outside searches
  Plan winner;
  bool backend = true;
  bool has_winner = false;
};

struct FaultCount {
  uint64_t n = 0;
  double first = 0, last = 0;
};

std::string status_text(const std::string& api, int32_t ret) {
  if (api.rfind("cudnn", 0) == 0) {
    if (const char* name = cudnn_status_name(ret)) return fmt::format("{} ({})", name, ret);
  }
  return std::to_string(ret);
}

// A copy of `v` with every list longer than kMaxEvidence cut to its first entries; `cut` counts
// the lists cut.
json trim(const json& v, size_t& cut) {
  if (v.is_array()) {
    json out = json::array();
    for (size_t i = 0; i < v.size() && i < kMaxEvidence; ++i) out.push_back(trim(v[i], cut));
    if (v.size() > kMaxEvidence) {
      ++cut;
      out.push_back(fmt::format("… and {} more", v.size() - kMaxEvidence));
    }
    return out;
  }
  if (v.is_object()) {
    json out = json::object();
    for (auto it = v.begin(); it != v.end(); ++it) out[it.key()] = trim(it.value(), cut);
    return out;
  }
  return v;
}

std::vector<std::string> first_lines(const std::vector<std::string>& v, size_t& cut) {
  std::vector<std::string> out(v.begin(), v.begin() + std::min(v.size(), kMaxLines));
  if (v.size() > kMaxLines) {
    ++cut;
    out.push_back(fmt::format("… and {} more", v.size() - kMaxLines));
  }
  return out;
}

std::string duration_text(int64_t ns) {
  if (ns < 1000000) return fmt::format("{:g} µs", double(ns) / 1e3);
  if (ns < 1000000000) return fmt::format("{:g} ms", double(ns) / 1e6);
  return fmt::format("{:g} s", double(ns) / 1e9);
}

class ReportSink : public TimelineSink {
 public:
  ReportSink(const ExportJob& job, uint64_t origin, int64_t buckets)
      : job_(job), report_(job.report), grid_(origin, buckets) {}

  void begin_process(const ProcessInfo& p) override {
    info_ = &p;
    current_ = rows_.size();
    ProcessRow row;
    row.pid = p.pid;
    row.rank = p.rank;
    row.host = p.host;
    row.label = p.label;
    row.command = p.command;
    if (const analysis::ProcessTimes* t = times_of(job_, p)) {
      if (!t->label.empty()) row.label = t->label;
      row.lane.steps = t->step_wall_ns;
    }
    row.lane.per_step.assign(row.lane.steps.size() + 1, 0);
    rows_.push_back(std::move(row));
    uses_.emplace_back();
  }

  void end_process(const ProcessInfo& p) override {
    ProcessRow& row = rows_[current_];
    row.events = p.events;
    row.first_wall = p.wall_ns(p.first_ns);
    row.last_wall = p.wall_ns(p.last_ns);
    events_ += p.events;
    info_ = nullptr;
    charts_of_process_.clear();
  }

  void search(const reader::SearchRecord& r) override {
    uint64_t wall = info_->wall_ns(r.start_ns);
    int64_t k = bucket(wall);
    Lane& lane = rows_[current_].lane;
    bool benchmark = r.benchmark();
    lane.counts[k][benchmark ? 0 : 1]++;
    (benchmark ? lane.benchmark : lane.heuristic)++;
    if (!r.complete) lane.incomplete++;
    size_t step = size_t(std::upper_bound(lane.steps.begin(), lane.steps.end(), wall) - lane.steps.begin());
    lane.per_step[step]++;
    ++searches_;
    if (r.problem_hash == 0) return;
    if (r.winner >= 0 && size_t(r.winner) < r.candidates.size()) {
      bool knobs = r.backend() || !r.cudnn();  // a cuBLASLt algorithm's configuration is its knobs
      ProblemUse& u = use(r.problem_hash, r.problem, knobs);
      const reader::SearchCandidate& c = r.candidates[size_t(r.winner)];
      // A legacy candidate's "knobs" are its math type, which its executions do not carry.
      u.winner = {c.engine, knobs ? c.knobs : std::string()};
      u.has_winner = true;
    }
  }

  void execution(const ExecutionItem& x) override {
    if (x.candidate || x.ret != 0 || x.problem_hash == 0) return;
    use(x.problem_hash, *x.problem, x.backend).runs[{x.engine, *x.knobs}]++;
  }

  void fault(const FaultItem& f) override {
    last_fault_ns_ = f.ts_ns;
    last_fault_tid_ = f.tid;
    double t = grid_.seconds(info_->wall_ns(f.ts_ns));
    auto [it, fresh] = faults_.try_emplace(std::make_tuple(*f.rule, *f.api, f.ret));
    if (fresh) it->second.first = t;
    it->second.n++;
    it->second.last = t;
  }

  void allocation(const AllocationItem& a) override {
    if (a.ok) return;
    MemChart& c = chart(a.device);
    c.ooms_total++;
    if (c.ooms.size() >= kMaxRows) return;
    Oom o;
    o.t = grid_.seconds(info_->wall_ns(a.ts_ns));
    o.size = a.size;
    o.live = c.total;
    o.api = *a.api;
    o.owner = *a.owner;
    o.ret = a.ret;
    o.injected = last_fault_ns_ == a.ts_ns && last_fault_tid_ == a.tid;
    c.ooms.push_back(std::move(o));
  }

  void memory(const MemorySample& s) override {
    MemChart& c = chart(s.device);
    auto [oi, fresh] = c.owner_index.try_emplace(s.owner, c.owners.size());
    if (fresh) {
      c.owners.push_back(*s.owner);
      c.now.push_back(0);
    }
    c.now[oi->second] = s.owner_bytes;
    c.total = s.total_bytes;
    c.samples++;
    uint64_t wall = info_->wall_ns(s.ts_ns);
    if (s.total_bytes > c.peak) {
      c.peak = s.total_bytes;
      c.peak_t = grid_.seconds(wall);
    }
    MemBucket& b = c.buckets[bucket(wall)];
    if (b.at_peak.empty() || s.total_bytes > b.peak) {
      b.peak = s.total_bytes;
      b.at_peak = c.now;
    }
    b.last = s.total_bytes;
    b.at_last = c.now;
    ++samples_;
  }

  Result<ExportStats> write(const std::string& out_path) {
    ExportStats stats;
    stats.processes = rows_.size();
    stats.events = events_;
    json data = build(stats);
    std::string text = script_json(data);
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    if (!out) return Error{fmt::format("cannot write {}: {}", out_path, std::strerror(errno))};
    out << kPageHead << text << kPageTail;
    out.close();
    if (!out) return Error{fmt::format("cannot write {}: {}", out_path, std::strerror(errno))};
    std::error_code ec;
    stats.bytes = std::filesystem::file_size(out_path, ec);
    return stats;
  }

 private:
  int64_t bucket(uint64_t wall_ns) {
    return grid_.bucket(wall_ns, [this] {
      for (MemChart& c : charts_) {
        halve(c.buckets, [](MemBucket& a, MemBucket& b) {
          if (b.peak > a.peak) {
            a.peak = b.peak;
            a.at_peak = std::move(b.at_peak);
          }
          a.last = b.last;
          a.at_last = std::move(b.at_last);
        });
      }
      for (ProcessRow& r : rows_) {
        halve(r.lane.counts, [](std::array<uint32_t, 2>& a, const std::array<uint32_t, 2>& b) {
          a[0] += b[0];
          a[1] += b[1];
        });
      }
    });
  }

  MemChart& chart(int device) {
    auto [it, fresh] = charts_of_process_.try_emplace(device, charts_.size());
    if (fresh) {
      charts_.emplace_back();
      charts_.back().process = current_;
      charts_.back().device = device;
    }
    return charts_[it->second];
  }

  ProblemUse& use(uint64_t hash, const std::string& problem, bool backend) {
    auto [it, fresh] = problems_.try_emplace(hash, problem);
    if (!fresh && it->second.empty()) it->second = problem;
    ProblemUse& u = uses_[current_][hash];
    u.backend = backend;
    return u;
  }

  static std::string plan_text(const Plan& p, bool backend) {
    if (!backend) return fmt::format("algorithm {}", p.first);
    return p.second.empty() ? fmt::format("engine {}", p.first) : fmt::format("engine {} ({})", p.first, p.second);
  }

  // The page's data, step by step; `stats` gets what was aggregated or left out, in words, in the
  // order the page's sections come.
  json build(ExportStats& stats) {
    json d;
    d["version"] = 1;
    d["summary"] = report_.summary;
    d["warnings"] = report_.warnings;
    d["bucket_s"] = double(grid_.width_ns()) / 1e9;
    uint64_t items = 0;
    d["processes"] = processes_json();
    size_t evidence_cut = 0, lines_cut = 0;
    json findings = findings_json(evidence_cut, lines_cut);
    d["findings"] = findings;
    d["memory"] = memory_json(stats, items);
    d["searches"] = searches_json(stats, items);
    d["divergence"] = divergence_json(stats, items);
    d["faults"] = faults_json(items);
    d["diff"] = job_.diff;
    if (evidence_cut > 0) {
      stats.aggregated.push_back(
          fmt::format("findings: {} list{} in the evidence cut to their first {} entries (cuprobe analyze --json has all)",
                      evidence_cut, evidence_cut == 1 ? "" : "s", kMaxEvidence));
    }
    if (lines_cut > 0) {
      stats.aggregated.push_back(fmt::format("findings: problem and call-site lists cut to their first {}", kMaxLines));
    }
    stats.items = items + findings.size();
    d["aggregated"] = stats.aggregated;
    return d;
  }

  json processes_json() const {
    json procs = json::array();
    for (const ProcessRow& r : rows_) {
      procs.push_back({{"pid", r.pid}, {"rank", r.rank}, {"host", r.host}, {"label", r.label},
                       {"command", r.command}, {"events", r.events},
                       {"first_s", r.events ? grid_.seconds(r.first_wall) : 0.0},
                       {"last_s", r.events ? grid_.seconds(r.last_wall) : 0.0}});
    }
    return procs;
  }

  // Findings, in the analysis's order; long evidence lists and problem or call-site lists cut
  // (counted in `evidence_cut`, `lines_cut`).
  json findings_json(size_t& evidence_cut, size_t& lines_cut) const {
    json findings = json::array();
    for (const analysis::Finding& f : report_.findings) {
      json pids = json::array();
      for (uint32_t pid : f.pids) pids.push_back(pid);
      findings.push_back({{"rule", f.rule}, {"severity", analysis::severity_name(f.severity)}, {"title", f.title},
                          {"message", f.message}, {"fix", f.fix}, {"impact_s", f.impact_s},
                          {"at_s", f.at_wall_ns ? json(grid_.seconds(f.at_wall_ns)) : json(nullptr)},
                          {"problems", first_lines(f.problems, lines_cut)},
                          {"call_sites", first_lines(f.call_sites, lines_cut)}, {"pids", pids},
                          {"evidence", trim(f.evidence, evidence_cut)}});
    }
    return findings;
  }

  // A memory chart per process and device: each time bucket's peak with the owners at that
  // moment, and its last value; the failed allocations.
  json memory_json(ExportStats& stats, uint64_t& items) const {
    json charts = json::array();
    uint64_t buckets = 0, ooms_left = 0;
    for (const MemChart& c : charts_) {
      json ks = json::array(), peak = json::array(), at_peak = json::array(), last = json::array(),
           at_last = json::array();
      for (const auto& [k, b] : c.buckets) {
        ks.push_back(k);
        peak.push_back(b.peak);
        last.push_back(b.last);
        at_peak.push_back(b.at_peak);
        at_last.push_back(b.at_last);
      }
      buckets += c.buckets.size();
      json ooms = json::array();
      for (const Oom& o : c.ooms) {
        ooms.push_back({{"t", o.t}, {"size", o.size}, {"live", o.live}, {"api", o.api}, {"owner", o.owner},
                        {"status", status_text(o.api, o.ret)}, {"injected", o.injected}});
      }
      ooms_left += c.ooms_total - c.ooms.size();
      items += c.buckets.size() + c.ooms.size();
      const ProcessRow& r = rows_[c.process];
      charts.push_back({{"process", c.process}, {"host", r.host}, {"device", c.device}, {"owners", c.owners},
                        {"k", ks}, {"peak", peak}, {"at_peak", at_peak}, {"last", last}, {"at_last", at_last},
                        {"max", c.peak}, {"max_t", c.peak_t}, {"samples", c.samples}, {"ooms", ooms},
                        {"ooms_total", c.ooms_total}});
    }
    if (samples_ > buckets) {
      stats.aggregated.push_back(fmt::format(
          "device memory: {} changes drawn as {} time buckets of {} (per process and device: each bucket's peak, "
          "with the owners at that moment, and its last value)",
          samples_, buckets, duration_text(grid_.width_ns())));
    }
    if (ooms_left > 0) {
      stats.aggregated.push_back(
          fmt::format("failed allocations: the first {} per chart are marked; {} more are not", kMaxRows, ooms_left));
    }
    return charts;
  }

  // A lane per process of plan searches against its steps.
  json searches_json(ExportStats& stats, uint64_t& items) const {
    json lanes = json::array();
    uint64_t search_points = 0;
    std::vector<std::string> thinned;
    for (size_t i = 0; i < rows_.size(); ++i) {
      const Lane& l = rows_[i].lane;
      if (l.benchmark + l.heuristic == 0 && l.steps.empty()) continue;
      json ks = json::array(), bench = json::array(), heur = json::array();
      for (const auto& [k, n] : l.counts) {
        ks.push_back(k);
        bench.push_back(n[0]);
        heur.push_back(n[1]);
      }
      search_points += l.counts.size();
      size_t every = (l.steps.size() + kMaxSteps - 1) / kMaxSteps;
      json steps = json::array();
      for (size_t s = 0; s < l.steps.size(); s += std::max<size_t>(every, 1)) steps.push_back(grid_.seconds(l.steps[s]));
      if (every > 1) thinned.push_back(fmt::format("{} ({} steps: every {}th drawn)", rows_[i].label, l.steps.size(), every));
      json lane = {{"process", i}, {"k", ks}, {"benchmark", bench}, {"heuristic", heur}, {"steps", steps},
                   {"steps_total", l.steps.size()}, {"steps_every", std::max<size_t>(every, 1)},
                   {"searches_benchmark", l.benchmark}, {"searches_heuristic", l.heuristic},
                   {"incomplete", l.incomplete}};
      add_searches_by_step(l, lane);
      lanes.push_back(std::move(lane));
      items += l.counts.size();
    }
    if (searches_ > search_points && search_points > 0) {
      stats.aggregated.push_back(fmt::format("plan searches: {} searches counted per time bucket of {} ({} bars)",
                                             searches_, duration_text(grid_.width_ns()), search_points));
    }
    for (const auto& t : thinned) stats.aggregated.push_back("step starts of " + t);
    return lanes;
  }

  // A lane's searches by step: before the first step, in the first, in later ones; the last step
  // that searched.
  static void add_searches_by_step(const Lane& l, json& lane) {
    uint64_t later = 0, steps_with = 0;
    int64_t last_step = -1;
    for (size_t s = 2; s < l.per_step.size(); ++s) {
      later += l.per_step[s];
      if (l.per_step[s]) {
        ++steps_with;
        last_step = int64_t(s) - 1;
      }
    }
    lane["before_first_step"] = l.per_step[0];
    lane["in_first_step"] = l.per_step.size() > 1 ? l.per_step[1] : 0;
    lane["in_later_steps"] = later;
    lane["later_steps_with_searches"] = steps_with;
    lane["last_step_with_search"] = last_step;
  }

  // The plan each process worked with, per problem: the one it ran most, else its search's winner.
  struct ChosenPlans {
    std::map<uint64_t, std::vector<std::pair<size_t, Plan>>> by_problem;  // hash -> (process, plan)
    std::map<uint64_t, bool> backend;
  };
  ChosenPlans chosen_plans() const {
    ChosenPlans out;
    for (size_t i = 0; i < uses_.size(); ++i) {
      for (const auto& [hash, u] : uses_[i]) {
        Plan p;
        if (!u.runs.empty()) {
          p = std::max_element(u.runs.begin(), u.runs.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; })->first;
        } else if (u.has_winner) {
          p = u.winner;
        } else {
          continue;
        }
        out.by_problem[hash].emplace_back(i, p);
        out.backend[hash] = u.backend;
      }
    }
    return out;
  }

  // Problems that got different plans on different processes, those with the most plans first.
  json divergence_json(ExportStats& stats, uint64_t& items) {
    ChosenPlans chosen = chosen_plans();
    std::vector<json> rows;
    uint64_t compared = 0;
    for (const auto& [hash, list] : chosen.by_problem) {
      if (list.size() < 2) continue;
      ++compared;
      std::map<Plan, std::vector<size_t>> groups;
      for (const auto& [i, p] : list) groups[p].push_back(i);
      if (groups.size() < 2) continue;
      std::vector<std::pair<Plan, std::vector<size_t>>> g(groups.begin(), groups.end());
      std::stable_sort(g.begin(), g.end(), [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
      json plans = json::array();
      for (const auto& [p, who] : g) plans.push_back({{"plan", plan_text(p, chosen.backend[hash])}, {"processes", who}});
      rows.push_back({{"problem", problems_[hash]}, {"plans", plans}, {"processes", list.size()}});
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const json& a, const json& b) { return a["plans"].size() > b["plans"].size(); });
    json div = {{"compared", compared}, {"diverging", rows.size()}, {"rows", json::array()}};
    for (size_t i = 0; i < rows.size() && i < kMaxRows; ++i) div["rows"].push_back(std::move(rows[i]));
    items += div["rows"].size();
    if (rows.size() > kMaxRows) {
      stats.aggregated.push_back(fmt::format("plan divergence: the first {} of {} problems are listed", kMaxRows, rows.size()));
    }
    return div;
  }

  json faults_json(uint64_t& items) const {
    json faults = json::array();
    for (const auto& [key, c] : faults_) {
      const auto& [rule, api, ret] = key;
      faults.push_back({{"rule", rule}, {"api", api}, {"status", status_text(api, ret)}, {"count", c.n},
                        {"first_s", c.first}, {"last_s", c.last}});
    }
    items += faults.size();
    return faults;
  }

  // JSON that is safe inside a <script> element: no "</script>" or "<!--" can end or change it
  // ("<", ">" and "&" written as escapes), and U+2028/U+2029 escaped for older JavaScript
  // parsers. Bytes that are not UTF-8 (trace strings are whatever the process had) become U+FFFD.
  static std::string script_json(const json& data) {
    std::string raw = data.dump(-1, ' ', false, json::error_handler_t::replace);
    std::string out;
    out.reserve(raw.size() + raw.size() / 64);
    for (size_t i = 0; i < raw.size(); ++i) {
      char c = raw[i];
      if (c == '<') {
        out += "\\u003c";
      } else if (c == '>') {
        out += "\\u003e";
      } else if (c == '&') {
        out += "\\u0026";
      } else if (c == '\xe2' && i + 2 < raw.size() && raw[i + 1] == '\x80' && (raw[i + 2] == '\xa8' || raw[i + 2] == '\xa9')) {
        out += raw[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
        i += 2;
      } else {
        out += c;
      }
    }
    return out;
  }

  const ExportJob& job_;
  const analysis::Report& report_;
  Grid grid_;
  const ProcessInfo* info_ = nullptr;
  size_t current_ = 0;
  uint64_t events_ = 0, samples_ = 0, searches_ = 0;
  // The latest injected fault: the walk reports it just before the allocation it failed.
  uint64_t last_fault_ns_ = UINT64_MAX;
  uint32_t last_fault_tid_ = 0;
  std::vector<ProcessRow> rows_;
  std::vector<MemChart> charts_;
  std::map<int, size_t> charts_of_process_;  // device -> charts_ index, for the process walked
  std::vector<std::unordered_map<uint64_t, ProblemUse>> uses_;  // per process
  std::unordered_map<uint64_t, std::string> problems_;
  std::map<std::tuple<std::string, std::string, int32_t>, FaultCount> faults_;
};

}  // namespace

Result<ExportStats> write_report(const ExportJob& job, const std::string& out_path) {
  // Seconds on every axis count from the job's first work (the earliest process's), the time
  // `cuprobe analyze` measures from; start-up before it is drawn at negative times.
  uint64_t origin = UINT64_MAX;
  for (const auto& p : job.report.processes) {
    if (p.job_start_wall_ns) origin = std::min(origin, p.job_start_wall_ns);
  }
  if (origin == UINT64_MAX) origin = 0;
  // A page of many memory charts keeps fewer buckets in each: the page stays a few MB.
  int64_t charts = 0;
  if (job.report.summary.contains("per_process")) {
    for (const auto& p : job.report.summary["per_process"]) charts += int64_t(p.value("memory", json::array()).size());
  }
  int64_t buckets = charts > 0 ? std::clamp(kPointBudget / charts, kMinBuckets, kMaxBuckets) : kMaxBuckets;
  ReportSink sink(job, origin, buckets);
  auto walked = walk_job(job.paths, sink, job.walk);
  if (!walked) return walked.error();
  return sink.write(out_path);
}

}  // namespace cuprobe::exporter
