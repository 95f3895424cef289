// oom-postmortem: for each failed device allocation, what was asked for, what was live on the
// device then and its peak, the largest live allocations and what they were for, what was
// freed just before (the caching allocator flushing its cache and retrying), and whether the
// application recovered. A process whose trace was never finalized is reported too, with its
// last calls: it may have been killed (the kernel's OOM killer, SIGKILL).
#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

void oom_postmortem(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  for (const ProcessFacts& p : all.processes) {
    for (const OomEvent& o : p.ooms) {
      auto mem = p.memory.find(o.device);
      uint64_t total = mem != p.memory.end() ? mem->second.total_mem : 0;
      nlohmann::json largest = nlohmann::json::array();
      std::string largest_text;
      for (const auto& a : o.largest) {
        largest.push_back({{"size", a.size}, {"api", a.api}, {"purpose", a.purpose}, {"tid", a.tid}});
        largest_text += fmt::format("{}{} ({})", largest_text.empty() ? "" : ", ", human_bytes(a.size), a.purpose);
      }
      bool recovered = o.retried_ok || (o.calls_after > 0 && p.trace && p.trace->state() == trace::FileState::kExited);
      nlohmann::json ev = {{"process", process_label(p)},
                           {"api", o.api},
                           {"requested", o.requested},
                           {"device", device_name(p, o.device)},
                           {"device_memory", total},
                           {"live", o.live},
                           {"peak", o.peak},
                           {"largest_live", largest},
                           {"largest_text", largest_text.empty() ? "none recorded" : largest_text},
                           {"freed_before", o.freed_before},
                           {"frees_before", o.frees_before},
                           {"retried_ok", o.retried_ok},
                           {"calls_after", o.calls_after},
                           {"recovered", recovered ? "yes" : "no"},
                           {"during_plan_selection", o.search_problem}};
      Finding f = make_finding(spec, ev, 0);
      if (recovered) f.severity = Severity::kWarning;
      f.pids.push_back(p.pid);
      if (!o.search_problem.empty()) f.problems.push_back(o.search_problem);
      emit(std::move(f));
    }
    if (p.trace && p.trace->state() == trace::FileState::kRecording) {
      uint64_t peak = 0, total = 0;
      for (const auto& [d, m] : p.memory) {
        peak = std::max(peak, m.peak);
        total = std::max(total, m.total_mem);
      }
      std::string last;
      for (const auto& c : p.last_calls) last += (last.empty() ? "" : "; ") + c;
      Finding f;
      f.rule = spec.id;
      f.severity = Severity::kError;
      f.title = "A process ended without a clean exit";
      f.message = fmt::format(
          "{} ended without exiting (killed by SIGKILL, the kernel's OOM killer, os._exit, or still running) after {} "
          "calls; its trace is complete up to the last one. Device memory peak {}{}. Last calls: {}",
          process_label(p), p.events, human_bytes(peak), total ? fmt::format(" of {}", human_bytes(total)) : "", last);
      f.evidence = {{"process", process_label(p)}, {"events", p.events}, {"peak", peak}, {"last_calls", p.last_calls}};
      f.fix = "Check the kernel log (dmesg) of that host for the OOM killer, and the job's host memory; a process killed "
              "while the GPU was full points at device memory instead.";
      f.pids.push_back(p.pid);
      emit(std::move(f));
    }
  }
}

const RegisterRule kRegister("oom-postmortem", oom_postmortem);

}  // namespace
}  // namespace cuprobe::analysis
