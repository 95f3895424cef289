// The per-process pass's trackers (analysis/trackers/), each fed hand-written calls (JSON Lines
// read by the reader), and the driver that runs them (gather_facts).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "analysis/facts.h"
#include "analysis/trackers/api_view.h"
#include "analysis/trackers/calls.h"
#include "analysis/trackers/cudnn_failures.h"
#include "analysis/trackers/faults.h"
#include "analysis/trackers/memory.h"
#include "analysis/trackers/plan_use.h"
#include "analysis/trackers/searches.h"
#include "analysis/trackers/syncs.h"
#include "analysis/trackers/tracker.h"
#include "analysis/trackers/warmup.h"
#include "trace/reader.h"

namespace cuprobe::analysis {
namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kMs = 1000000;
constexpr uint32_t kPid = 4242;

std::string process_line(uint64_t end_ns = 3000 * kMs) {
  return fmt::format(R"({{"type": "process", "pid": {}, "host": "node0", "start_ns": {}, "state": "exited", )"
                     R"("devices": [{{"index": 0, "name": "GPU", "total_mem": {}}}], "end_ns": {}}})"
                     "\n",
                     kPid, 1000 * kMs, 80 * kGiB, end_ns);
}

// One call: `extra` is the rest of the line's keys ("\"ptr\": \"0x10\", \"size\": 4").
std::string call(const std::string& api, uint64_t ts_ms, int ret, const std::string& extra = "", uint32_t tid = 1,
                 uint64_t dur_ns = 1000) {
  return fmt::format(R"({{"type": "call", "api": "{}", "ret": {}, "ts_ns": {}, "dur_ns": {}, "pid": {}, "tid": {}, )"
                     R"("device": 0{}{}}})"
                     "\n",
                     api, ret, ts_ms * kMs, dur_ns, kPid, tid, extra.empty() ? "" : ", ", extra);
}

std::string malloc_call(uint64_t ts_ms, uint64_t ptr, uint64_t size, int ret = 0, uint32_t tid = 1) {
  return call("cudaMalloc", ts_ms, ret, fmt::format(R"("ptr": "0x{:x}", "size": {})", ptr, size), tid);
}
std::string free_call(uint64_t ts_ms, uint64_t ptr, uint32_t tid = 1) {
  return call("cudaFree", ts_ms, 0, fmt::format(R"("ptr": "0x{:x}")", ptr), tid);
}

std::unique_ptr<reader::Trace> read(const std::string& text) {
  auto r = reader::read_jsonl_text(text, "trackers.jsonl");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok() || r->size() != 1) {
    ADD_FAILURE() << "expected one process";
    return nullptr;
  }
  return std::move(r->front());
}

TEST(Trackers, PassReachesTrackersInOrderAndFinishesInOrder) {
  auto trace = read(process_line() + call("cudaDeviceSynchronize", 1000, 0) + call("cudaDeviceSynchronize", 1001, 0));
  ASSERT_TRUE(trace);
  struct Recorder {
    std::string name;
    std::string* log;
    void on_event(const reader::Event& e, const ApiView&) { *log += fmt::format("{}@{} ", name, e.ts_ns / kMs); }
    void finish(ProcessFacts&) { *log += name + ".finish "; }
  };
  std::string log;
  Recorder a{"a", &log}, b{"b", &log};
  ProcessFacts f;
  run_pass(*trace, ApiViews(*trace), f, a, b);
  EXPECT_EQ(log, "a@1000 b@1000 a@1001 b@1001 a.finish b.finish ");
}

TEST(Trackers, StepDetectorFindsTheFirstLayerRunAgainAfterAnother) {
  StepDetector s;
  s.on_layer(7, 10);
  s.on_layer(7, 11);  // the same layer again (forward and backward of one layer): not a step
  EXPECT_FALSE(s.found());
  s.on_layer(9, 12);
  s.on_layer(9, 13);
  EXPECT_FALSE(s.found());
  s.on_layer(7, 14);
  EXPECT_TRUE(s.found());
  EXPECT_EQ(s.second_pass_ns(), 14u);
  s.on_layer(9, 15);
  s.on_layer(7, 16);  // found once: later steps do not move it
  EXPECT_EQ(s.second_pass_ns(), 14u);
}

