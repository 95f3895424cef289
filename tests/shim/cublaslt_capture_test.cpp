// The shim against cuBLASLt (cublaslt_hooks.h, issue 33): each matmul is recorded as a typed
// problem read back from its descriptors, the heuristics' offers with each algorithm's
// configuration and workspace, the algorithm that ran; every call reaches the library unchanged;
// `cuprobe analyze` counts one selection per problem a thread ran (PyTorch asks the heuristics at
// every matmul), and the same holds when the trace is read back from its JSON Lines dump.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "support/run.h"

namespace cuprobe::test {
namespace {

using nlohmann::json;

const char* kLinear512 = "blaslt_matmul m3072 n512 k768 a:bf16^T b:bf16 c:bf16 -> d:bf16 acc:f32 +bias";
const char* kLinear1000 = "blaslt_matmul m3072 n1000 k768 a:bf16^T b:bf16 c:bf16 -> d:bf16 acc:f32 +bias";
const char* kBmm512 = "blaslt_matmul m512 n512 k64 batch4 a:bf16 b:bf16 c:bf16 -> d:bf16 acc:f32";

TEST(CublasLtCapture, MatmulsAreProblemsWithTheAlgorithmsOfferedAndTheOneThatRan) {
  // Three Linear forwards (512 tokens twice), a batched matmul per token count, a matmul without
  // an algorithm per token count; the heuristics asked for two algorithms; a workspace limit of
  // 8 MB, which the split-K offer for 1000 tokens (12,288,000 bytes) exceeds.
  std::vector<std::string> argv = {program("lt_matmul"), "--tokens", "512,1000,512", "--batched", "4",
                                   "--no-algo", "--offers", "2", "--workspace", "8000000"};
  RunResult plain = run(argv);
  ASSERT_EQ(plain.status, 0) << plain.err;
  std::string dir = fresh_dir("cublaslt");
  // PyTorch's and cuBLASLt's own settings go into the environment record.
  RunResult r = record(dir, argv, {{"CUBLASLT_WORKSPACE_SIZE", "8192"}, {"TORCH_BLAS_PREFER_CUBLASLT", "1"}});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);  // every call reached the double with its arguments intact
  auto lines = dump(dir);
  auto procs = of_type(lines, "process");
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0]["library_versions"]["cublaslt"], "13.2.0") << procs[0];  // cublasLtGetVersion's 130200
  EXPECT_EQ(procs[0]["stats"]["missing_symbols"], 0);
  EXPECT_EQ(procs[0]["environment"]["CUBLASLT_WORKSPACE_SIZE"], "8192") << procs[0];
  EXPECT_EQ(procs[0]["environment"]["TORCH_BLAS_PREFER_CUBLASLT"], "1") << procs[0];
  for (const auto& a : of_type(lines, "api")) {
    if (a["name"].get<std::string>().rfind("cublasLt", 0) == 0) EXPECT_EQ(a["library"], "cublaslt") << a;
  }
  ASSERT_EQ(of_type(lines, "call", "cublasLtCreate").size(), 1u);

  auto heur = of_type(lines, "call", "cublasLtMatmulAlgoGetHeuristic");
  ASSERT_EQ(heur.size(), 6u);
  EXPECT_EQ(heur[0]["problem"], kLinear512);
  EXPECT_EQ(heur[0]["requested"], 2);
  EXPECT_EQ(heur[0]["returned"], 2);
  EXPECT_EQ(heur[0]["best"], 21);
  EXPECT_EQ(heur[0]["max_workspace"], 8000000);
  ASSERT_EQ(heur[0]["results"].size(), 2u);
  EXPECT_EQ(heur[0]["results"][0]["algo"], 21);
  EXPECT_EQ(heur[0]["results"][0]["knobs"], "tile_id=20,stages_id=8");
  EXPECT_EQ(heur[0]["results"][1]["algo"], 6);
  EXPECT_EQ(heur[0]["results"][1]["knobs"], "tile_id=15,splitk_num=4,reduction_scheme=2");
  EXPECT_EQ(heur[0]["results"][1]["memory"], 3072u * 512 * 4);
  EXPECT_EQ(heur[1]["problem"], kBmm512);
  EXPECT_EQ(heur[2]["problem"], kLinear1000);
  ASSERT_EQ(heur[2]["returned"], 2);  // the split-K offer needs more than the limit: the next one
  EXPECT_EQ(heur[2]["results"][1]["algo"], 31);

  auto mm = of_type(lines, "call", "cublasLtMatmul");
  ASSERT_EQ(mm.size(), 9u);
  EXPECT_EQ(mm[0]["problem"], kLinear512);
  EXPECT_EQ(mm[0]["engine"], 6);  // the program runs the last offer
  EXPECT_EQ(mm[0]["knobs"], "tile_id=15,splitk_num=4,reduction_scheme=2");
  EXPECT_EQ(mm[0]["workspace"], 3072u * 512 * 4);
  EXPECT_NE(mm[0]["ws_ptr"], "0x0");
  EXPECT_EQ(mm[2]["problem"], kLinear512);
  EXPECT_EQ(mm[2]["engine"], -1);  // no algorithm: cuBLASLt chose
  EXPECT_EQ(mm[2]["knobs"], "");
  EXPECT_EQ(mm[3]["problem"], kLinear1000);
  EXPECT_EQ(mm[3]["engine"], 31);
  EXPECT_EQ(mm[3]["knobs"], "tile_id=18,cluster_shape_id=2");
  EXPECT_EQ(mm[3]["workspace"], 0);
  // Equal problems are one problem: the second 512-token Linear has the first one's.
  EXPECT_EQ(mm[6]["problem"], kLinear512);
  auto problems = of_type(lines, "problem");
  int linear512 = 0;
  for (const auto& p : problems) linear512 += p["text"] == kLinear512 ? 1 : 0;
  EXPECT_EQ(linear512, 1);

  // One selection per problem the thread ran: 512 and 1000 tokens, a Linear and a batched matmul
  // each; asking again for the same problem and running the same algorithm is not a new one.
  json report = analyze_json({dir});
  EXPECT_EQ(report["summary"]["searches"], 4) << report["summary"];
  EXPECT_TRUE(report["findings"].empty()) << report["findings"];

  // The dump read back: the results' configurations survive as knobs, so the winners match.
  std::string jsonl = dir + "/dump.jsonl";
  {
    std::ofstream out(jsonl);
    for (const auto& l : lines) out << l.dump() << "\n";
  }
  json again = analyze_json({jsonl});
  EXPECT_EQ(again["summary"]["searches"], 4) << again["summary"];
  auto redump = dump(jsonl);
  auto heur2 = of_type(redump, "call", "cublasLtMatmulAlgoGetHeuristic");
  ASSERT_EQ(heur2.size(), 6u);
  EXPECT_EQ(heur2[0]["results"], heur[0]["results"]);
}

}  // namespace
}  // namespace cuprobe::test

