// Process configuration; see config.h.
#include "analysis/trackers/config.h"

#include "analysis/rank_groups.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace cuprobe::analysis {
namespace {

constexpr int8_t kCudnnDataFloat = 0;  // CUDNN_DATA_FLOAT
// What marks a plan as TF32 on a float32 problem: PyTorch drops TENSOR_CORE engines there when
// allow_tf32 is off, and DOWN_CONVERT_INPUTS engines always (Conv_v8.cpp filterEngineConfigs).
constexpr uint32_t kTf32Notes = kNoteTensorCore | kNoteDownConvert;

// The library a mapped file is a copy of: its file name up to ".so" ("libcudnn_graph"), for the
// CUDA libraries whose copies must agree; "" for any other file.
std::string library_of(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t so = base.find(".so");
  if (so == std::string::npos) return "";
  std::string stem = base.substr(0, so);
  for (const char* lib : {"libcudnn", "libcudart", "libcublas", "libnccl"}) {
    if (stem.rfind(lib, 0) == 0) return stem;
  }
  return stem == "libcuda" ? stem : "";
}

int64_t property(const reader::Trace& t, trace::Property key) {
  auto it = t.properties().find(uint32_t(key));
  return it == t.properties().end() ? -1 : it->second;
}

std::string gpu_text(const reader::Device& d) { return fmt::format("{} (cc {}.{})", d.name, d.cc_major, d.cc_minor); }

}  // namespace

ConfigTracker::ConfigTracker(const reader::Trace& trace, SearchesTracker& searches) : trace_(trace) {
  searches.on_search([this](const reader::SearchRecord& r) { on_search(r); });
}

void ConfigTracker::on_search(const reader::SearchRecord& r) {
  if (!r.cudnn()) return;  // cuDNN's configuration only (cuBLASLt's choices have no cuDNN notes)
  bool backend = r.backend();
  bool timed = r.benchmark();
  uint8_t how = backend ? (timed ? kChoseByBenchmark : kChoseByHeuristics) : (timed ? kChoseByLegacyFind : kChoseByLegacyGet);
  ++(backend ? (timed ? config_.benchmark_searches : config_.heuristic_selections)
             : (timed ? config_.legacy_find : config_.legacy_get));
  ProblemConfig& p = config_.problems[r.problem_hash];
  p.chose_by |= how;
  if (r.problem_info && r.problem_info->typed && r.problem_info->desc.n_tensors > 0) {
    p.fp32 = r.problem_info->desc.tensors[0].dtype == kCudnnDataFloat;
  }
  p.benchmark_searched = p.benchmark_searched || (backend && timed);
  for (const auto& c : r.candidates) {
    if (c.build_status != 0) continue;
    p.candidate_notes |= c.notes;
    ++p.candidates;
  }
  if (r.winner >= 0) p.chosen_notes |= r.candidates[size_t(r.winner)].notes;
}

void ConfigTracker::finish(ProcessFacts& f) {
  ProcessConfig& c = config_;
  c.cuda_runtime = property(trace_, trace::Property::kCudaRuntimeVersion);
  c.cuda_driver = property(trace_, trace::Property::kCudaDriverVersion);
  c.cudnn = property(trace_, trace::Property::kCudnnVersion);
  c.cudnn_cudart = property(trace_, trace::Property::kCudnnCudartVersion);
  for (const auto& [index, d] : trace_.devices()) {
    std::string g = gpu_text(d);
    if (std::find(c.gpus.begin(), c.gpus.end(), g) == c.gpus.end()) c.gpus.push_back(g);
    if (index == f.device) c.gpu = g;
  }
  if (c.gpu.empty() && c.gpus.size() == 1) c.gpu = c.gpus[0];
  c.modules_known = !trace_.modules().empty();
  for (const auto& m : trace_.modules()) {
    std::string lib = library_of(m.path);
    if (lib.empty()) continue;
    auto& paths = c.library_copies[lib];
    if (std::find(paths.begin(), paths.end(), m.path) == paths.end()) paths.push_back(m.path);
  }
  c.duplicate_libraries = trace_.stat(trace::kStatDuplicateLibraries);
  f.config = std::move(c);
}

