// oom-postmortem: for a process whose device allocations failed, what was asked for, what was
// live on the device then and its peak, the largest live allocations and what they were for,
// what was freed just before (the caching allocator flushing its cache and retrying), and which
// failures the job recovered from. A process whose trace was never finalized is reported too, with its
// last calls: it may have been killed (the kernel's OOM killer, SIGKILL).
#include <cctype>

#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

// One finding per process that had allocation failures: the decisive failure in detail (the
// one after which the process did no more work, else the largest request) and what became of
// the others. PyTorch retries a failed request once after freeing its cache, and cuDNN plan
// selection moves on to the next plan when a workspace cannot be had; both are recoveries.
void oom_postmortem(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  for (const ProcessFacts& p : all.processes) {
    // Failures a fault rule made belong to the fault summary; the memory cap's stand for a smaller
    // device and are explained here like genuine ones.
    std::vector<OomEvent> ooms;
    for (const OomEvent& x : p.ooms) {
      if (x.injected_by.empty() || x.injected_by == "mem-cap") ooms.push_back(x);
    }
    if (!ooms.empty()) {
      // A request is a failure and, when PyTorch retried it after freeing its cache, the retry;
      // the retry's moment (after the flush) is what the application's error describes.
      struct Request {
        const OomEvent* first;
        const OomEvent* last;
      };
      std::vector<Request> reqs;
      for (const OomEvent& x : ooms) {
        if (x.is_retry && !reqs.empty()) reqs.back().last = &x;
        else reqs.push_back({&x, &x});
      }
      auto recovered = [](const Request& r) { return r.first->retried_ok || r.last->retried_ok || r.last->continued; };
      const Request* decisive = nullptr;
      for (const Request& r : reqs) {
        if (!recovered(r)) decisive = &r;  // the last one the process did not get past
      }
      bool fatal = decisive != nullptr;
      if (!fatal) {
        for (const Request& r : reqs) {
          if (!decisive || r.first->requested > decisive->first->requested) decisive = &r;
        }
      }
      const OomEvent& o = *decisive->last;
      int requests = int(reqs.size()), retried_ok = 0, in_selection = 0, recovered_other = 0;
      for (const Request& r : reqs) {
        if (&r == decisive || !recovered(r)) continue;
        if (r.first->retried_ok || r.last->retried_ok) ++retried_ok;
        else if (!r.first->search_problem.empty()) ++in_selection;
        else ++recovered_other;
      }
      std::vector<std::string> parts;
      if (in_selection) {
        parts.push_back(fmt::format("{} cuDNN workspace request{} during plan selection, recovered (it moved on to "
                                    "plans needing less)",
                                    in_selection, in_selection == 1 ? "" : "s"));
      }
      if (retried_ok) {
        parts.push_back(fmt::format("{} recovered when retried after the caching allocator freed its cache",
                                    retried_ok));
      }
      if (recovered_other) {
        parts.push_back(fmt::format("{} recovered by the application (it carried on)", recovered_other));
      }
      int unrecovered = requests - 1 - in_selection - retried_ok - recovered_other;
      if (unrecovered) parts.push_back(fmt::format("{} more that the process did not get past", unrecovered));
      std::string others = "no other allocation failed";
      if (!parts.empty()) {
        others = fmt::format("{} other failed request{}: ", requests - 1, requests == 2 ? "" : "s");
        for (size_t i = 0; i < parts.size(); ++i) others += (i ? "; " : "") + parts[i];
      }
      auto mem = p.memory.find(o.device);
      uint64_t total = mem != p.memory.end() ? mem->second.total_mem : 0;
      // A failure cuprobe made: the memory cap stands in for the device's size, a fault rule is named.
      std::string headline = fatal ? "out of memory, and the process did no more work after it"
                                   : "out of memory, recovered each time";
      const std::string device = device_name(p, o.device);
      auto cap = p.mem_cap.find(o.device);
      if (o.injected_by == "mem-cap" && cap != p.mem_cap.end()) {
        headline = fmt::format("out of memory under cuprobe's memory cap of {} (the device itself has {}){}",
                               human_bytes(cap->second), human_bytes(total),
                               fatal ? ", and the process did no more work after it" : ", recovered each time");
        total = cap->second;
      }
      // What failed: the framework's request when it reported one (under expandable segments a
      // page of a mapping fails underneath), else the failed call itself.
      std::string failure;
      if (o.framework_request != 0 && o.failed_call_size != 0 && o.failed_call_size != o.framework_request) {
        failure = fmt::format("PyTorch could not allocate {} (torch.OutOfMemoryError: \"Tried to allocate {}\"): a {} "
                              "of {}, after {} of it had been obtained,",
                              torch_bytes(o.framework_request), torch_bytes(o.framework_request), o.api,
                              human_bytes(o.failed_call_size), human_bytes(o.partial));
      } else if (o.framework_request != 0) {
        failure = fmt::format("{} of {} (torch.OutOfMemoryError: \"Tried to allocate {}\")", o.api,
                              human_bytes(o.requested), torch_bytes(o.framework_request));
      } else {
        failure = fmt::format("{} of {}", o.api, human_bytes(o.requested));
      }
      // The cause, as an expert reads it: a request no device of this size could serve; memory the
      // framework held but could not use for it (fragmentation: its own report says how much it
      // had reserved beyond its tensors); a cuDNN workspace taking the room; else live data fills
      // the device.
      uint64_t request = o.framework_request ? o.framework_request : o.requested;
      uint64_t cached_free = o.framework_reserved > o.framework_allocated ? o.framework_reserved - o.framework_allocated : 0;
      uint64_t workspace_live = 0;
      for (const auto& a : o.largest) {
        if (a.purpose.rfind("workspace", 0) == 0 || a.purpose.find("search workspace") != std::string::npos) {
          workspace_live += a.size;
        }
      }
      std::string cause, cause_text;
      if (total && request > total) {
        cause = "request larger than the device";
        cause_text = fmt::format("one request of {} is larger than the whole {} ({}): no allocator setting can serve it",
                                 human_bytes(request), o.injected_by == "mem-cap" ? "memory cap" : "device",
                                 human_bytes(total));
      } else if (o.framework_reserved && cached_free >= request &&
                 double(cached_free) >= spec.param("fragmentation_share") * double(o.framework_reserved)) {
        cause = "fragmentation";
        cause_text = fmt::format("fragmentation: PyTorch held {} reserved but only {} in tensors; the {} free in its "
                                 "cache would have served the {} request, but in pieces too small for it",
                                 human_bytes(o.framework_reserved), human_bytes(o.framework_allocated),
                                 human_bytes(cached_free), human_bytes(request));
      } else if (!o.search_problem.empty() || double(workspace_live) >= 0.25 * double(std::max<uint64_t>(o.live, 1))) {
        cause = "cuDNN workspace";
        cause_text = o.search_problem.empty()
                         ? fmt::format("cuDNN workspaces held {} of the {} live", human_bytes(workspace_live),
                                       human_bytes(o.live))
                         : "the failure came while cuDNN chose a plan (a search workspace)";
      } else {
        cause = "memory full";
        cause_text = o.framework_reserved
                         ? fmt::format("live data fills the {}: {} in PyTorch's tensors when it failed",
                                       o.injected_by == "mem-cap" ? "memory cap" : "device",
                                       human_bytes(o.framework_allocated))
                         : fmt::format("live allocations fill the {}", o.injected_by == "mem-cap" ? "memory cap" : "device");
      }
      std::string owners = owners_text(o.live_by_owner);
      nlohmann::json owners_json = nlohmann::json::object();
      for (const auto& [owner, bytes] : o.live_by_owner) {
        if (bytes != 0) owners_json[owner] = bytes;
      }
      nlohmann::json largest = nlohmann::json::array();
      std::string largest_text;
      // Equal neighbours (the pages of expandable segments) are said once, with their count.
      for (size_t i = 0; i < o.largest.size();) {
        const Allocation& a = o.largest[i];
        size_t same = 1;
        while (i + same < o.largest.size() && o.largest[i + same].size == a.size &&
               o.largest[i + same].purpose == a.purpose) {
          ++same;
        }
        for (size_t k = i; k < i + same; ++k) {
          const Allocation& b = o.largest[k];
          largest.push_back({{"size", b.size}, {"api", b.api}, {"purpose", b.purpose}, {"owner", b.owner}, {"tid", b.tid}});
        }
        largest_text += fmt::format("{}{}{} ({})", largest_text.empty() ? "" : ", ",
                                    same > 1 ? fmt::format("{} x ", same) : "", human_bytes(a.size), a.purpose);
        i += same;
      }
      nlohmann::json failures = nlohmann::json::array();
      for (const OomEvent& x : ooms) {
        failures.push_back({{"ts_ns", x.ts_ns},
                            {"tid", x.tid},
                            {"api", x.api},
                            {"requested", x.requested},
                            {"live", x.live},
                            {"retry", x.is_retry},
                            {"retried_ok", x.retried_ok},
                            {"continued", x.continued},
                            {"injected_by", x.injected_by},
                            {"during_plan_selection", x.search_problem}});
      }
      nlohmann::json ev = {{"process", process_label(p)},
                           {"headline", headline},
                           {"cause", cause},
                           {"cause_text", cause_text},
                           {"framework_allocated", o.framework_allocated},
                           {"framework_reserved", o.framework_reserved},
                           {"injected_by", o.injected_by},
                           {"fatal", fatal},
                           {"api", o.api},
                           {"failure", failure},
                           {"requested", o.requested},
                           {"framework_request", o.framework_request},
                           {"raised", o.raised},
                           {"failed_call_size", o.failed_call_size},
                           {"obtained_before", o.partial},
                           {"live_by_owner", owners_json},
                           {"owners_text", owners.empty() ? "none recorded" : owners},
                           {"device", device},
                           {"device_memory", total},
                           {"live", o.live},
                           {"needed", o.live + o.requested},
                           {"peak", o.peak},
                           {"largest_live", largest},
                           {"largest_text", largest_text.empty() ? "none recorded" : largest_text},
                           {"freed_before", o.freed_before},
                           {"frees_before", o.frees_before},
                           {"calls_after", o.calls_after},
                           {"failed_requests", requests},
                           {"failed_calls", ooms.size()},
                           {"others", others},
                           {"during_plan_selection", o.search_problem},
                           {"failures", failures}};
      Finding f = make_finding(spec, ev, 0);
      f.at_wall_ns = p.trace->wall_ns(o.ts_ns);
      if (!fatal) f.severity = Severity::kWarning;
      f.fix = spec.fix_for(cause);
      if (!fatal && !f.fix.empty()) {
        f.fix[0] = char(std::tolower(static_cast<unsigned char>(f.fix[0])));
        f.fix = "The job recovered and carried on; to avoid the failed attempts, " + f.fix;
      }
      if (o.framework_request != 0 && o.failed_call_size != 0 && o.failed_call_size < o.framework_request) {
        // Pieces of a mapping failed: the job already maps its memory (expandable segments), so
        // there is no fragmentation left to recover.
        f.fix = "The job already maps its memory in pieces (PyTorch's expandable_segments), so fragmentation is not "
                "the cause: reduce the batch or the activations kept for backward (gradient checkpointing), free or "
                "offload tensors kept alive across steps, or give the job a device with more memory.";
      }
      f.pids.push_back(p.pid);
      if (!o.search_problem.empty()) f.problems.push_back(o.search_problem);
      std::string failed;
      for (const auto& frame : stack_sites(all, p, o.stack, 2, 3)) failed += (failed.empty() ? "" : " < ") + frame;
      if (!failed.empty()) f.call_sites.push_back("the failed request: " + failed);
      std::vector<uint32_t> held;
      for (const auto& a : o.largest) held.push_back(a.stack);
      for (auto& site : top_sites(all, p, held, "of the largest live allocations from")) f.call_sites.push_back(site);
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