TEST(Trackers, StepDetectorFindsEveryStepStart) {
  StepDetector s;
  s.on_layer(7, 10);  // step 1
  s.on_layer(9, 11);
  s.on_layer(7, 20);  // step 2
  s.on_layer(7, 21);  // the first layer again, nothing else between: the same step
  s.on_layer(9, 22);
  s.on_layer(8, 23);
  s.on_layer(7, 30);  // step 3
  EXPECT_EQ(s.count(), 3u);
  EXPECT_EQ(s.starts(), (std::vector<uint64_t>{10, 20, 30}));
  EXPECT_EQ(s.second_pass_ns(), 20u);
}

TEST(Trackers, CallsCountsPerApiTheBusiestDeviceAndTheLastCalls) {
  std::string text = process_line();
  for (int i = 0; i < 10; ++i) text += call("cudaDeviceSynchronize", 1000 + uint64_t(i), i == 9 ? 4 : 0, "", 7, 2000);
  text += call("cudaGetLastError", 1020, 0);
  auto trace = read(text);
  ASSERT_TRUE(trace);
  CallsTracker calls(*trace);
  ProcessFacts f;
  run_pass(*trace, ApiViews(*trace), f, calls);
  EXPECT_EQ(f.events, 11u);
  EXPECT_EQ(f.calls_by_api["cudaDeviceSynchronize"], 10u);
  EXPECT_EQ(f.time_by_api["cudaDeviceSynchronize"], 20000u);
  EXPECT_EQ(f.calls_by_api["cudaGetLastError"], 1u);
  EXPECT_EQ(f.device, 0);
  ASSERT_EQ(f.last_calls.size(), 8u);
  EXPECT_EQ(f.last_calls[6], "cudaDeviceSynchronize ret=4 tid=7");
  EXPECT_EQ(f.last_calls[7], "cudaGetLastError ret=0 tid=1");
}

// Runs the trackers memory depends on, and memory.
ProcessFacts memory_facts(const reader::Trace& trace) {
  FactOptions options;
  SearchesTracker searches(trace);
  WarmupTracker warmup(trace, searches, options);
  MemoryTracker memory(trace, searches, warmup);
  ProcessFacts f;
  run_pass(trace, ApiViews(trace), f, searches, warmup, memory);
  return f;
}

TEST(Trackers, MemoryFollowsAnOutOfMemoryFailureThroughItsRetry) {
  std::string text = process_line();
  text += malloc_call(1000, 0x1000, 1 * kGiB);
  text += malloc_call(1001, 0x9000, 2 * kGiB);
  text += malloc_call(1002, 0, 4 * kGiB, 2);  // out of memory with 3 GiB live
  text += free_call(1003, 0x1000);            // the caching allocator frees its cache...
  text += malloc_call(1004, 0, 4 * kGiB, 2);  // ...and asks again: the retry fails too
  text += free_call(1005, 0x9000);
  text += malloc_call(1006, 0x2000, 4 * kGiB);  // the thread's next allocation, of that size, works
  text += malloc_call(1007, 0x3000, 8 * kGiB, 2, 2);  // another thread fails; nothing follows
  auto trace = read(text);
  ASSERT_TRUE(trace);
  ProcessFacts f = memory_facts(*trace);

  ASSERT_EQ(f.memory.count(0), 1u);
  const DeviceMemory& m = f.memory.at(0);
  EXPECT_EQ(m.allocations, 3u);
  EXPECT_EQ(m.allocated, 7 * kGiB);
  EXPECT_EQ(m.live, 4 * kGiB);
  EXPECT_EQ(m.peak, 4 * kGiB);
  EXPECT_EQ(m.total_mem, 80 * kGiB);

  ASSERT_EQ(f.ooms.size(), 3u);
  const OomEvent& first = f.ooms[0];
  EXPECT_EQ(first.requested, 4 * kGiB);
  EXPECT_EQ(first.live, 3 * kGiB);
  ASSERT_EQ(first.largest.size(), 2u);
  EXPECT_EQ(first.largest[0].size, 2 * kGiB);  // the largest first
  EXPECT_EQ(first.largest[0].ptr, 0x9000u);
  EXPECT_FALSE(first.is_retry);
  EXPECT_FALSE(first.retried_ok) << "its own retry failed";
  EXPECT_TRUE(first.continued);
  EXPECT_EQ(first.calls_after, 5u);
  const OomEvent& retry = f.ooms[1];
  EXPECT_TRUE(retry.is_retry);
  EXPECT_EQ(retry.frees_before, 1);
  EXPECT_EQ(retry.freed_before, 1 * kGiB);
  EXPECT_TRUE(retry.retried_ok);
  EXPECT_EQ(retry.live, 2 * kGiB);
  const OomEvent& other = f.ooms[2];
  EXPECT_EQ(other.tid, 2u);
  EXPECT_FALSE(other.retried_ok);
  EXPECT_FALSE(other.continued) << "nothing ran after it";
  EXPECT_EQ(other.calls_after, 0u);
}

