// The fault plan parser (common/fault_plan.h) that the shim and `cuprobe record` share, and
// what `cuprobe record` builds around it (analyzer/faults/plan_builder.h).
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "fault_plan.h"
#include "faults/plan_builder.h"

namespace cuprobe::faults {
namespace {

struct Parsed {
  std::unique_ptr<Plan> plan = std::make_unique<Plan>();
  bool ok = false;
  std::string err;
  ~Parsed() {
    if (ok) free_plan(plan.get());
  }
};

std::unique_ptr<Parsed> parse(const std::string& text) {
  auto p = std::make_unique<Parsed>();
  char err[768] = {};
  p->ok = parse_plan(text.c_str(), p->plan.get(), err, sizeof err);
  p->err = err;
  return p;
}

bool covers(const Rule& r, ApiId id) { return (r.apis[int(id) / 64] >> (int(id) % 64)) & 1; }

TEST(FaultPlan, GroupsCoverTheirCallsAndNothingElse) {
  auto p = parse("alloc:OOM");
  ASSERT_TRUE(p->ok) << p->err;
  const Rule& r = p->plan->rules[0];
  for (ApiId id : {ApiId::cudaMalloc, ApiId::cudaMallocAsync, ApiId::cudaMallocAsync_ptsz, ApiId::cudaMallocFromPoolAsync,
                   ApiId::cudaMallocManaged, ApiId::cudaMallocPitch, ApiId::cudaMalloc3D}) {
    EXPECT_TRUE(covers(r, id)) << api_static(id).name;
  }
  EXPECT_FALSE(covers(r, ApiId::cudaMallocHost));
  EXPECT_FALSE(covers(r, ApiId::cudaFree));
  EXPECT_EQ(r.cudart_code, 2);  // cudaErrorMemoryAllocation
  EXPECT_EQ(r.cudnn_code, 0);   // names no cuDNN call

  auto q = parse("cudnn-execute|cudnn-finalize:NOT_SUPPORTED;cudnn-legacy-exec:EXECUTION_FAILED;cudnn-find:BAD_PARAM");
  ASSERT_TRUE(q->ok) << q->err;
  EXPECT_TRUE(covers(q->plan->rules[0], ApiId::cudnnBackendExecute));
  EXPECT_TRUE(covers(q->plan->rules[0], ApiId::cudnnBackendFinalize));
  EXPECT_FALSE(covers(q->plan->rules[0], ApiId::cudnnConvolutionForward));
  EXPECT_EQ(q->plan->rules[0].cudnn_code, 3000);
  EXPECT_TRUE(covers(q->plan->rules[1], ApiId::cudnnConvolutionForward));
  EXPECT_TRUE(covers(q->plan->rules[1], ApiId::cudnnBatchNormalizationForwardTrainingEx));
  EXPECT_FALSE(covers(q->plan->rules[1], ApiId::cudnnBackendExecute));
  EXPECT_EQ(q->plan->rules[1].cudnn_code, 5000);
  EXPECT_TRUE(covers(q->plan->rules[2], ApiId::cudnnFindConvolutionForwardAlgorithmEx));
  EXPECT_FALSE(covers(q->plan->rules[2], ApiId::cudnnConvolutionForward));
  EXPECT_EQ(q->plan->rules[2].cudnn_code, 2000);
}

TEST(FaultPlan, ErrorNamesMapPerLibrary) {
  struct Case {
    const char* name;
    int32_t cudart, cudnn;
  } cases[] = {{"OOM", 2, 4004},           {"NOT_SUPPORTED", 801, 3000}, {"NOT_SUPPORTED_SHAPE", 0, 3002},
               {"BAD_PARAM", 1, 2000},     {"INTERNAL_ERROR", 999, 4000}, {"EXECUTION_FAILED", 719, 5000},
               {"CUDNN_STATUS_NOT_SUPPORTED", 801, 3000}, {"7777", 7777, 7777}};
  for (const auto& c : cases) {
    int32_t code = -1;
    EXPECT_EQ(error_code(c.name, trace::Library::kCudart, &code), c.cudart != 0) << c.name;
    if (c.cudart) {
      EXPECT_EQ(code, c.cudart) << c.name;
    }
    EXPECT_TRUE(error_code(c.name, trace::Library::kCudnn, &code)) << c.name;
    EXPECT_EQ(code, c.cudnn) << c.name;
  }
}

TEST(FaultPlan, KeysAreRead) {
  auto p = parse(
      "cudaMalloc|cudaMallocAsync:OOM, name=big, size>=1.5GiB, device=1, rank=3, pid=42, comm=train.py, from=2s, "
      "until=1500ms0, max=4, scope=thread");
  EXPECT_FALSE(p->ok);  // until=1500ms0 is not a time
  EXPECT_NE(p->err.find("until=1500ms0"), std::string::npos) << p->err;
  p = parse(
      "cudaMalloc|cudaMallocAsync:OOM, name=big, size>=1.5GiB, device=1, rank=3, pid=42, comm=train.py, from=2s, "
      "until=1m, max=4, scope=thread, every=3, after=5, p=0.25, seed=11");
  ASSERT_TRUE(p->ok) << p->err;
  const Rule& r = p->plan->rules[0];
  EXPECT_STREQ(r.name, "big");
  EXPECT_EQ(r.min_size, uint64_t(1.5 * (1ull << 30)));
  EXPECT_EQ(r.device, 1);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.pid, 42);
  EXPECT_STREQ(r.comm, "train.py");
  EXPECT_EQ(r.from_ns, 2'000'000'000u);
  EXPECT_EQ(r.until_ns, 60'000'000'000u);
  EXPECT_EQ(r.max, 4u);
  EXPECT_EQ(r.scope, kScopeThread);
  EXPECT_EQ(r.every, 3u);
  EXPECT_DOUBLE_EQ(r.probability, 0.25);
  EXPECT_EQ(r.seed, 11u);

  auto q = parse("cudnn-execute:NOT_SUPPORTED,problem=conv_fwd x[8\\,16,engine=3;"
                 "cudnn-execute:NOT_SUPPORTED,problem~^conv_(fwd|dgrad) x\\[64;"
                 "cudnn-execute:NOT_SUPPORTED,problem=0x00000000deadbeef");
  ASSERT_TRUE(q->ok) << q->err;
  EXPECT_EQ(q->plan->rules[0].problem_kind, kProblemSubstring);
  EXPECT_STREQ(q->plan->rules[0].problem, "conv_fwd x[8,16");  // \, is a comma inside a value
  EXPECT_EQ(q->plan->rules[0].engine, 3);
  EXPECT_EQ(q->plan->rules[1].problem_kind, kProblemRegex);
  EXPECT_EQ(regexec(&q->plan->rules[1].problem_re, "conv_dgrad x[64,3,8,8]f32", 0, nullptr, 0), 0);
  EXPECT_NE(regexec(&q->plan->rules[1].problem_re, "conv_wgrad x[64,3,8,8]f32", 0, nullptr, 0), 0);
  EXPECT_EQ(q->plan->rules[2].problem_kind, kProblemHash);
  EXPECT_EQ(q->plan->rules[2].problem_hash, 0xdeadbeefu);
  EXPECT_TRUE(q->plan->uses_problem_text);
  EXPECT_STREQ(q->plan->rules[1].name, "rule2");
}

TEST(FaultPlan, MalformedPlansNameTheOffendingPart) {
  struct Case {
    const char* plan;
    const char* says;
  } cases[] = {
      {"alloc", "expected CALLS:ERROR"},
      {"allocs:OOM", "'allocs' is neither a call group"},
      {"cudaFree:OOM", "cudaFree cannot take faults"},
      {"alloc:NOPE", "unknown error 'NOPE'"},
      {"alloc:NOT_SUPPORTED_SHAPE", "no CUDA runtime equivalent"},
      {"alloc:OOM,nth=0", "'nth=0'"},
      {"alloc:OOM,nth=three", "'nth=three'"},
      {"alloc:OOM,p=1.5", "a probability in [0, 1]"},
      {"alloc:OOM,size=10", "size>=BYTES"},
      {"alloc:OOM,size>=10 parsecs", "not a byte count"},
      {"alloc:OOM,bogus=1", "unknown key"},
      {"alloc:OOM,problem~conv[", "'problem~conv['"},
      {"alloc:OOM,from=5s,until=2s", "'until' must come after 'from'"},
      {"alloc:OOM,seed=4", "a seed without p="},
      {"alloc:OOM,scope=host", "scope=process"},
      {"alloc:OOM,at=3+x", "'at=3+x'"},
      {"alloc:OOM,name=a;alloc:OOM,name=a", "both named 'a'"},
      {"alloc:OOM;sync:OOM;alloc:", "fault rule 3"},
  };
  for (const auto& c : cases) {
    auto p = parse(c.plan);
    EXPECT_FALSE(p->ok) << c.plan;
    EXPECT_NE(p->err.find(c.says), std::string::npos) << c.plan << " -> " << p->err;
    EXPECT_EQ(p->plan->n, 0) << "a refused plan holds no rule";
  }
  std::string many;
  for (int i = 0; i < kMaxRules + 1; ++i) many += "alloc:OOM;";
  EXPECT_NE(parse(many)->err.find("at most 32 rules"), std::string::npos);
}

TEST(FaultPlan, TriggersSelectMatchNumbers) {
  auto fires = [](const std::string& rule) {
    auto p = parse(rule);
    EXPECT_TRUE(p->ok) << p->err;
    std::string hits;
    for (uint64_t k = 1; k <= 12; ++k) hits += triggers_fire(p->plan->rules[0], 0, k) ? '1' : '.';
    return hits;
  };
  EXPECT_EQ(fires("alloc:OOM"), "111111111111");
  EXPECT_EQ(fires("alloc:OOM,nth=3"), "..1.........");
  EXPECT_EQ(fires("alloc:OOM,every=4"), "...1...1...1");
  EXPECT_EQ(fires("alloc:OOM,first=2"), "11..........");
  EXPECT_EQ(fires("alloc:OOM,after=10"), "..........11");
  EXPECT_EQ(fires("alloc:OOM,after=0"), "111111111111");
  EXPECT_EQ(fires("alloc:OOM,at=2+5+11"), ".1..1.....1.");
  EXPECT_EQ(fires("alloc:OOM,every=2,after=6"), ".......1.1.1");
}

TEST(FaultPlan, ProbabilityIsASeededFunctionOfTheMatchNumber) {
  auto p = parse("alloc:OOM,p=0.3,seed=7;alloc:OOM,p=0.3,seed=8");
  ASSERT_TRUE(p->ok);
  int hits = 0, differ = 0;
  for (uint64_t k = 1; k <= 20000; ++k) {
    bool a = draw(p->plan->rules[0], 0, k);
    EXPECT_EQ(a, draw(p->plan->rules[0], 0, k));  // the same call number decides the same way
    hits += a;
    differ += a != draw(p->plan->rules[1], 0, k);
  }
  EXPECT_NEAR(hits / 20000.0, 0.3, 0.02);
  EXPECT_GT(differ, 4000) << "another seed gives another sequence";
  auto never = parse("alloc:OOM,p=0");
  auto always = parse("alloc:OOM,p=1");
  for (uint64_t k = 1; k < 1000; ++k) {
    EXPECT_FALSE(draw(never->plan->rules[0], 0, k));
    EXPECT_TRUE(draw(always->plan->rules[0], 0, k));
  }
}

TEST(FaultPlan, MemoryCaps) {
  MemCap c;
  char err[256];
  ASSERT_TRUE(parse_mem_cap("8GiB", &c, err, sizeof err));
  EXPECT_EQ(c.bytes[kCapDevices], 8ull << 30);
  ASSERT_TRUE(parse_mem_cap("25%", &c, err, sizeof err));
  EXPECT_DOUBLE_EQ(c.fraction[kCapDevices], 0.25);
  ASSERT_TRUE(parse_mem_cap("0=8GiB, 1=50%, all=1TB", &c, err, sizeof err));
  EXPECT_EQ(c.bytes[0], 8ull << 30);
  EXPECT_DOUBLE_EQ(c.fraction[1], 0.5);
  EXPECT_EQ(c.bytes[kCapDevices], 1'000'000'000'000ull);
  for (const char* bad : {"", "0", "8 apples", "150%", "x=1GiB", "40=1GiB"}) {
    EXPECT_FALSE(parse_mem_cap(bad, &c, err, sizeof err)) << bad;
  }
  auto bytes = mem_cap_bytes("0=1GiB,50%", {{0, 80ull << 30}, {1, 80ull << 30}});
  EXPECT_EQ(bytes[0], 1ull << 30);
  EXPECT_EQ(bytes[1], 40ull << 30);
}

TEST(FaultPlanBuilder, JsonFilesBecomeSpecs) {
  auto doc = nlohmann::json::parse(R"J({"rules": [
      {"calls": "alloc", "error": "OOM", "nth": 3, "name": "third"},
      {"calls": ["cudnn-execute", "cudnn-finalize"], "error": "NOT_SUPPORTED", "problem": "conv_fwd x[8,16", "first": 2},
      {"calls": "cudnn-execute", "error": 3000, "problem_regex": "^conv_(fwd|dgrad)", "min_size": "1GiB"},
      "sync:EXECUTION_FAILED,every=10"], "mem_cap": "8GiB"})J");
  FileRules fr = rules_from_json(doc, "f.json");
  ASSERT_EQ(fr.rules.size(), 4u);
  EXPECT_EQ(fr.rules[0], "alloc:OOM,name=third,nth=3");
  EXPECT_EQ(fr.rules[1], "cudnn-execute|cudnn-finalize:NOT_SUPPORTED,first=2,problem=conv_fwd x[8\\,16");
  EXPECT_EQ(fr.rules[3], "sync:EXECUTION_FAILED,every=10");
  EXPECT_EQ(fr.mem_cap, "8GiB");
  EXPECT_NO_THROW(check_plan(fr.rules));
  EXPECT_THROW(rules_from_json(nlohmann::json::parse(R"({"rules": [{"calls": "alloc"}]})"), "f.json"), PlanError);
  EXPECT_THROW(rules_from_json(nlohmann::json::parse(R"({"rulez": []})"), "f.json"), PlanError);
  EXPECT_THROW(check_plan({"alloc:OOM,nth=x"}), PlanError);
}

TEST(FaultPlanBuilder, ReplayKeepsFiltersAndDropsTriggers) {
  EXPECT_EQ(rule_filters("alloc:OOM,nth=3,size>=1GiB,p=0.5,seed=2,max=1,name=x"), "alloc:OOM,size>=1GiB,name=x");
  EXPECT_EQ(rule_filters("cudnn-execute:NOT_SUPPORTED,problem=a\\,b,every=2,at=1+2"),
            "cudnn-execute:NOT_SUPPORTED,problem=a\\,b");
}

}  // namespace
}  // namespace cuprobe::faults
