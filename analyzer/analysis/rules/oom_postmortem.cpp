// oom-postmortem: for a process whose device allocations failed, what was asked for, what was
// live on the device then and its peak, the largest live allocations and what they were for,
// what was freed just before (the caching allocator flushing its cache and retrying), and which
// failures the job recovered from. A process whose trace was never finalized is reported too, with its
// last calls: it may have been killed (the kernel's OOM killer, SIGKILL).
#include <cctype>

#include <algorithm>

#include "analysis/common.h"
#include "enum_names.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

// Why the decisive request failed, as an expert reads it. Its name is the evidence's "cause" and
// the key of the fix in rules/oom-postmortem.json.
enum class Cause { kTooLarge, kFragmentation, kWorkspace, kMemoryFull };

constexpr std::pair<Cause, const char*> kCauseNames[] = {
    {Cause::kTooLarge, "request larger than the device"},
    {Cause::kFragmentation, "fragmentation"},
    {Cause::kWorkspace, "cuDNN workspace"},
    {Cause::kMemoryFull, "memory full"},
};

const char* name_of(Cause c) { return name_in(kCauseNames, c); }

// A request is a failure and, when PyTorch retried it after freeing its cache, the retry; the
// retry's moment (after the flush) is what the application's error describes.
struct Request {
  const OomEvent* first;
  const OomEvent* last;
  bool recovered() const { return first->retried_ok || last->retried_ok || last->continued; }
};

// The requests of a process, the decisive one (the last the process did not get past, else the
// largest) and what became of the others.
struct Failures {
  std::vector<Request> reqs;
  const Request* decisive = nullptr;
  bool fatal = false;
  int retried_ok = 0, in_selection = 0, recovered_other = 0;
};

Failures group_failures(const std::vector<OomEvent>& ooms) {
  Failures f;
  for (const OomEvent& x : ooms) {
    if (x.is_retry && !f.reqs.empty())
      f.reqs.back().last = &x;
    else
      f.reqs.push_back({&x, &x});
  }
  for (const Request& r : f.reqs) {
    if (!r.recovered()) f.decisive = &r;  // the last one the process did not get past
  }
  f.fatal = f.decisive != nullptr;
  if (!f.fatal) {
    for (const Request& r : f.reqs) {
      if (!f.decisive || r.first->requested > f.decisive->first->requested) f.decisive = &r;
    }
  }
  for (const Request& r : f.reqs) {
    if (&r == f.decisive || !r.recovered()) continue;
    if (r.first->retried_ok || r.last->retried_ok)
      ++f.retried_ok;
    else if (!r.first->search_problem.empty())
      ++f.in_selection;
    else
      ++f.recovered_other;
  }
  return f;
}

// "2 other failed requests: 1 cuDNN workspace request during plan selection, recovered ...; ..."
std::string others_text(const Failures& f) {
  std::vector<std::string> parts;
  if (f.in_selection) {
    parts.push_back(
        fmt::format("{} cuDNN workspace request{} during plan selection, recovered (it moved on to "
                    "plans needing less)",
                    f.in_selection, f.in_selection == 1 ? "" : "s"));
  }
  if (f.retried_ok) {
    parts.push_back(fmt::format("{} recovered when retried after the caching allocator freed its cache", f.retried_ok));
  }
  if (f.recovered_other) {
    parts.push_back(fmt::format("{} recovered by the application (it carried on)", f.recovered_other));
  }
  int requests = int(f.reqs.size());
  int unrecovered = requests - 1 - f.in_selection - f.retried_ok - f.recovered_other;
  if (unrecovered) parts.push_back(fmt::format("{} more that the process did not get past", unrecovered));
  if (parts.empty()) return "no other allocation failed";
  std::string out = fmt::format("{} other failed request{}: ", requests - 1, requests == 2 ? "" : "s");
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
  return out;
}

// What failed: the framework's request when it reported one (under expandable segments a page of
// a mapping fails underneath), else the failed call itself.
std::string failure_text(const OomEvent& o) {
  if (o.framework_request != 0 && o.failed_call_size != 0 && o.failed_call_size != o.framework_request) {
    return fmt::format(
        "PyTorch could not allocate {} (torch.OutOfMemoryError: \"Tried to allocate {}\"): a {} of {}, "
        "after {} of it had been obtained,",
        torch_bytes(o.framework_request), torch_bytes(o.framework_request), o.api, human_bytes(o.failed_call_size),
        human_bytes(o.partial));
  }
  if (o.framework_request != 0) {
    return fmt::format("{} of {} (torch.OutOfMemoryError: \"Tried to allocate {}\")", o.api, human_bytes(o.requested),
                       torch_bytes(o.framework_request));
  }
  return fmt::format("{} of {}", o.api, human_bytes(o.requested));
}

