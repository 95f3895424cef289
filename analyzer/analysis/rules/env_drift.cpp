// env-drift: version and ABI binding problems of the job's environment. Within a process: several
// copies of one CUDA library mapped at once (a pip wheel's beside a system install), cuDNN built for
// another CUDA major version than the runtime it runs with, a driver older than the runtime needs.
// Across the processes of one analysis (one job): library versions, GPU models or cuDNN settings
// (benchmark, legacy API, deterministic, TF32, as trackers/config.h infers them) that differ.
//
// evidence.kinds names what was found, with these contract strings: "duplicate-library",
// "cudnn-cuda-mismatch", "driver-too-old", "rank-version-drift", "rank-gpu-drift",
// "rank-settings-drift". A job whose processes agree, each with one copy of each library, gives
// nothing. What is known depends on the trace: versions are properties the shim writes once the
// libraries answer; modules are written only with stacks (CUPROBE_STACKS other than off).
#include <algorithm>
#include <functional>
#include <map>

#include "analysis/common.h"
#include "analysis/rules.h"
#include "analysis/trackers/config.h"

namespace cuprobe::analysis {
namespace {

nlohmann::json setting_json(Setting s) {
  return s == Setting::kUnknown ? nlohmann::json(nullptr) : nlohmann::json(s == Setting::kOn);
}

void env_drift(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  nlohmann::json kinds = nlohmann::json::array();
  nlohmann::json items = nlohmann::json::array();
  std::vector<std::string> lines;
  bool error = false;
  auto add_kind = [&](const char* kind) {
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  };

  // Within each process.
  for (const ProcessFacts& p : all.processes) {
    const ProcessConfig& c = p.config;
    std::string who = short_process_name(p);
    bool named = false;
    for (const auto& [lib, paths] : c.library_copies) {
      if (paths.size() < 2) continue;
      add_kind("duplicate-library");
      named = true;
      items.push_back({{"kind", "duplicate-library"}, {"process", process_label(p)}, {"library", lib}, {"paths", paths}});
      std::string list;
      for (const auto& path : paths) list += (list.empty() ? "" : ", ") + path;
      lines.push_back(fmt::format("{}: {} copies of {} mapped: {}", who, paths.size(), lib, list));
    }
    // The shim saw several copies of a library it hooks, but the trace names none (no modules).
    if (!named && c.duplicate_libraries > 1) {
      add_kind("duplicate-library");
      items.push_back({{"kind", "duplicate-library"}, {"process", process_label(p)}, {"library", nullptr},
                       {"copies", c.duplicate_libraries}, {"modules_known", c.modules_known}});
      lines.push_back(fmt::format("{}: {} copies of a CUDA library mapped (the trace lists no modules to name them: "
                                  "record with stacks on)", who, c.duplicate_libraries));
    }
    if (c.cudnn_cudart >= 0 && c.cuda_runtime >= 0 && c.cudnn_cudart / 1000 != c.cuda_runtime / 1000) {
      add_kind("cudnn-cuda-mismatch");
      error = true;
      items.push_back({{"kind", "cudnn-cuda-mismatch"}, {"process", process_label(p)},
                       {"cudnn_version", c.cudnn}, {"cudnn_cudart_version", c.cudnn_cudart},
                       {"cuda_runtime_version", c.cuda_runtime}});
      lines.push_back(fmt::format("{}: cuDNN {} was built for CUDA {}, the process runs CUDA runtime {}", who,
                                  cudnn_version_text(c.cudnn), cuda_version_text(c.cudnn_cudart), cuda_version_text(c.cuda_runtime)));
    }
    // CUDA's minor version compatibility runs a 13.x runtime on any driver of 13.0 or later: only a
    // driver of an older major version makes every call fail (cudaErrorInsufficientDriver).
    if (c.cuda_driver > 0 && c.cuda_runtime > 0 && c.cuda_driver / 1000 < c.cuda_runtime / 1000) {
      add_kind("driver-too-old");
      error = true;
      items.push_back({{"kind", "driver-too-old"}, {"process", process_label(p)},
                       {"cuda_driver_version", c.cuda_driver}, {"cuda_runtime_version", c.cuda_runtime}});
      lines.push_back(fmt::format("{}: the driver supports CUDA up to {}, the runtime is CUDA {}", who,
                                  cuda_version_text(c.cuda_driver), cuda_version_text(c.cuda_runtime)));
    }
  }

  // Across the job's processes: a value that is known on several and not the same on all.
  struct Value {
    const char* name;
    const char* label;
    const char* kind;
    std::function<std::string(const ProcessFacts&, const ProcessSettings&)> text;
  };
  auto setting_text = [](Setting s, const char* on, const char* off) -> std::string {
    return s == Setting::kUnknown ? "" : s == Setting::kOn ? on : off;
  };
  const Value values[] = {
      {"cudnn_version", "cuDNN", "rank-version-drift",
       [](const ProcessFacts& p, const ProcessSettings&) {
         return p.config.cudnn < 0 ? "" : cudnn_version_text(p.config.cudnn);
       }},
      {"cuda_runtime_version", "CUDA runtime", "rank-version-drift",
       [](const ProcessFacts& p, const ProcessSettings&) {
         return p.config.cuda_runtime < 0 ? "" : cuda_version_text(p.config.cuda_runtime);
       }},
      {"cuda_driver_version", "driver (CUDA version)", "rank-version-drift",
       [](const ProcessFacts& p, const ProcessSettings&) {
         return p.config.cuda_driver < 0 ? "" : cuda_version_text(p.config.cuda_driver);
       }},
      {"cudnn_cudart_version", "cuDNN's CUDA", "rank-version-drift",
       [](const ProcessFacts& p, const ProcessSettings&) {
         return p.config.cudnn_cudart < 0 ? "" : cuda_version_text(p.config.cudnn_cudart);
       }},
      {"torch_version", "PyTorch", "rank-version-drift",
       [](const ProcessFacts& p, const ProcessSettings&) { return library_version(p, "torch"); }},
      {"nccl_version", "NCCL", "rank-version-drift",
       [](const ProcessFacts& p, const ProcessSettings&) { return library_version(p, "nccl"); }},
      {"nvidia_driver", "NVIDIA driver", "rank-version-drift",
       [](const ProcessFacts& p, const ProcessSettings&) { return library_version(p, "nvidia_driver"); }},
      {"gpu", "GPU", "rank-gpu-drift", [](const ProcessFacts& p, const ProcessSettings&) { return p.config.gpu; }},
      {"benchmark", "cudnn.benchmark", "rank-settings-drift",
       [&](const ProcessFacts&, const ProcessSettings& s) {
         return setting_text(s.benchmark, "on (timed searches)", "off (heuristics)");
       }},
      {"legacy_api", "cuDNN API", "rank-settings-drift",
       [&](const ProcessFacts&, const ProcessSettings& s) { return setting_text(s.legacy_api, "legacy", "backend"); }},
      {"deterministic", "deterministic mode", "rank-settings-drift",
       [&](const ProcessFacts&, const ProcessSettings& s) { return setting_text(s.deterministic, "on", "off"); }},
      {"tf32", "TF32 for float32 convolutions", "rank-settings-drift",
       [&](const ProcessFacts&, const ProcessSettings& s) { return setting_text(s.tf32, "on", "off"); }},
  };
  std::vector<ProcessSettings> settings = infer_settings(all.processes);
  for (const Value& v : values) {
    std::map<std::string, std::vector<const ProcessFacts*>> by_value;
    nlohmann::json per = nlohmann::json::array();
    for (size_t i = 0; i < all.processes.size(); ++i) {
      std::string t = v.text(all.processes[i], settings[i]);
      if (t.empty()) continue;
      by_value[t].push_back(&all.processes[i]);
      per.push_back({{"process", process_label(all.processes[i])}, {"value", t}});
    }
    if (by_value.size() < 2) continue;
    add_kind(v.kind);
    std::string line = v.label;
    bool first = true;
    for (const auto& [t, who] : by_value) {
      line += fmt::format("{} {} on {}", first ? ":" : ",", t, short_process_names(who));
      first = false;
    }
    items.push_back({{"kind", v.kind}, {"value", v.name}, {"processes", per}});
    lines.push_back(line);
  }
  if (kinds.empty()) return;

  nlohmann::json per_process = nlohmann::json::array();
  for (size_t i = 0; i < all.processes.size(); ++i) {
    const ProcessFacts& p = all.processes[i];
    const ProcessConfig& c = p.config;
    per_process.push_back({{"process", process_label(p)},
                           {"cudnn_version", c.cudnn},
                           {"cudnn_cudart_version", c.cudnn_cudart},
                           {"cuda_runtime_version", c.cuda_runtime},
                           {"cuda_driver_version", c.cuda_driver},
                           {"gpu", c.gpu},
                           {"selection", settings[i].selection},
                           {"benchmark", setting_json(settings[i].benchmark)},
                           {"deterministic", setting_json(settings[i].deterministic)},
                           {"tf32", setting_json(settings[i].tf32)},
                           {"modules_known", c.modules_known},
                           {"library_copies", c.library_copies}});
  }
  std::string summary;
  for (size_t k = 0; k < lines.size() && k < 6; ++k) summary += (k ? "; " : "") + lines[k];
  if (lines.size() > 6) summary += fmt::format("; and {} more", lines.size() - 6);
  nlohmann::json ev = {{"kinds", kinds}, {"summary", summary}, {"processes", all.processes.size()},
                       {"items", items}, {"per_process", per_process}};
  Finding f = make_finding(spec, ev, 0);
  f.severity = error ? Severity::kError : spec.severity;
  // The fix for each kind found, in the order found (rules/env-drift.json "fixes").
  f.fix.clear();
  for (const auto& k : kinds) f.fix += (f.fix.empty() ? "" : " ") + spec.fix_for(k.get<std::string>());
  for (const auto& p : all.processes) f.pids.push_back(p.pid);
  emit(std::move(f));
}

const RegisterRule kRegister("env-drift", env_drift);

}  // namespace
}  // namespace cuprobe::analysis