TEST(Trackers, AnOutOfMemoryFailureIsContinuedByCudnnWorkThatRan) {
  auto conv = [](uint64_t ts, int ret) {
    return call("cudnnConvolutionForward", ts, ret, R"("algo": 1, "problem_hash": "0xabc")");
  };
  std::string text = process_line();
  text += malloc_call(1000, 0, 4 * kGiB, 2);
  text += conv(1001, 3000);  // failed: not work that ran
  text += call("cudaDeviceSynchronize", 1002, 0);
  auto stopped = read(text);
  ASSERT_TRUE(stopped);
  ProcessFacts f = memory_facts(*stopped);
  ASSERT_EQ(f.ooms.size(), 1u);
  EXPECT_FALSE(f.ooms[0].continued);
  EXPECT_EQ(f.ooms[0].calls_after, 2u);

  auto went_on = read(text + conv(1003, 0));
  ASSERT_TRUE(went_on);
  f = memory_facts(*went_on);
  ASSERT_EQ(f.ooms.size(), 1u);
  EXPECT_TRUE(f.ooms[0].continued);
  EXPECT_FALSE(f.ooms[0].retried_ok);
}

TEST(Trackers, ChurnCountsAllocationsAfterWarmUpButNotTheFlushAfterAFailure) {
  // The span is 1000..2000 ms: warm-up is its first fifth, up to 1200 ms.
  std::string text = process_line(2000 * kMs);
  text += malloc_call(1000, 0x1000, kGiB);  // warm-up
  text += free_call(1010, 0x1000);
  text += malloc_call(1500, 0x2000, kGiB);  // steady state: churn
  text += free_call(1510, 0x2000);
  text += malloc_call(1600, 0, 64 * kGiB, 2);  // out of memory...
  text += malloc_call(1601, 0x3000, kGiB);  // ...the next allocation ends the flush (not churn)...
  text += free_call(1700, 0x3000);          // ...and what follows is churn again
  text += call("cudaDeviceSynchronize", 2000, 0);
  auto trace = read(text);
  ASSERT_TRUE(trace);
  ProcessFacts f = memory_facts(*trace);
  EXPECT_EQ(f.steady_allocs, 1u);
  EXPECT_EQ(f.steady_frees, 2u);
  EXPECT_EQ(f.steady_alloc_bytes, kGiB);
}

std::string conv_run(uint64_t ts_ms, const char* hash, const std::string& api = "cudnnConvolutionForward",
                     const std::string& more = "") {
  return call(api, ts_ms, 0,
              fmt::format(R"("algo": 1, "problem": "conv_fwd {}", "problem_hash": "{}"{})", hash, hash, more));
}

TEST(Trackers, WarmupEndsWhereTheSecondStepBeginsAndChurnCountsFromThere) {
  // The span is 1000..2000 ms (the first fifth ends at 1200 ms); layer A runs again after B at 1100 ms.
  std::string text = process_line(2000 * kMs);
  text += conv_run(1000, "0xa1");
  text += conv_run(1010, "0xb2");
  text += malloc_call(1050, 0x1000, kGiB);  // warm-up: the first step
  text += free_call(1060, 0x1000);
  text += conv_run(1100, "0xa1");           // the second step begins
  text += malloc_call(1110, 0x2000, kGiB);  // steady state, though still in the first fifth
  text += free_call(1120, 0x2000);
  text += malloc_call(1500, 0x3000, kGiB);
  text += free_call(1510, 0x3000);
  text += call("cudaDeviceSynchronize", 2000, 0, "", 1, 0);
  auto trace = read(text);
  ASSERT_TRUE(trace);
  ProcessFacts f = gather_facts(*trace, FactOptions{});
  EXPECT_EQ(f.second_pass_ns, 1100 * kMs);
  EXPECT_EQ(f.warmup_end_ns, 1100 * kMs);
  EXPECT_EQ(f.steady_allocs, 2u);
  EXPECT_EQ(f.steady_frees, 2u);
}