namespace cuprobe::test {
namespace {

// cuBLASLt's heuristic results and cuDNN's legacy ones in one process: each call keeps its own
// results (both are algorithm-results records, found by id; their ids once came from two counters
// and collided).
TEST(CublasLtCapture, ResultsOfCublasLtAndCudnnInOneProcessStayApart) {
  std::string dir = fresh_dir("mixed-results");
  RunResult r = record(dir, {program("mixed_results")});
  ASSERT_EQ(r.status, 0) << r.err;
  auto printed = [&](const std::string& tag) {
    std::vector<int> algos;
    size_t at = r.out.find(tag + " ");
    if (at == std::string::npos) return algos;
    std::istringstream line(r.out.substr(at + tag.size(), r.out.find('\n', at) - at - tag.size()));
    for (int a; line >> a;) algos.push_back(a);
    return algos;
  };
  auto recorded = [](const json& call) {
    std::vector<int> algos;
    for (const auto& res : call["results"]) algos.push_back(res["algo"]);
    return algos;
  };
  auto lines = dump(dir);
  auto heur = of_type(lines, "call", "cublasLtMatmulAlgoGetHeuristic");
  auto get = of_type(lines, "call", "cudnnGetConvolutionForwardAlgorithm_v7");
  ASSERT_EQ(heur.size(), 1u);
  ASSERT_EQ(get.size(), 1u);
  ASSERT_FALSE(printed("lt").empty()) << r.out;
  ASSERT_FALSE(printed("cudnn").empty()) << r.out;
  EXPECT_EQ(recorded(heur[0]), printed("lt")) << heur[0];
  EXPECT_EQ(recorded(get[0]), printed("cudnn")) << get[0];
}

// The real libcublasLt.so.13 without a GPU: no handle can be created, so the heuristics and the
// matmuls fail, but the shim reads the problem through the real library's getters (each asked
// with the size cublasLt.h gives its attribute) and must read what the double reads.
TEST(CublasLtCapture, TheRealLibrarysDescriptorsReadAsTheDoublesDo) {
  std::string prog = program("lt_matmul_real");
  if (!std::filesystem::exists(prog)) GTEST_SKIP() << "no real libcublasLt.so.13 at build time";
  std::string dir = fresh_dir("cublaslt-real");
  RunResult r = record(dir, {prog, "--tokens", "512", "--batched", "4", "--workspace", "8000000"});
  ASSERT_NE(r.status, 0) << "a handle without a GPU? " << r.out;  // the calls failed, as expected here
  auto lines = dump(dir);
  auto procs = of_type(lines, "process");
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0]["stats"]["missing_symbols"], 0);
  std::string version = procs[0]["library_versions"].value("cublaslt", "");
  EXPECT_EQ(version.rfind("13.", 0), 0u) << procs[0];
  auto heur = of_type(lines, "call", "cublasLtMatmulAlgoGetHeuristic");
  ASSERT_EQ(heur.size(), 2u);
  EXPECT_NE(heur[0]["ret"], 0);
  EXPECT_EQ(heur[0]["problem"], kLinear512);
  EXPECT_EQ(heur[0]["max_workspace"], 8000000);
  EXPECT_EQ(heur[1]["problem"], kBmm512);
}

}  // namespace
}  // namespace cuprobe::test
