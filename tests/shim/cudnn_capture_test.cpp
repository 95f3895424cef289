// cuDNN capture against the cuDNN test double (and the real libcudnn.so.9 for descriptor
// calls, which work without a GPU): backend plans, executions and searches rebuilt from the
// cudnn-frontend call sequence, heuristic selection, the legacy API, bounded memory under a
// descriptor storm, and failures.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "support/run.h"
#include "trace/reader.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// "search conv_fwd batch=8 mode=benchmark winner_engine=3 candidates=7" lines of frontend_search.
struct ProgramSearch {
  std::string kind;
  int batch;
  std::string mode;
  int winner;
  int candidates;
};

std::vector<ProgramSearch> program_searches(const std::string& out) {
  std::vector<ProgramSearch> v;
  std::regex re(R"(search (\w+) batch=(\d+) mode=(\w+) winner_engine=(-?\d+) candidates=(\d+))");
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, re)) {
      v.push_back(ProgramSearch{m[1], std::stoi(m[2]), m[3], std::stoi(m[4]), std::stoi(m[5])});
    }
  }
  return v;
}

int batch_of(const std::string& problem) {
  std::smatch m;
  std::regex re(R"(^\w+ \w+\[(\d+),)");
  return std::regex_search(problem, m, re) ? std::stoi(m[1]) : -1;
}

std::string kind_of(const std::string& problem) { return problem.substr(0, problem.find(' ')); }

std::map<std::string, uint64_t> counts_by_api(const std::vector<json>& lines) {
  std::map<std::string, uint64_t> m;
  for (const auto& c : of_type(lines, "count")) m[c["api"]] += c["calls"].get<uint64_t>();
  return m;
}

