// Facts files: ProcessFacts out and back; see facts_io.h.
//
// nlohmann's type macros name each field once, so a field added to ProcessFacts and not here is
// caught by the facts round-trip test (FactsFiles.*: findings on facts equal findings on traces
// over every fixture), not silently dropped by hand-written code.
#include "analysis/facts_io.h"

#include <fmt/format.h>

#include <unordered_map>

namespace cuprobe::reader {

template <class Tag>
void to_json(nlohmann::json& j, const Id<Tag>& id) {
  j = id.value;
}
template <class Tag>
void from_json(const nlohmann::json& j, Id<Tag>& id) {
  id = Id<Tag>(j.get<uint64_t>());
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SearchCandidate, plan, engine, knobs, math, deterministic, workspace,
                                                build_status, exec_status, executions, last_exec_ns, time_ms, notes,
                                                injected)
// problem_info is rebound from the problem's text (facts_from_json).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SearchRecord, pid, tid, device, api, mode, function, problem,
                                                problem_hash, start_ns, end_ns, stack, candidates, winner,
                                                search_workspace, probe_bytes, probes, align, plans_rejected, build_ns,
                                                launch_ns, wait_ns, heur_ns, steered, complete)

}  // namespace cuprobe::reader

namespace cuprobe::analysis {

using nlohmann::json;

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Allocation, ptr, size, ts_ns, tid, api, kind, purpose, owner, stack)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DeviceMemory, device, allocated, allocations, live, peak, physical_live,
                                                physical_peak, pooled_live, pooled_peak, reserved, reserved_peak,
                                                mapped, total_mem, live_by_owner)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MemoryCoverage, device, samples, baseline_gap, max_unaccounted,
                                                max_ts_ns, used_then, seen_then, total, last_unaccounted, pools_sampled)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(OomEvent, ts_ns, tid, device, api, requested, ret, live, peak, largest,
                                                freed_before, frees_before, retried_ok, is_retry, continued,
                                                calls_after, event_index, search_problem, injected_by, mem_cap, stack,
                                                framework_request, raised, framework_allocated, framework_reserved,
                                                failed_call_size, pool_reserved, pool_live, partial, owner,
                                                live_by_owner)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(InjectedFault, rule, api, ts_ns, tid, k, ret, problem, outcome, next_ok)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FaultRuleFacts, index, name, text, mem_cap, matched, injected, outcomes)
// problem_info is rebound from the problem's text (facts_from_json).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CudnnFailure, api, problem, problem_hash, status, routine, count,
                                                first_ns, last_ns, align, stack)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PlanUse, plan, engine, knobs, first_ns, last_ns, executions, notes, tid,
                                                several_threads)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProblemUse, problem, hash, plans)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProblemConfig, chose_by, fp32, benchmark_searched, candidate_notes,
                                                chosen_notes, candidates)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProcessConfig, benchmark_searches, heuristic_selections, legacy_find,
                                                legacy_get, problems, cuda_runtime, cuda_driver, cudnn, cudnn_cudart,
                                                gpus, gpu, library_copies, modules_known, duplicate_libraries)

// Churn calls are the one list that can be long (up to 2^20): four numbers each, not an object.
void to_json(json& j, const ChurnCall& c) {
  j = json::array({c.ts_ns, c.dur_ns, c.size, (c.alloc ? 1 : 0) | (c.physical ? 2 : 0) | (c.again ? 4 : 0)});
}
void from_json(const json& j, ChurnCall& c) {
  c.ts_ns = j.at(0).get<uint64_t>();
  c.dur_ns = j.at(1).get<uint64_t>();
  c.size = j.at(2).get<uint64_t>();
  unsigned flags = j.at(3).get<unsigned>();
  c.alloc = flags & 1;
  c.physical = flags & 2;
  c.again = flags & 4;
}

namespace {

// Every field of ProcessFacts but `trace` (the trace the facts file stands for) and
// churn_call_ts (churn_calls' times, rebuilt). One list, used both ways.
#define CUPROBE_PROCESS_FACTS_FIELDS(X)                                                                               \
  X(pid)                                                                                                              \
  X(host)                                                                                                             \
  X(rank)                                                                                                             \
  X(rank_source) X(first_ns) X(last_ns) X(job_start_ns) X(did_work) X(step_starts) X(steps) X(warmup_end_ns)          \
      X(warmup_fraction) X(second_pass_ns) X(events) X(calls_by_api) X(time_by_api) X(searches) X(memory) X(coverage) \
          X(ooms) X(sync_ns) X(sync_calls) X(sync_stacks) X(sync_stack_stride) X(steady_allocs) X(steady_alloc_ns)    \
              X(steady_frees) X(steady_alloc_bytes) X(steady_alloc_stacks) X(churn_calls) X(retry_frees)              \
                  X(plain_allocs) X(physical_allocs) X(pooled_allocs) X(alloc_conf) X(cudnn_failures) X(problems)     \
                      X(last_calls) X(injected) X(nccl_abort_ns) X(fault_rules) X(mem_cap) X(device) X(config)

}  // namespace