// The cause: a request no device of this size could serve; memory the framework held but could
// not use for it (fragmentation: its own report says how much it had reserved beyond its
// tensors); a cuDNN workspace taking the room; else live data fills the device. `total` is the
// device's memory, or the memory cap's.
struct Diagnosis {
  Cause cause = Cause::kMemoryFull;
  std::string text;
};

Diagnosis diagnose(const RuleSpec& spec, const OomEvent& o, uint64_t total) {
  const char* space = o.mem_cap ? "memory cap" : "device";
  uint64_t request = o.framework_request ? o.framework_request : o.requested;
  uint64_t cached_free =
      o.framework_reserved > o.framework_allocated ? o.framework_reserved - o.framework_allocated : 0;
  uint64_t workspace_live = 0;
  for (const auto& a : o.largest) {
    if (a.kind == AllocationKind::kSearchWorkspace) workspace_live += a.size;
  }
  if (total && request > total) {
    return {Cause::kTooLarge, fmt::format("one request of {} is larger than the whole {} ({}): no allocator setting "
                                          "can serve it",
                                          human_bytes(request), space, human_bytes(total))};
  }
  if (o.framework_reserved && cached_free >= request &&
      double(cached_free) >= spec.param("fragmentation_share") * double(o.framework_reserved)) {
    return {Cause::kFragmentation,
            fmt::format("fragmentation: PyTorch held {} reserved but only {} in tensors; the {} free in its cache "
                        "would have served the {} request, but in pieces too small for it",
                        human_bytes(o.framework_reserved), human_bytes(o.framework_allocated), human_bytes(cached_free),
                        human_bytes(request))};
  }
  // A stream-ordered pool (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync) keeps what was freed
  // reserved: when what it held free would have served the request, the pool's pieces were the
  // obstacle, not live data (its reserved bytes come from the shim's sample right after the failure).
  const uint64_t pool_free = o.pool_reserved > o.pool_live ? o.pool_reserved - o.pool_live : 0;
  if (o.search_problem.empty() && pool_free >= request && o.pool_reserved != 0) {
    return {Cause::kFragmentation,
            fmt::format("fragmentation in the stream-ordered pool (cudaMallocAsync): it held {} reserved with {} "
                        "live; the {} free in it would have served the {} request, but not in one piece, and the "
                        "{} had no room to reserve more",
                        human_bytes(o.pool_reserved), human_bytes(o.pool_live), human_bytes(pool_free),
                        human_bytes(request), space)};
  }
  if (!o.search_problem.empty() ||
      double(workspace_live) >= spec.param("workspace_share") * double(std::max<uint64_t>(o.live, 1))) {
    return {Cause::kWorkspace, o.search_problem.empty()
                                   ? fmt::format("cuDNN workspaces held {} of the {} live", human_bytes(workspace_live),
                                                 human_bytes(o.live))
                                   : "the failure came while cuDNN chose a plan (a search workspace)"};
  }
  return {Cause::kMemoryFull, o.framework_reserved
                                  ? fmt::format("live data fills the {}: {} in PyTorch's tensors when it failed", space,
                                                human_bytes(o.framework_allocated))
                                  : fmt::format("live allocations fill the {}", space)};
}

// The largest live allocations, as evidence and as text; equal neighbours (the pages of
// expandable segments) are said once, with their count.
std::pair<nlohmann::json, std::string> largest_live(const OomEvent& o) {
  nlohmann::json largest = nlohmann::json::array();
  std::string text;
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
    text += fmt::format("{}{}{} ({})", text.empty() ? "" : ", ", same > 1 ? fmt::format("{} x ", same) : "",
                        human_bytes(a.size), a.purpose);
    i += same;
  }
  return {largest, text};
}