TEST(CudnnCapture, BenchmarkSearchesAreRebuiltFromTheFrontendSequence) {
  std::string dir = fresh_dir("cudnn-bench");
  RunResult r = record(dir, {program("frontend_search"), "--benchmark", "--bwd", "--shapes", "2"},
                       {{"FAKECUDNN_UNSUPPORTED_ENGINES", "5"}});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  auto expected = program_searches(r.out);
  ASSERT_EQ(expected.size(), 6u) << r.out;
  auto lines = dump(dir);
  auto searches = of_type(lines, "search");
  ASSERT_EQ(searches.size(), 6u);
  std::set<std::string> hashes;
  for (const auto& s : searches) {
    hashes.insert(s["problem_hash"]);
    EXPECT_EQ(s["mode"], "benchmark");
    EXPECT_TRUE(s["complete"].get<bool>()) << s.dump();
    std::string problem = s["problem"];
    bool found = false;
    for (const auto& e : expected) {
      if (e.kind != kind_of(problem) || e.batch != batch_of(problem)) continue;
      found = true;
      EXPECT_EQ(s["chosen"]["engine"], e.winner) << problem;
      // Candidates: every plan built, the rejected ones (engine 5) included.
      EXPECT_EQ(s["candidates"].size(), size_t(e.candidates) + size_t(s["plans_rejected"].get<int>()));
    }
    EXPECT_TRUE(found) << "no program search for " << problem;
    EXPECT_GE(s["plans_rejected"].get<int>(), 1);
    // The winner was the fastest timed candidate, and every candidate that built was timed.
    double best = 1e9;
    uint64_t largest_workspace = 0;
    for (const auto& c : s["candidates"]) {
      if (c["build_status"] != 0) {
        EXPECT_EQ(c["build_status"], 3000);  // CUDNN_STATUS_NOT_SUPPORTED
        EXPECT_EQ(c["engine"], 5);
        continue;
      }
      ASSERT_TRUE(c.contains("time_ms")) << c.dump();
      best = std::min(best, c["time_ms"].get<double>());
      largest_workspace = std::max(largest_workspace, c["workspace"].get<uint64_t>());
      EXPECT_NE(c["knobs"].get<std::string>().find("tile_size="), std::string::npos) << c.dump();
    }
    EXPECT_DOUBLE_EQ(s["chosen"]["time_ms"].get<double>(), best);
    EXPECT_EQ(s["search_workspace"], largest_workspace);
    EXPECT_GT(s["wall_ns"].get<uint64_t>(), 0u);
  }
  EXPECT_EQ(hashes.size(), 6u);  // one search per distinct (problem, operation)

  // The forward problem's signature, as documented.
  bool fwd = false;
  for (const auto& s : searches) {
    if (s["problem"] == "conv_fwd x[8,64,16,16]f32 nchw w[64,64,3,3]f32 nchw pad[1,1] str[1,1] dil[1,1] g1 "
                        "acc:f32 -> y[8,64,16,16]f32 nchw") {
      fwd = true;
    }
  }
  EXPECT_TRUE(fwd);

  // Every execution names its plan's engine and knobs; the winner's runs follow the search.
  auto execs = of_type(lines, "call", "cudnnBackendExecute");
  ASSERT_FALSE(execs.empty());
  std::map<uint64_t, json> plans;
  for (const auto& f : of_type(lines, "call", "cudnnBackendFinalize")) {
    if (f["kind"] == 5) plans[f["desc"].get<uint64_t>()] = f;
  }
  for (const auto& e : execs) {
    auto it = plans.find(e["plan"].get<uint64_t>());
    ASSERT_NE(it, plans.end()) << e.dump();
    EXPECT_EQ(e["engine"], it->second["engine"]);
    EXPECT_EQ(e["knobs"], it->second["knobs"]);
    EXPECT_EQ(e["problem"], it->second["problem"]);
    EXPECT_TRUE(e.contains("stream"));
    EXPECT_EQ(e["device"], 0);
  }

  auto procs = of_type(lines, "process");
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0]["cudnn_version"], 91900);
  EXPECT_EQ(procs[0]["cudnn_cudart_version"], 13000);
  ASSERT_EQ(procs[0]["cudnn_handles"].size(), 1u);
  EXPECT_EQ(procs[0]["cudnn_handles"][0]["device"], 0);
  EXPECT_EQ(procs[0]["stats"]["mirror_full"], 0);
  // Descriptor calls are counted, not recorded one by one.
  auto counts = counts_by_api(lines);
  EXPECT_GT(counts["cudnnBackendCreateDescriptor"], 100u);
  EXPECT_GT(counts["cudnnBackendSetAttribute"], counts["cudnnBackendCreateDescriptor"]);
  EXPECT_EQ(counts["cudnnBackendCreateDescriptor"], counts["cudnnBackendDestroyDescriptor"]);
  EXPECT_TRUE(of_type(lines, "call", "cudnnBackendSetAttribute").empty());
}

TEST(CudnnCapture, HeuristicSelectionTakesTheFirstPlanThatWorks) {
  std::string dir = fresh_dir("cudnn-heur");
  // Heuristics order the engines 7, 3, 0, ...: with 7 unsupported, 3 must win.
  RunResult r = record(dir, {program("frontend_search")}, {{"FAKECUDNN_UNSUPPORTED_ENGINES", "7"}});
  ASSERT_EQ(r.status, 0) << r.err;
  auto expected = program_searches(r.out);
  ASSERT_EQ(expected.size(), 1u) << r.out;
  EXPECT_EQ(expected[0].winner, 3);
  auto searches = of_type(dump(dir), "search");
  ASSERT_EQ(searches.size(), 1u);
  EXPECT_EQ(searches[0]["mode"], "heuristic");
  EXPECT_TRUE(searches[0]["complete"].get<bool>());
  EXPECT_EQ(searches[0]["chosen"]["engine"], 3);
  EXPECT_EQ(searches[0]["candidates"][0]["engine"], 7);
  EXPECT_EQ(searches[0]["candidates"][0]["build_status"], 3000);
}