TEST(Trackers, TheCallThatBeginsTheSecondStepIsNotItsChurn) {
  // A call that both runs a problem and allocates (flags as a hand-written trace may give them):
  // churn counts from the calls after the one that showed the second step.
  uint64_t flags = trace::kApiDeviceAlloc | trace::kApiLegacyConvExec;
  std::string text = process_line(2000 * kMs);
  text += fmt::format(R"({{"type": "api", "pid": {}, "name": "allocAndRun", "flags": {}, )"
                      R"("fields": "ptr:p,size:u,algo:i,problem:s,problem_hash:p"}})"
                      "\n",
                      kPid, flags);
  text += conv_run(1000, "0xa1");
  text += conv_run(1010, "0xb2");
  text += conv_run(1100, "0xa1", "allocAndRun", R"(, "ptr": "0x1000", "size": 4096)");
  text += malloc_call(1110, 0x2000, kGiB);
  text += call("cudaDeviceSynchronize", 2000, 0, "", 1, 0);
  auto trace = read(text);
  ASSERT_TRUE(trace);
  ProcessFacts f = gather_facts(*trace, FactOptions{});
  EXPECT_EQ(f.second_pass_ns, 1100 * kMs);
  EXPECT_EQ(f.steady_allocs, 1u);
  EXPECT_EQ(f.steady_alloc_bytes, kGiB);
}

// cudnn.benchmark off through the backend API (PyTorch's heuristic path): the operation graph
// finalized, the heuristics' first plan built and run; later steps run the cached plan.
std::string heuristic_selection(uint64_t ts_ms, const char* hash, int64_t plan, uint32_t tid = 1) {
  std::string problem = fmt::format(R"("problem": "conv_fwd {}", "problem_hash": "{}")", hash, hash);
  return call("cudnnBackendFinalize", ts_ms, 0, fmt::format(R"("desc": {}, "kind": 15, {})", plan + 1000, problem),
              tid) +
         call("cudnnBackendFinalize", ts_ms, 0,
              fmt::format(R"("desc": {}, "kind": 5, "engine": 7, "knobs": "k=1", {})", plan, problem), tid) +
         call("cudnnBackendExecute", ts_ms + 1, 0,
              fmt::format(R"("plan": {}, "engine": 7, "knobs": "k=1", {})", plan, problem), tid);
}
std::string backend_run(uint64_t ts_ms, const char* hash, int64_t plan, uint32_t tid = 1) {
  return call("cudnnBackendExecute", ts_ms, 0,
              fmt::format(R"("plan": {}, "engine": 7, "knobs": "k=1", "problem": "conv_fwd {}", "problem_hash": "{}")",
                          plan, hash, hash),
              tid);
}

TEST(Trackers, BenchmarkOffStepsBeginAtTheFirstLayerNotAtALayerThatRecursWithinAStep) {
  // A ResNet-like step of 100 ms: layers A, B, C, B again (a repeated block: its plan is cached),
  // D. The first step selects each new problem by heuristics; the next four run cached plans.
  // Steps begin at A: 1000 (where A's selection began), 1100, 1200, 1300, 1400 ms.
  std::string text = process_line(2000 * kMs);
  text += heuristic_selection(1000, "0xa1", 1);
  text += heuristic_selection(1010, "0xb2", 2);
  text += heuristic_selection(1020, "0xc3", 3);
  text += backend_run(1030, "0xb2", 2);
  text += heuristic_selection(1040, "0xd4", 4);
  for (uint64_t step = 1; step < 5; ++step) {
    uint64_t t = 1000 + step * 100;
    text += backend_run(t, "0xa1", 1);
    text += backend_run(t + 10, "0xb2", 2);
    text += backend_run(t + 20, "0xc3", 3);
    text += backend_run(t + 30, "0xb2", 2);
    text += backend_run(t + 40, "0xd4", 4);
  }
  text += call("cudaDeviceSynchronize", 2000, 0, "", 1, 0);
  auto trace = read(text);
  ASSERT_TRUE(trace);
  ProcessFacts f = gather_facts(*trace, FactOptions{});
  EXPECT_EQ(f.steps, 5u);
  EXPECT_EQ(f.step_starts, (std::vector<uint64_t>{1000 * kMs, 1100 * kMs, 1200 * kMs, 1300 * kMs, 1400 * kMs}));
  EXPECT_EQ(f.second_pass_ns, 1100 * kMs);
  // Each selection is a heuristic one that chose the plan it ran.
  ASSERT_EQ(f.searches.size(), 4u);
  for (const auto& s : f.searches) EXPECT_FALSE(s.benchmark()) << s.problem;
}