nlohmann::json failures_json(const std::vector<OomEvent>& ooms) {
  nlohmann::json out = nlohmann::json::array();
  for (const OomEvent& x : ooms) {
    out.push_back({{"ts_ns", x.ts_ns},
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
  return out;
}

std::string fix_for(const RuleSpec& spec, const OomEvent& o, Cause cause, bool fatal) {
  if (o.framework_request != 0 && o.failed_call_size != 0 && o.failed_call_size < o.framework_request) {
    // Pieces of a mapping failed: the job already maps its memory (expandable segments), so
    // there is no fragmentation left to recover.
    return "The job already maps its memory in pieces (PyTorch's expandable_segments), so fragmentation is not the "
           "cause: reduce the batch or the activations kept for backward (gradient checkpointing), free or offload "
           "tensors kept alive across steps, or give the job a device with more memory.";
  }
  if (cause == Cause::kFragmentation && o.pool_reserved != 0) {
    std::string fix = "The stream-ordered pool (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync) keeps freed memory "
                      "reserved in pieces: call torch.cuda.empty_cache() before the large request (it trims the "
                      "pool), or run the job on PyTorch's native allocator with "
                      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, whose segments grow in place.";
    return fatal ? fix : "The job recovered and carried on; to avoid the failed attempts: " + fix;
  }
  std::string fix = spec.fix_for(name_of(cause));
  if (!fatal && !fix.empty()) {
    fix[0] = char(std::tolower(static_cast<unsigned char>(fix[0])));
    fix = "The job recovered and carried on; to avoid the failed attempts, " + fix;
  }
  return fix;
}

// One finding per process that had allocation failures: the decisive failure in detail (the
// one after which the process did no more work, else the largest request) and what became of
// the others. PyTorch retries a failed request once after freeing its cache, and cuDNN plan
// selection moves on to the next plan when a workspace cannot be had; both are recoveries.
void out_of_memory(const RuleSpec& spec, const AllFacts& all, const ProcessFacts& p, const Emit& emit) {
  // Failures a fault rule made belong to the fault summary; the memory cap's stand for a smaller
  // device and are explained here like genuine ones.
  // Requests larger than what the allocator then obtained and gave straight back, in a search
  // that so probed (PyTorch's cudaMallocAsync backend asks for the most it might get and halves on
  // failure before each search): measurements, not failures.
  auto probing = [&p](const OomEvent& x) {
    if (x.search_problem.empty()) return false;
    for (const reader::SearchRecord& s : p.searches) {
      if (s.tid == x.tid && s.probes > 0 && s.start_ns <= x.ts_ns && x.ts_ns <= s.end_ns && x.requested > s.probe_bytes)
        return true;
    }
    return false;
  };
  std::vector<OomEvent> ooms;
  int probe_failures = 0;
  for (const OomEvent& x : p.ooms) {
    if (!x.injected_by.empty() && !x.mem_cap) continue;
    if (probing(x))
      ++probe_failures;
    else
      ooms.push_back(x);
  }
  if (ooms.empty()) return;
  const Failures failures = group_failures(ooms);
  const OomEvent& o = *failures.decisive->last;
  auto mem = p.memory.find(o.device);
  uint64_t total = mem != p.memory.end() ? mem->second.total_mem : 0;
  // A failure cuprobe made: the memory cap stands in for the device's size.
  // Every failure a cuDNN search's own workspace request that the search got past (it asks for the
  // largest workspace that might fit and moves on to plans needing less): routine, at info; the
  // size of those requests is workspace-blowup's to judge.
  const bool only_search_retries =
      !failures.fatal && std::all_of(failures.reqs.begin(), failures.reqs.end(),
                                     [](const Request& r) { return !r.first->search_problem.empty(); });
  std::string headline = failures.fatal ? "out of memory, and the process did no more work after it"
                         : only_search_retries
                             ? "out of memory only in cuDNN's plan selection, which moved on to plans needing less "
                               "each time (routine: see workspace-blowup for the size of what it asked)"
                             : "out of memory, recovered each time";
  auto cap = p.mem_cap.find(o.device);
  if (o.mem_cap && cap != p.mem_cap.end()) {
    headline = fmt::format("out of memory under cuprobe's memory cap of {} (the device itself has {}){}",
                           human_bytes(cap->second), human_bytes(total),
                           failures.fatal ? ", and the process did no more work after it" : ", recovered each time");
    total = cap->second;
  }
  const Diagnosis why = diagnose(spec, o, total);
  std::string owners = owners_text(o.live_by_owner);
  nlohmann::json owners_json = nlohmann::json::object();
  for (const auto& [owner, bytes] : o.live_by_owner) {
    if (bytes != 0) owners_json[owner] = bytes;
  }
  auto [largest, largest_text] = largest_live(o);
  nlohmann::json ev = {{"process", process_label(p)},
                       {"headline", headline},
                       {"cause", name_of(why.cause)},
                       {"cause_text", why.text},
                       {"framework_allocated", o.framework_allocated},
                       {"framework_reserved", o.framework_reserved},
                       {"injected_by", o.injected_by},
                       {"fatal", failures.fatal},
                       {"api", o.api},
                       {"failure", failure_text(o)},
                       {"requested", o.requested},
                       {"framework_request", o.framework_request},
                       {"raised", o.raised},
                       {"failed_call_size", o.failed_call_size},
                       {"pool_reserved", o.pool_reserved},
                       {"pool_live", o.pool_live},
                       {"probe_failures", probe_failures},
                       {"obtained_before", o.partial},
                       {"live_by_owner", owners_json},
                       {"owners_text", owners.empty() ? "none recorded" : owners},
                       {"device", device_name(p, o.device)},
                       {"device_memory", total},
                       {"live", o.live},
                       {"needed", o.live + o.requested},
                       {"peak", o.peak},
                       {"largest_live", largest},
                       {"largest_text", largest_text.empty() ? "none recorded" : largest_text},
                       {"freed_before", o.freed_before},
                       {"frees_before", o.frees_before},
                       {"calls_after", o.calls_after},
                       {"failed_requests", failures.reqs.size()},
                       {"failed_calls", ooms.size()},
                       {"others", others_text(failures)},
                       {"during_plan_selection", o.search_problem},
                       {"failures", failures_json(ooms)}};
  Finding f = make_finding(spec, ev, 0);
  f.at_wall_ns = p.trace->wall_ns(o.ts_ns);
  if (!failures.fatal) f.severity = only_search_retries ? Severity::kInfo : Severity::kWarning;
  f.run_event = failures.fatal ? RunEvent::kEndedRun : only_search_retries ? RunEvent::kNone : RunEvent::kFailure;
  f.fix = fix_for(spec, o, why.cause, failures.fatal);
  f.pids.push_back(p.pid);
  if (!o.search_problem.empty()) f.problems.push_back(o.search_problem);
  std::string failed;
  for (const auto& frame : stack_sites(all, p, o.stack, 2, 3)) failed += (failed.empty() ? "" : " < ") + frame;
  if (!failed.empty()) f.call_sites.push_back("the failed request: " + failed);
  std::vector<reader::StackId> held;
  for (const auto& a : o.largest) held.push_back(a.stack);
  for (auto& site : top_sites(all, p, held, "of the largest live allocations from")) f.call_sites.push_back(site);
  emit(std::move(f));
}

// A process whose trace was never finalized, with its last calls: it may have been killed.
void unclean_exit(const RuleSpec& spec, const ProcessFacts& p, const Emit& emit) {
  if (!p.trace || p.trace->state() != trace::FileState::kRecording) return;
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
  f.run_event = RunEvent::kEndedRun;
  f.title = "A process ended without a clean exit";
  f.message = fmt::format(
      "{} ended without exiting (killed by SIGKILL, the kernel's OOM killer, os._exit, or still running) after {} "
      "calls; its trace is complete up to the last one. Device memory peak {}{}. Last calls: {}",
      process_label(p), p.events, human_bytes(peak), total ? fmt::format(" of {}", human_bytes(total)) : "", last);
  f.evidence = {{"process", process_label(p)}, {"events", p.events}, {"peak", peak}, {"last_calls", p.last_calls}};
  f.fix =
      "Check the kernel log (dmesg) of that host for the OOM killer, and the job's host memory; a process killed "
      "while the GPU was full points at device memory instead.";
  f.pids.push_back(p.pid);
  emit(std::move(f));
}

void oom_postmortem(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  for (const ProcessFacts& p : all.processes) {
    out_of_memory(spec, all, p, emit);
    unclean_exit(spec, p, emit);
  }
}

const RegisterRule kRegister("oom-postmortem", oom_postmortem);

}  // namespace
}  // namespace cuprobe::analysis