void facts_parts(const ProcessFacts& f, const std::function<void(const std::string&, json, bool)>& emit) {
  emit("version", kFactsVersion, false);
  auto part = [&](const char* key, json v) {
    if (v.is_array() && v.size() > kFactsItemsPerLine) {
      for (size_t at = 0; at < v.size(); at += kFactsItemsPerLine) {
        size_t end = std::min(v.size(), at + kFactsItemsPerLine);
        emit(key, json(std::vector<json>(v.begin() + long(at), v.begin() + long(end))), true);
      }
    } else {
      bool items = v.is_array();
      emit(key, std::move(v), items);
    }
  };
#define CUPROBE_EMIT(field) part(#field, json(f.field));
  CUPROBE_PROCESS_FACTS_FIELDS(CUPROBE_EMIT)
#undef CUPROBE_EMIT
  // What the trace's reader found wrong with it (trace-integrity's inputs), which its metadata
  // lines do not carry.
  if (f.trace != nullptr) {
    const reader::Trace& t = *f.trace;
    const reader::Trace::Integrity& i = t.integrity();
    // Named with the trace they are about: read back, they are said of the facts file.
    std::vector<std::string> notes;
    for (const auto& d : t.diagnostics()) notes.push_back(t.facts() ? d : t.path() + ": " + d);
    emit("trace_integrity",
         json{{"skipped_chunks", i.skipped_chunks},
              {"resyncs", i.resyncs},
              {"skipped_bytes", i.skipped_bytes},
              {"inconsistent", i.inconsistent},
              {"first_chunk", i.first_chunk},
              {"first_resync", i.first_resync},
              {"first_inconsistent", i.first_inconsistent},
              {"damaged_records", t.damaged_records()},
              {"ignored_events", t.ignored_events()},
              {"diagnostics", notes}},
         false);
  }
}

Result<ProcessFacts> facts_from_json(const json& facts, const reader::Trace& trace) {
  auto version = facts.find("version");
  if (version == facts.end() || !version->is_number_integer()) {
    return Error{fmt::format("{}: process {}: facts without a version", trace.path(), trace.pid())};
  }
  if (version->get<int>() != kFactsVersion) {
    return Error{
        fmt::format("{}: facts of version {}; this cuprobe reads version {}: run `cuprobe facts` of this "
                    "version on the traces again",
                    trace.path(), version->get<int>(), kFactsVersion)};
  }
  ProcessFacts f;
  try {
#define CUPROBE_READ(field)                              \
  if (auto it = facts.find(#field); it != facts.end()) { \
    it->get_to(f.field);                                 \
  } else {                                               \
    throw Error{fmt::format("\"{}\"", #field)};          \
  }
    CUPROBE_PROCESS_FACTS_FIELDS(CUPROBE_READ)
#undef CUPROBE_READ
  } catch (const json::exception& e) {
    return Error{fmt::format("{}: process {}: facts that cannot be read: {}", trace.path(), trace.pid(), e.what())};
  } catch (const Error& e) {
    return Error{fmt::format("{}: process {}: facts without {}", trace.path(), trace.pid(), e.message)};
  }
  f.trace = &trace;
  f.churn_call_ts.reserve(f.churn_calls.size());
  for (const ChurnCall& c : f.churn_calls) f.churn_call_ts.push_back(c.ts_ns);
  std::unordered_map<std::string_view, const reader::Problem*> by_text;
  for (const reader::Problem& p : trace.problems()) {
    if (p.id != 0) by_text.emplace(p.text, &p);
  }
  auto typed = [&](const std::string& text) -> const reader::Problem* {
    auto it = by_text.find(text);
    return it == by_text.end() ? nullptr : it->second;
  };
  for (auto& s : f.searches) s.problem_info = typed(s.problem);
  for (auto& c : f.cudnn_failures) c.problem_info = typed(c.problem);
  return f;
}

Result<ProcessFacts> facts_of(const reader::Trace& trace, const FactOptions& options) {
  if (const json* facts = trace.facts()) {
    auto f = facts_from_json(*facts, trace);
    if (f && f->warmup_fraction != options.warmup_fraction) {
      return Error{
          fmt::format("{}: process {}: facts gathered with research-storm's warmup_fraction {}, not the {} "
                      "asked for; that setting needs the traces themselves",
                      trace.path(), trace.pid(), f->warmup_fraction, options.warmup_fraction)};
    }
    return f;
  }
  return gather_facts(trace, options);
}

}  // namespace cuprobe::analysis