TEST(Trackers, BenchmarkOffStepsWithTheBackwardOnItsOwnThread) {
  // As PyTorch runs them: the forward's convolutions on the main thread (1), the backward's on
  // autograd's thread (2), each thread's last selection left open until its next step.
  std::string text = process_line(2000 * kMs);
  text += heuristic_selection(1000, "0xa1", 1);
  text += heuristic_selection(1010, "0xb2", 2);
  text += heuristic_selection(1020, "0xb3", 3, 2);
  text += heuristic_selection(1030, "0xa4", 4, 2);
  for (uint64_t step = 1; step < 4; ++step) {
    uint64_t t = 1000 + step * 100;
    text += backend_run(t, "0xa1", 1);
    text += backend_run(t + 10, "0xb2", 2);
    text += backend_run(t + 20, "0xb3", 3, 2);
    text += backend_run(t + 30, "0xa4", 4, 2);
  }
  text += call("cudaDeviceSynchronize", 2000, 0, "", 1, 0);
  auto trace = read(text);
  ASSERT_TRUE(trace);
  ProcessFacts f = gather_facts(*trace, FactOptions{});
  EXPECT_EQ(f.step_starts, (std::vector<uint64_t>{1000 * kMs, 1100 * kMs, 1200 * kMs, 1300 * kMs}));
}

TEST(Trackers, WarmupEndsAfterTheFirstPartOfTheRunWithoutSteps) {
  auto trace = read(process_line(2000 * kMs) + call("cudaDeviceSynchronize", 1000, 0) +
                    call("cudaDeviceSynchronize", 2000, 0, "", 1, 0));
  ASSERT_TRUE(trace);
  FactOptions options;
  options.warmup_fraction = 0.5;
  SearchesTracker searches(*trace);
  WarmupTracker warmup(*trace, searches, options);
  ProcessFacts f;
  run_pass(*trace, ApiViews(*trace), f, searches, warmup);
  EXPECT_EQ(f.first_ns, 1000 * kMs);
  EXPECT_EQ(f.last_ns, 2000 * kMs);
  EXPECT_EQ(f.second_pass_ns, 0u);
  EXPECT_EQ(f.warmup_end_ns, 1500 * kMs);
  EXPECT_TRUE(warmup.past_fraction(1500 * kMs));
  EXPECT_FALSE(warmup.past_fraction(1499 * kMs));
  EXPECT_FALSE(warmup.past_second_pass(2000 * kMs));
}

TEST(Trackers, SynchronizationStacksAreSampledEvenlyInBoundedMemory) {
  // 10,000 synchronizations: the tracker keeps 4,096 stacks at most, halving what it holds each
  // time it fills; what is left is one in every 4, from the whole run.
  std::string text = process_line(2000 * kMs);
  for (uint64_t i = 0; i < 10000; ++i) {
    text += fmt::format(R"({{"type": "call", "api": "cudaDeviceSynchronize", "ret": 0, "ts_ns": {}, "dur_ns": 10, )"
                        R"("pid": {}, "tid": 1, "device": 0}})"
                        "\n",
                        1000 * kMs + i * 1000, kPid);
  }
  auto trace = read(text);
  ASSERT_TRUE(trace);
  ProcessFacts f = gather_facts(*trace, FactOptions{});
  EXPECT_EQ(f.sync_calls, 10000u);
  EXPECT_EQ(f.sync_stack_stride, 4u);
  EXPECT_EQ(f.sync_stacks.size(), 2500u);
  EXPECT_LE(f.sync_stacks.size(), SyncTracker::kMaxStacks);
}