std::vector<ProcessSettings> infer_settings(const std::vector<ProcessFacts>& processes) {
  std::vector<ProcessSettings> out(processes.size());
  // Per problem, the notes any process's candidates carried.
  std::map<uint64_t, uint32_t> job_notes;
  for (const auto& p : processes) {
    for (const auto& [hash, pc] : p.config.problems) job_notes[hash] |= pc.candidate_notes;
  }
  for (size_t i = 0; i < processes.size(); ++i) {
    const ProcessConfig& c = processes[i].config;
    ProcessSettings& s = out[i];
    uint64_t timed = c.benchmark_searches + c.legacy_find, untimed = c.heuristic_selections + c.legacy_get;
    // A process with benchmark on still chooses some plans by heuristics (operations PyTorch never
    // benchmarks, such as attention graphs); one with it off never times a candidate.
    s.benchmark = timed > 0 ? Setting::kOn : untimed > 0 ? Setting::kOff : Setting::kUnknown;
    uint64_t legacy = c.legacy_find + c.legacy_get, backend = c.benchmark_searches + c.heuristic_selections;
    s.legacy_api = legacy > 0 ? Setting::kOn : backend > 0 ? Setting::kOff : Setting::kUnknown;
    std::vector<std::string> ways;
    if (c.benchmark_searches) ways.push_back("benchmark");
    if (c.heuristic_selections) ways.push_back("heuristics");
    if (c.legacy_find) ways.push_back("legacy Find");
    if (c.legacy_get) ways.push_back("legacy Get");
    for (size_t k = 0; k < ways.size(); ++k) s.selection += (k ? " and " : "") + ways[k];

    // Deterministic mode drops every NONDETERMINISTIC engine before plans are built: one built is
    // proof it was off; a benchmark search (which builds the whole filtered list) of a problem
    // whose other processes were offered one, without one, is the sign it was on.
    int nondet = 0, det = 0, tf32_on = 0, tf32_off = 0;
    for (const auto& [hash, pc] : c.problems) {
      if (pc.candidate_notes & kNoteNondeterministic) ++nondet;
      else if (pc.benchmark_searched && pc.candidates > 0 && (job_notes[hash] & kNoteNondeterministic)) ++det;
      if (!pc.fp32) continue;
      if (pc.candidate_notes & kTf32Notes) ++tf32_on;
      else if (pc.benchmark_searched && pc.candidates > 0 && (job_notes[hash] & kTf32Notes)) ++tf32_off;
    }
    if (nondet > 0) {
      s.deterministic = Setting::kOff;
      s.deterministic_why = fmt::format("non-deterministic engines among its candidates for {} problem{}", nondet, nondet == 1 ? "" : "s");
    } else if (det > 0) {
      s.deterministic = Setting::kOn;
      s.deterministic_why = fmt::format("its benchmark searches of {} problem{} never built a non-deterministic engine, which "
                                        "other processes were offered for them", det, det == 1 ? "" : "s");
    }
    if (tf32_on > 0) {
      s.tf32 = Setting::kOn;
      s.tf32_why = fmt::format("tensor-core engines among its candidates for {} float32 problem{}", tf32_on, tf32_on == 1 ? "" : "s");
    } else if (tf32_off > 0) {
      s.tf32 = Setting::kOff;
      s.tf32_why = fmt::format("its benchmark searches of {} float32 problem{} never built a tensor-core engine, which other "
                               "processes were offered for them", tf32_off, tf32_off == 1 ? "" : "s");
    }
  }
  return out;
}

std::string cuda_version_text(int64_t v) {
  if (v < 0) return "unknown";
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

std::string cudnn_version_text(int64_t v) {
  if (v < 0) return "unknown";
  if (v >= 90000) return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
  return fmt::format("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100);
}

std::string short_process_name(const ProcessFacts& p) {
  return p.rank >= 0 ? fmt::format("rank {}", p.rank) : fmt::format("pid {}", p.pid);
}

std::string short_process_names(const std::vector<const ProcessFacts*>& processes) {
  std::vector<int> ranks;
  std::string pids;
  for (const ProcessFacts* p : processes) {
    if (p->rank >= 0) {
      ranks.push_back(p->rank);
    } else {
      pids += (pids.empty() ? "" : ", ") + short_process_name(*p);
    }
  }
  std::string out;
  if (ranks.size() == 1) out = fmt::format("rank {}", ranks[0]);
  if (ranks.size() > 1) out = "ranks " + rank_ranges(ranks);
  return out + (!out.empty() && !pids.empty() ? ", " : "") + pids;
}

}  // namespace cuprobe::analysis
