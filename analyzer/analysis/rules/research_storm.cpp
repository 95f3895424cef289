// research-storm: cuDNN benchmark searches that go on after warm-up (new shapes keep arriving
// with cudnn.benchmark on). Reports the searches over time, the distinct signatures, the share
// of wall time spent searching and which dimensions vary.
#include <algorithm>
#include <map>
#include <set>

#include "analysis/common.h"
#include "analysis/rules.h"
#include "trace/problem_view.h"

namespace cuprobe::analysis {
namespace {

std::string range_of(const std::set<int64_t>& v) {
  if (v.size() <= 1) return v.empty() ? "" : std::to_string(*v.begin());
  return fmt::format("{}..{} ({} values)", *v.begin(), *v.rbegin(), v.size());
}

void research_storm(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double min_late = spec.param("min_late_searches");
  double min_share = spec.param("min_search_share");
  double error_share = spec.param("error_share");
  for (const ProcessFacts& p : all.processes) {
    uint64_t warm = p.warmup_end_ns;  // the second pass over the job's first layer, when seen
    std::vector<const reader::SearchRecord*> late;
    uint64_t search_ns = 0, late_ns = 0;
    int total = 0;
    for (const auto& s : p.searches) {
      if (s.mode != "benchmark") continue;
      ++total;
      uint64_t wall = s.end_ns > s.start_ns ? s.end_ns - s.start_ns : 0;
      search_ns += wall;
      if (s.start_ns >= warm) {
        late.push_back(&s);
        late_ns += wall;
      }
    }
    double span = span_s(p);
    double late_span = p.last_ns > warm ? seconds(p.last_ns - warm) : 0;
    double late_share = late_span > 0 ? seconds(late_ns) / late_span : 0;
    if (double(late.size()) < min_late || late_share < min_share) continue;

    std::set<uint64_t> shapes;
    std::set<std::string> ops;
    std::set<int64_t> batch, channels, spatial, align;
    size_t untyped = 0;  // problems known by their text only (dumps of trace format 1)
    for (const auto* s : late) {
      if (s->align) align.insert(s->align);
      shapes.insert(s->problem_hash);
      reader::ProblemShape shape = reader::problem_shape(s->problem_info);
      if (shape.op.empty()) {
        ++untyped;
        continue;
      }
      ops.insert(shape.op);
      if (shape.dims.size() >= 2) {
        batch.insert(shape.dims[0]);
        channels.insert(shape.dims[1]);
        for (size_t d = 2; d < shape.dims.size(); ++d) spatial.insert(shape.dims[d]);
      }
    }
    std::vector<std::string> varying;
    if (batch.size() > 1) varying.push_back("batch varies " + range_of(batch));
    if (spatial.size() > 1) varying.push_back("spatial size varies " + range_of(spatial));
    if (channels.size() > 1) varying.push_back("channels vary " + range_of(channels));
    if (align.size() > 1) varying.push_back("pointer alignment varies " + range_of(align) + " bytes");
    if (untyped > 0) {
      varying.push_back(fmt::format("what varies is not known for {} of them (problems of a trace recorded before trace "
                                    "format 2, known by their text only)",
                                    untyped));
    } else if (varying.empty()) {
      varying.push_back("the same shapes, searched again");
    }
    // Searches per tenth of the run, to show they do not die down.
    std::vector<int> timeline(10, 0);
    for (const auto& s : p.searches) {
      if (s.mode != "benchmark" || p.last_ns <= p.first_ns) continue;
      size_t bucket = size_t(double(s.start_ns - p.first_ns) / double(p.last_ns - p.first_ns) * 10);
      timeline[std::min<size_t>(bucket, 9)]++;
    }
    std::string op_list;
    for (const auto& o : ops) op_list += (op_list.empty() ? "" : ", ") + o;
    if (op_list.empty()) op_list = "cuDNN problems";
    std::string vary;
    for (const auto& v : varying) vary += (vary.empty() ? "" : "; ") + v;
    nlohmann::json ev = {{"process", process_label(p)},
                         {"searches", total},
                         {"late_searches", late.size()},
                         {"distinct_shapes", shapes.size()},
                         {"ops", op_list},
                         {"varying", vary},
                         {"search_time_s", seconds(search_ns)},
                         {"late_search_time_s", seconds(late_ns)},
                         {"search_share", span > 0 ? seconds(search_ns) / span : 0},
                         {"late_share", late_share},
                         {"run_s", span},
                         {"warmup_end_s", seconds(warm - std::min(warm, p.first_ns))},
                         {"warmup_by", p.second_pass_ns ? "second pass over the first problem" : "share of the run"},
                         {"searches_per_tenth_of_run", timeline}};
    Finding f = make_finding(spec, ev, seconds(late_ns));
    if (late_share >= error_share) f.severity = Severity::kError;
    f.pids.push_back(p.pid);
    std::set<std::string> names;
    for (const auto* s : late) {
      if (names.size() >= 5) break;
      names.insert(s->problem);
    }
    f.problems.assign(names.begin(), names.end());
    std::vector<uint32_t> stacks;
    for (const auto* s : late) stacks.push_back(s->stack);
    f.call_sites = top_sites(all, p, stacks, "late searches from");
    emit(std::move(f));
  }
}

const RegisterRule kRegister("research-storm", research_storm);

}  // namespace
}  // namespace cuprobe::analysis