TEST(Trackers, ACallTheMemoryTrackerTakesIsNotASynchronization) {
  // An API that both frees memory and synchronizes: its successful calls are memory's, its
  // failed ones (no memory freed) are synchronizations.
  uint64_t flags = trace::kApiDeviceFree | trace::kApiSync;
  std::string text = process_line();
  text += fmt::format(R"({{"type": "api", "pid": {}, "name": "freeAndSync", "flags": {}, "fields": "ptr:p"}})"
                      "\n",
                      kPid, flags);
  text += malloc_call(1000, 0x1000, kGiB);
  text += call("freeAndSync", 1001, 0, R"("ptr": "0x1000")", 1, 7000);
  text += call("freeAndSync", 1002, 1, R"("ptr": "0x2000")", 1, 5000);
  text += call("cudaStreamSynchronize", 1003, 0, "", 1, 3000);
  auto trace = read(text);
  ASSERT_TRUE(trace);
  SearchesTracker searches(*trace);
  FactOptions options;
  WarmupTracker warmup(*trace, searches, options);
  MemoryTracker memory(*trace, searches, warmup);
  SyncTracker syncs(*trace, searches);
  ProcessFacts f;
  run_pass(*trace, ApiViews(*trace), f, searches, warmup, memory, syncs);
  EXPECT_EQ(f.memory.at(0).live, 0u) << "the successful call freed the allocation";
  EXPECT_EQ(f.sync_calls, 2u);
  EXPECT_EQ(f.sync_ns["freeAndSync"], 5000u);
  EXPECT_EQ(f.sync_ns["cudaStreamSynchronize"], 3000u);
}

TEST(Trackers, PlanUseFollowsWhichAlgorithmEachProblemRanWith) {
  std::string text = process_line();
  auto conv = [](uint64_t ts, int algo, const char* hash, int ret = 0) {
    return call("cudnnConvolutionForward", ts, ret, fmt::format(R"("algo": {}, "problem": "conv_fwd {}", "problem_hash": "{}")", algo, hash, hash));
  };
  text += conv(1000, 1, "0xabc");
  text += conv(1001, 1, "0xabc");
  text += conv(1002, 6, "0xdef");
  text += conv(1003, 0, "0xabc");
  text += conv(1004, 0, "0xabc", 3000);  // failed: not a use
  text += conv(1005, 1, "0xabc");
  auto trace = read(text);
  ASSERT_TRUE(trace);
  SearchesTracker searches(*trace);
  PlanUseTracker plans(*trace, searches);
  ProcessFacts f;
  run_pass(*trace, ApiViews(*trace), f, searches, plans);
  ASSERT_EQ(f.problems.count(0xabc), 1u);
  const ProblemUse& p = f.problems.at(0xabc);
  ASSERT_EQ(p.plans.size(), 2u);
  EXPECT_EQ(p.plans[0].plan, "algo 1");
  EXPECT_EQ(p.plans[0].executions, 3u);
  EXPECT_EQ(p.plans[0].first_ns, 1000 * kMs);
  EXPECT_EQ(p.plans[0].last_ns, 1005 * kMs);
  EXPECT_EQ(p.plans[1].plan, "algo 0");
  EXPECT_EQ(p.plans[1].executions, 1u);
  ASSERT_EQ(f.problems.count(0xdef), 1u);
  EXPECT_EQ(f.problems.at(0xdef).plans.at(0).engine, 6);
}

TEST(Trackers, CudnnFailuresAreAggregatedAndInjectedOnesLeftOut) {
  std::string text = process_line();
  text += R"({"type": "fault_rule", "pid": 4242, "index": 0, "name": "rule1", "rule": "cudnn-legacy-exec:EXECUTION_FAILED"})"
          "\n";
  auto conv = [](uint64_t ts, int ret, const char* hash, const std::string& more = "") {
    return call("cudnnConvolutionForward", ts, ret, fmt::format(R"("algo": 1, "problem": "conv_fwd {}", "problem_hash": "{}"{})", hash, hash, more));
  };
  text += conv(1000, 3000, "0xabc");
  text += conv(1001, 3000, "0xabc");
  text += conv(1002, 3000, "0xdef");
  text += conv(1003, 5000, "0xabc", R"(, "injected": "rule1")");
  auto trace = read(text);
  ASSERT_TRUE(trace);
  SearchesTracker searches(*trace);
  CudnnFailureTracker failures(*trace, searches);
  ProcessFacts f;
  run_pass(*trace, ApiViews(*trace), f, searches, failures);
  ASSERT_EQ(f.cudnn_failures.size(), 2u);
  const CudnnFailure& a = f.cudnn_failures[0].problem_hash == 0xabc ? f.cudnn_failures[0] : f.cudnn_failures[1];
  EXPECT_EQ(a.api, "cudnnConvolutionForward");
  EXPECT_EQ(a.status, 3000);
  EXPECT_EQ(a.count, 2u);
  EXPECT_EQ(a.first_ns, 1000 * kMs);
  EXPECT_EQ(a.last_ns, 1001 * kMs);
  EXPECT_FALSE(a.routine);
}