TEST(CudnnCapture, PlansFromCopiedConfigurationsKeepTheirProblem) {
  // cudnn-frontend rebuilds configurations from engines it fetches (seen with PyTorch 2.11 in
  // heuristic mode): the plans must still name their problem and engine.
  std::string dir = fresh_dir("cudnn-copy");
  RunResult r = record(dir, {program("frontend_search"), "--copy-configs", "--bwd"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = dump(dir);
  auto execs = of_type(lines, "call", "cudnnBackendExecute");
  ASSERT_FALSE(execs.empty());
  for (const auto& e : execs) {
    EXPECT_EQ(e["problem"].get<std::string>().rfind("conv_", 0), 0u) << e.dump();
    EXPECT_GE(e["engine"].get<int>(), 0);
    EXPECT_EQ(e["knobs"], "") << e.dump();  // the copies carry no knob choices
  }
  auto searches = of_type(lines, "search");
  ASSERT_EQ(searches.size(), 3u);
  for (const auto& s : searches) EXPECT_TRUE(s["complete"].get<bool>()) << s.dump();
}

TEST(CudnnCapture, PlansBuiltAfterTheirGraphWasDestroyedKeepTheirProblem) {
  // PyTorch's heuristic path destroys the operation graph (and the heuristics) before it builds
  // plans from the configurations; the heuristic and benchmark selections must both still
  // name their problem, with and without copied configurations.
  for (std::vector<std::string> extra : {std::vector<std::string>{}, {"--benchmark"}, {"--copy-configs"}}) {
    std::string dir = fresh_dir("cudnn-graph-dies");
    std::vector<std::string> cmd = {program("frontend_search"), "--graph-dies-early", "--bwd"};
    cmd.insert(cmd.end(), extra.begin(), extra.end());
    RunResult r = record(dir, cmd);
    ASSERT_EQ(r.status, 0) << r.err;
    auto lines = dump(dir);
    auto execs = of_type(lines, "call", "cudnnBackendExecute");
    ASSERT_FALSE(execs.empty());
    std::set<std::string> problems;
    for (const auto& e : execs) {
      EXPECT_EQ(e["problem"].get<std::string>().rfind("conv_", 0), 0u) << e.dump();
      EXPECT_GE(e["engine"].get<int>(), 0);
      problems.insert(e["problem"].get<std::string>());
    }
    EXPECT_EQ(problems.size(), 3u);  // forward, backward data, backward filter
    for (const auto& s : of_type(lines, "search")) EXPECT_TRUE(s["complete"].get<bool>()) << s.dump();
  }
}

TEST(CudnnCapture, TheSameProblemSearchedAgainIsASecondRecord) {
  std::string dir = fresh_dir("cudnn-repeat");
  RunResult r = record(dir, {program("frontend_search"), "--benchmark", "--repeat", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto searches = of_type(dump(dir), "search");
  ASSERT_EQ(searches.size(), 3u);
  EXPECT_EQ(searches[0]["problem_hash"], searches[1]["problem_hash"]);
  EXPECT_EQ(searches[1]["problem_hash"], searches[2]["problem_hash"]);
}

TEST(CudnnCapture, ThreadsSearchOnTheirOwn) {
  std::string dir = fresh_dir("cudnn-threads");
  RunResult r = record(dir, {program("frontend_search"), "--benchmark", "--threads", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto searches = of_type(dump(dir), "search");
  ASSERT_EQ(searches.size(), 3u);
  std::set<uint64_t> tids;
  for (const auto& s : searches) {
    tids.insert(s["tid"].get<uint64_t>());
    EXPECT_TRUE(s["complete"].get<bool>());
  }
  EXPECT_EQ(tids.size(), 3u);
}

TEST(CudnnCapture, LegacyApiQueriesSearchesAndExecutions) {
  std::string dir = fresh_dir("cudnn-legacy");
  RunResult r = record(dir, {program("legacy_conv")});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  std::map<std::string, int> chosen;  // direction -> algo the program ran
  std::regex re(R"(legacy (\w+) algo=(\d+))");
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, re)) chosen[m[1]] = std::stoi(m[2]);
  }
  ASSERT_EQ(chosen.size(), 3u) << r.out;
  auto lines = dump(dir);
  auto searches = of_type(lines, "search");
  int benchmark = 0, heuristic = 0;
  for (const auto& s : searches) {
    if (s["mode"] == "benchmark") {
      ++benchmark;
      EXPECT_TRUE(s["complete"].get<bool>()) << s.dump();
      EXPECT_GT(s["search_workspace"].get<uint64_t>(), 0u);  // FindEx's workspace
      EXPECT_EQ(s["chosen"]["engine"], s["candidates"][0]["engine"]) << s.dump();  // the fastest ran
    } else {
      ++heuristic;
      // Each Get*_v7 query was followed by a FindEx for the same problem before anything ran.
      EXPECT_FALSE(s["complete"].get<bool>()) << s.dump();
    }
    EXPECT_GE(s["candidates"].size(), 2u);
  }
  EXPECT_EQ(benchmark, 3);  // one FindEx per direction
  EXPECT_EQ(heuristic, 3);
  auto fwd = of_type(lines, "call", "cudnnConvolutionForward");
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_EQ(fwd[0]["algo"], chosen["fwd"]);
  EXPECT_EQ(fwd[0]["problem"],
            "conv_fwd x[8,64,16,16]f32 nchw w[64,64,3,3]f32 nchw pad[1,1] str[1,1] dil[1,1] g1 acc:f32 -> "
            "y[8,64,16,16]f32 nchw");
  EXPECT_EQ(fwd[0]["device"], 0);
  for (const char* api : {"cudnnConvolutionBackwardData", "cudnnConvolutionBackwardFilter",
                          "cudnnBatchNormalizationForwardTrainingEx", "cudnnBatchNormalizationBackwardEx",
                          "cudnnBatchNormalizationForwardInference", "cudnnPoolingForward", "cudnnRNNForward",
                          "cudnnCTCLoss_v8", "cudnnSpatialTfSamplerForward"}) {
    auto calls = of_type(lines, "call", api);
    ASSERT_EQ(calls.size(), 1u) << api;
    EXPECT_EQ(calls[0]["ret"], 0) << api;
    EXPECT_FALSE(calls[0]["problem"].get<std::string>().empty()) << api;
  }
  auto bn = of_type(lines, "call", "cudnnBatchNormalizationForwardTrainingEx")[0];
  EXPECT_EQ(bn["problem"].get<std::string>().rfind("bn_fwd_train x[", 0), 0u) << bn.dump();
  EXPECT_NE(bn["problem"].get<std::string>().find("mode:spatial_persistent ops:bn"), std::string::npos);
  auto rnn = of_type(lines, "call", "cudnnRNNForward")[0];
  EXPECT_NE(rnn["problem"].get<std::string>().find("lstm in64 hid128 layers1 unidir"), std::string::npos) << rnn.dump();
}

TEST(CudnnCapture, DescriptorStormKeepsTheMirrorBounded) {
  std::string dir = fresh_dir("cudnn-storm");
  RunResult r = record(dir, {program("descriptor_storm"), "2000000"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "done 2000000\n");
  auto lines = dump(dir);
  auto procs = of_type(lines, "process");
  ASSERT_EQ(procs.size(), 1u);
  // Two million created descriptors with at most 64 alive: a leak would exhaust the 131072
  // mirror entries and show up here.
  EXPECT_EQ(procs[0]["stats"]["mirror_full"], 0);
  auto counts = counts_by_api(lines);
  EXPECT_EQ(counts["cudnnBackendCreateDescriptor"], 2000000u);
  EXPECT_EQ(counts["cudnnBackendFinalize"], 2000000u);
  EXPECT_LT(of_type(lines, "call").size(), 100u);
  uint64_t bytes = 0;
  for (const auto& f : fs::directory_iterator(dir)) bytes += fs::file_size(f.path());
  EXPECT_LT(bytes, 8u << 20);
}

TEST(CudnnCapture, FailedExecutionsAndFinalizesAreRecorded) {
  std::string dir = fresh_dir("cudnn-fail");
  // The first execution fails: the benchmark search moves on to the next plan.
  RunResult r = record(dir, {program("frontend_search"), "--benchmark"},
                       {{"FAKECUDNN_FAIL", "cudnnBackendExecute:5000:1"}});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = dump(dir);
  auto execs = of_type(lines, "call", "cudnnBackendExecute");
  ASSERT_FALSE(execs.empty());
  EXPECT_EQ(execs[0]["ret"], 5000);
  auto searches = of_type(lines, "search");
  ASSERT_EQ(searches.size(), 1u);
  EXPECT_TRUE(searches[0]["complete"].get<bool>());
  int failed = 0;
  for (const auto& c : searches[0]["candidates"]) failed += c["exec_status"] == 5000 ? 1 : 0;
  EXPECT_EQ(failed, 1);
}

TEST(CudnnCapture, RealLibcudnnDescriptorCallsWithoutAGpu) {
  std::string prog = program("real_cudnn_descriptors");
  if (!fs::exists(prog)) GTEST_SKIP() << "no real libcudnn.so.9 at build time";
  std::string dir = fresh_dir("cudnn-real");
  RunResult r = record(dir, {prog});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  // "API STATUS" per call: successes must be counted, failures recorded as events.
  std::map<std::string, uint64_t> ok, failed;
  std::map<std::string, std::vector<int>> failures;
  std::istringstream in(r.out);
  std::string api;
  int status = 0;
  while (in >> api >> status) {
    if (status == 0) {
      ok[api]++;
    } else {
      failures[api].push_back(status);
    }
  }
  ASSERT_FALSE(ok.empty()) << r.out;
  auto lines = dump(dir);
  auto counts = counts_by_api(lines);
  for (const auto& [name, n] : ok) {
    if (name == "cudnnCreate" || name == "cudnnDestroy") continue;  // recorded, not counted
    EXPECT_EQ(counts[name], n) << name;
  }
  for (const auto& [name, statuses] : failures) {
    auto calls = of_type(lines, "call", name);
    ASSERT_EQ(calls.size(), statuses.size()) << name;
    for (size_t k = 0; k < statuses.size(); ++k) EXPECT_EQ(calls[k]["ret"], statuses[k]) << name;
  }
  auto procs = of_type(lines, "process");
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_GE(procs[0]["cudnn_version"].get<int>(), 90000);
}

// Graphs that are not convolutions (issue 33), built as cudnn-frontend 1.x builds them: each
// pointwise, reduction, matmul and RNG descriptor destroyed once its operation is built, and
// attention as a composite graph of 11 to 23 operations (more than a graph's mirror entry keeps).
// Attention is named with its tensors and attributes; pointwise modes and reduction operators are
// known; the problem is the same whether or not the auxiliary descriptors outlive the graph.
std::vector<std::string> graph_problems(const std::string& dir) {
  std::vector<std::string> texts;
  for (const auto& p : of_type(dump(dir), "problem")) texts.push_back(p["text"]);
  return texts;
}

TEST(CudnnCapture, AttentionAndOtherGraphsAreNamedWithTheirOperations) {
  const std::vector<std::string> args = {program("graph_ops"), "--sdpa", "--sdpa-bwd", "--matmul", "--causal",
                                         "--dropout", "0.1", "--seq", "64"};
  std::string dir = fresh_dir("graphs");
  RunResult r = record(dir, args);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string qkv = "q[2,8,64,64]bf16 k[2,8,64,64]bf16 v[2,8,64,64]bf16";
  std::vector<std::string> want = {
      "sdpa_fwd " + qkv + " -> o[2,8,64,64]bf16 causal dropout=0.1 stats (+12+ ops)",
      "sdpa_bwd " + qkv + " do[2,8,64,64]bf16 causal dropout=0.1 stats (+12+ ops)",
      "matmul a[1,128,512]bf16 b[1,512,2048]bf16 str[1048576,1,512] -> out[1,128,2048]f32 +pw:add +pw:relu"};
  EXPECT_EQ(graph_problems(dir), want);
  // The same graphs with their auxiliary descriptors kept: the same problems.
  std::string kept = fresh_dir("graphs-kept");
  std::vector<std::string> keep_args = args;
  keep_args.push_back("--keep-aux");
  ASSERT_EQ(record(kept, keep_args).status, 0);
  EXPECT_EQ(graph_problems(kept), want);
  // Attention without a mask or dropout, with a bias: a graph of 11 operations, every one in the
  // problem (the reductions with their operators).
  std::string plain = fresh_dir("graphs-bias");
  ASSERT_EQ(record(plain, {program("graph_ops"), "--sdpa", "--bias", "--seq", "32"}).status, 0);
  auto problems = of_type(dump(plain), "problem");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0]["text"], "sdpa_fwd q[2,8,32,64]bf16 k[2,8,32,64]bf16 v[2,8,32,64]bf16 -> o[2,8,32,64]bf16 "
                                 "bias stats (+10 ops)");
  // Its executions name the problem.
  auto runs = of_type(dump(plain), "call", "cudnnBackendExecute");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["problem"], problems[0]["text"]);
  // cuDNN's own SDPA operation (PyTorch's forward without mask or dropout on cuDNN 9.19): its
  // tensors in their roles, the statistics it writes.
  std::string native = fresh_dir("graphs-native");
  ASSERT_EQ(record(native, {program("graph_ops"), "--native", "--seq", "16"}).status, 0);
  EXPECT_EQ(graph_problems(native), (std::vector<std::string>{"sdpa_fwd q[2,8,16,64]bf16 k[2,8,16,64]bf16 "
                                                               "v[2,8,16,64]bf16 -> o[2,8,16,64]bf16 stats"}));
}

// Normalization graphs are named by their mode, with their tensors in their roles and a forward's
// phase; a graph that begins with a pointwise operation is still its norm's (issue 33: on the H100
// cudnn-frontend's norm samples read "norm_fwd a[...]", "norm_bwd" and "pw ... +norm_bwd").
TEST(CudnnCapture, NormGraphsAreNamedByTheirMode) {
  std::string dir = fresh_dir("graphs-norm");
  RunResult r = record(dir, {program("graph_ops"), "--norm", "--seq", "8"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(graph_problems(dir),
            (std::vector<std::string>{"layernorm_fwd x[16,512,1,1]bf16 nchw scale[1,512,1,1]f32 nchw "
                                      "bias[1,512,1,1]f32 nchw -> y[16,512,1,1]bf16 nchw training",
                                      "batchnorm_bwd x[4,32,8,8]f16 nchw dy[4,32,8,8]f32 nchw scale[1,32,1,1]f32 nchw "
                                      "-> dx[4,32,8,8]f16 nchw +pw:relu_bwd"}));
}

// cudnn-frontend's autotune (and its "Matmul autotuning" sample) times each plan over ten runs
// between two event records, after an untimed warm-up run. That is a benchmark search whose
// candidates have a time per run, not a process switching plans (issue 33).
TEST(CudnnCapture, AnAutotuneTimingSeveralRunsPerPlanIsASearch) {
  std::string dir = fresh_dir("autotune");
  RunResult r = record(dir, {program("frontend_search"), "--benchmark", "--iters", "10", "--steps", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto searches = of_type(dump(dir), "search");
  ASSERT_EQ(searches.size(), 1u);
  EXPECT_EQ(searches[0]["mode"], "benchmark");
  int timed = 0;
  for (const auto& c : searches[0]["candidates"]) timed += c.contains("time_ms");
  EXPECT_GE(timed, 5) << searches[0].dump();
  ASSERT_TRUE(searches[0].contains("chosen")) << searches[0].dump();
  EXPECT_EQ(searches[0]["chosen"]["engine"], program_searches(r.out).at(0).winner);
  json a = analyze_json({dir});
  for (const auto& f : a["findings"]) EXPECT_NE(f["rule"], "algo-divergence") << f.dump();
}

}  // namespace
}  // namespace cuprobe::test