TEST(Trackers, FaultsTellWhatTheApplicationDidAfterEachInjectedFailure) {
  std::string text = process_line();
  text += R"({"type": "fault_rule", "pid": 4242, "index": 0, "name": "rule1", "rule": "alloc:OOM", "injected": 3})"
          "\n";
  auto injected = [](uint64_t ts, uint64_t size, uint32_t tid) {
    return call("cudaMalloc", ts, 2, fmt::format(R"("ptr": "0x0", "size": {}, "injected": "rule1")", size), tid);
  };
  text += malloc_call(1000, 0x1000, kGiB, 0, 1);
  text += injected(1001, 4 * kGiB, 1);
  text += free_call(1002, 0x1000, 1);
  text += malloc_call(1003, 0x2000, 4 * kGiB, 0, 1);  // thread 1: freed memory and retried
  text += injected(1004, 4 * kGiB, 2);
  text += malloc_call(1005, 0x3000, 2 * kGiB, 0, 2);  // thread 2: half of it
  text += injected(1006, 4 * kGiB, 3);                // thread 3: nothing follows
  auto trace = read(text);
  ASSERT_TRUE(trace);
  FaultTracker faults(*trace);
  ProcessFacts f;
  run_pass(*trace, ApiViews(*trace), f, faults);
  ASSERT_EQ(f.injected.size(), 3u);
  EXPECT_EQ(f.injected[0].outcome, "freed memory and retried");
  EXPECT_TRUE(f.injected[0].next_ok);
  EXPECT_EQ(f.injected[1].outcome, "retried with a smaller size");
  EXPECT_EQ(f.injected[2].outcome, "stopped");
  ASSERT_EQ(f.fault_rules.size(), 1u);
  EXPECT_EQ(f.fault_rules[0].name, "rule1");
  EXPECT_EQ(f.fault_rules[0].injected, 3u);
  EXPECT_EQ(f.fault_rules[0].outcomes["stopped"], 1u);
  EXPECT_EQ(f.fault_rules[0].outcomes["freed memory and retried"], 1u);
}

TEST(Trackers, GatherFactsRunsEveryTracker) {
  std::string text = process_line(2000 * kMs);
  text += malloc_call(1000, 0x1000, kGiB);
  text += call("cudaStreamSynchronize", 1100, 0, "", 1, 4000);
  text += call("cudnnConvolutionForward", 1200, 0, R"("algo": 2, "problem": "conv_fwd 0x77", "problem_hash": "0x77")");
  text += call("cudnnConvolutionForward", 1300, 3000, R"("algo": 2, "problem": "conv_fwd 0x77", "problem_hash": "0x77")");
  text += malloc_call(1500, 0x2000, kGiB);
  text += free_call(1600, 0x2000);
  text += call("cudaDeviceSynchronize", 2000, 0, "", 1, 0);
  auto trace = read(text);
  ASSERT_TRUE(trace);
  ProcessFacts f = gather_facts(*trace, FactOptions{});
  EXPECT_EQ(f.pid, kPid);
  EXPECT_EQ(f.host, "node0");
  EXPECT_EQ(f.events, 7u);
  EXPECT_EQ(f.first_ns, 1000 * kMs);
  EXPECT_EQ(f.warmup_end_ns, 1200 * kMs);
  EXPECT_EQ(f.memory.at(0).peak, 2 * kGiB);
  EXPECT_EQ(f.steady_allocs, 1u);
  EXPECT_EQ(f.steady_frees, 1u);
  EXPECT_EQ(f.sync_calls, 2u);
  EXPECT_EQ(f.sync_ns["cudaStreamSynchronize"], 4000u);
  EXPECT_EQ(f.cudnn_failures.size(), 1u);
  ASSERT_EQ(f.problems.count(0x77), 1u);
  EXPECT_EQ(f.problems.at(0x77).plans.at(0).plan, "algo 2");
  EXPECT_TRUE(f.injected.empty());
  EXPECT_EQ(f.last_calls.size(), 7u);
}

}  // namespace
}  // namespace cuprobe::analysis
