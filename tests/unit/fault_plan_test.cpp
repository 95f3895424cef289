// The fault plan parser (common/fault_plan.h) that the shim and `cuprobe record` share, and
// what `cuprobe record` builds around it (analyzer/faults/plan_builder.h).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>

#include "error_names.h"
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

bool matches(const Rule& r, const std::string& text) {
  return safe_regex::search(r.problem_re, text.data(), text.size());
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

// Every name of each library's status enum (common/error_names.h, generated from the vendor
// headers) is taken for calls of that library with its value, and refused for calls that cannot
// return it: a runtime name is also taken for driver calls (and the other way round) where the
// other enum has the same code, as the two share most codes.
TEST(FaultPlan, EveryVendorErrorNameIsTakenWhereItsCallsCanReturnIt) {
  struct Family {
    const char* calls;  // a faultable call of the library
    const errors::ErrorName* names;
    size_t n;
    int32_t Rule::*code;
    bool runtime_or_driver;
  };
  auto fam = [](const char* calls, const auto& names, int32_t Rule::*code, bool rd) {
    return Family{calls, names, std::size(names), code, rd};
  };
  const Family families[] = {
      fam("cudaMalloc", errors::kCudartErrors, &Rule::cudart_code, true),
      fam("cuMemAlloc_v2", errors::kDriverErrors, &Rule::driver_code, true),
      fam("cudnn-execute", errors::kCudnnStatuses, &Rule::cudnn_code, false),
      fam("ncclCommInitRank", errors::kNcclResults, &Rule::nccl_code, false),
  };
  size_t taken = 0, refused = 0;
  for (const Family& from : families) {
    ASSERT_GT(from.n, 7u);  // the tables hold the whole enums (ncclResult_t has the fewest: 8)
    for (size_t i = 0; i < from.n; ++i) {
      const errors::ErrorName& e = from.names[i];
      for (const Family& to : families) {
        std::string plan = std::string(to.calls) + ":" + e.name;
        SCOPED_TRACE(plan);
        auto p = parse(plan);
        bool same = &from == &to;
        bool shared = false;
        if (from.runtime_or_driver && to.runtime_or_driver && !same) {
          for (size_t k = 0; k < to.n; ++k) shared = shared || to.names[k].code == e.code;
        }
        // CUDNN_STATUS_ before a short name is that short name for other libraries (ErrorNamesMapPerLibrary).
        bool short_alias = false;
        for (const char* n : {"NOT_SUPPORTED", "NOT_SUPPORTED_SHAPE", "NOT_SUPPORTED_LAYOUT", "BAD_PARAM",
                              "INTERNAL_ERROR", "EXECUTION_FAILED", "NOT_INITIALIZED"}) {
          short_alias = short_alias || std::string(e.name) == std::string("CUDNN_STATUS_") + n;
        }
        if (short_alias && !same) continue;
        if (e.code == 0) {
          EXPECT_FALSE(p->ok);
          EXPECT_NE(p->err.find("success, not an error"), std::string::npos) << p->err;
        } else if (same || shared) {
          ASSERT_TRUE(p->ok) << p->err;
          EXPECT_EQ(p->plan->rules[0].*to.code, e.code);
          ++taken;
        } else {
          EXPECT_FALSE(p->ok);
          EXPECT_NE(p->err.find("cannot return " + std::string(e.name)), std::string::npos) << p->err;
          ++refused;
        }
      }
    }
  }
  EXPECT_GT(taken, 290u);
  EXPECT_GT(refused, 500u);
  // The names of the issue: an illegal address, an uncorrectable ECC error, NCCL's errors.
  for (const char* plan :
       {"sync:cudaErrorIllegalAddress", "sync:cudaErrorECCUncorrectable", "alloc:CUDA_ERROR_ILLEGAL_ADDRESS",
        "ncclCommInitRank|ncclCommInitRankConfig:ncclSystemError",
        "cudnn-execute:CUDNN_STATUS_EXECUTION_FAILED_CUDART"}) {
    auto p = parse(plan);
    EXPECT_TRUE(p->ok) << plan << ": " << p->err;
  }
  auto illegal = parse("alloc:cudaErrorIllegalAddress");
  EXPECT_EQ(illegal->plan->rules[0].cudart_code, 700);
  EXPECT_EQ(illegal->plan->rules[0].driver_code, 700);  // cuMemAlloc_v2 & co: CUDA_ERROR_ILLEGAL_ADDRESS
}

// rank=random: the rank a seed picks, the same wherever it is computed, spread over the ranks;
// cuprobe record writes a seed into a rule that has none.
TEST(FaultPlan, RandomRankIsPickedFromTheSeed) {
  auto p = parse("alloc:OOM,rank=random,seed=7");
  ASSERT_TRUE(p->ok) << p->err;
  EXPECT_EQ(p->plan->rules[0].rank, kRankRandom);
  EXPECT_EQ(p->plan->rules[0].seed, 7u);
  EXPECT_EQ(random_rank(7, 4), random_rank(7, 4));
  EXPECT_EQ(random_rank(7, 0), -1);
  int hits[8] = {};
  for (uint64_t seed = 0; seed < 8000; ++seed) {
    int r = random_rank(seed, 8);
    ASSERT_GE(r, 0);
    ASSERT_LT(r, 8);
    ++hits[r];
  }
  for (int h : hits) EXPECT_GT(h, 800);  // about 1000 each
  EXPECT_NE(check_plan({"alloc:OOM,rank=random"}).find("alloc:OOM,rank=random,seed="), std::string::npos);
  EXPECT_EQ(check_plan({"alloc:OOM,rank=random,seed=3"}), "alloc:OOM,rank=random,seed=3");
  auto seedless = parse("alloc:OOM,seed=5");
  EXPECT_FALSE(seedless->ok);
  EXPECT_NE(seedless->err.find("a seed without p=PROBABILITY or rank=random does nothing"), std::string::npos);
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
  EXPECT_TRUE(matches(q->plan->rules[1], "conv_dgrad x[64,3,8,8]f32"));
  EXPECT_FALSE(matches(q->plan->rules[1], "conv_wgrad x[64,3,8,8]f32"));
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
      {"alloc:NOT_SUPPORTED_SHAPE", "CUDA runtime calls (cudaMalloc) cannot return NOT_SUPPORTED_SHAPE"},
      {"cudnn-execute:cudaErrorIllegalAddress",
       "cuDNN calls (cudnnBackendExecute) cannot return cudaErrorIllegalAddress: "
       "cuDNN calls return cudnnStatus_t"},
      {"sync:cudaSuccess", "cudaSuccess is its library's success, not an error"},
      {"cudnn-execute:EXECUTION_FAILED,sticky",
       "sticky is a device fault: the rule must name CUDA runtime or driver calls"},
      {"alloc:OOM,sticky=maybe", "write sticky (no value)"},
      {"ncclAllReduce:DELAY", "DELAY needs delay=TIME"},
      {"ncclAllReduce:DELAY,delay=0", "a wait of more than 0 and at most a day"},
      {"sync:DELAY,delay=5s,sticky", "sticky is a device fault"},
      {"sync:cudaErrorNoSuchThing", "unknown error 'cudaErrorNoSuchThing'"},
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

TEST(FaultPlan, ProblemRegexesAreSafe) {
  // Back-references: refused at once (glibc took minutes on this one, and matched it wrongly).
  auto t0 = std::chrono::steady_clock::now();
  auto p = parse("cudnn-execute:NOT_SUPPORTED,problem~^(.*)(.*)(.*)(.*)(.*)(.*)\\6\\5\\4\\3\\2\\1$");
  EXPECT_FALSE(p->ok);
  EXPECT_NE(p->err.find("fault rule 1"), std::string::npos) << p->err;
  EXPECT_NE(p->err.find("back-references (\\6) are not supported"), std::string::npos) << p->err;
  // Repetitions that multiply past the bound: refused, not compiled into hundreds of megabytes.
  p = parse("cudnn-execute:NOT_SUPPORTED,problem~(a{1000}){1000}");
  EXPECT_FALSE(p->ok);
  EXPECT_NE(p->err.find("'problem~(a{1000}){1000}': regex refused: too large: it expands to more than 4096 states"),
            std::string::npos) << p->err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // A refused rule after a compiled one frees it (ASan would tell).
  p = parse("cudnn-execute:NOT_SUPPORTED,problem~^conv;cudnn-execute:NOT_SUPPORTED,problem~(");
  EXPECT_FALSE(p->ok);
  EXPECT_NE(p->err.find("fault rule 2"), std::string::npos) << p->err;
  p = parse("cudnn-execute:NOT_SUPPORTED,problem~^conv,nth=0");
  EXPECT_FALSE(p->ok);
  p = parse("cudnn-execute:NOT_SUPPORTED,problem~^conv,name=a;cudnn-execute:NOT_SUPPORTED,problem~^conv,name=a");
  EXPECT_FALSE(p->ok);
  // One problem per rule; none empty; none longer than the rule keeps.
  for (const char* bad : {"cudnn-execute:NOT_SUPPORTED,problem~a,problem=b", "cudnn-execute:NOT_SUPPORTED,problem~",
                          "cudnn-execute:NOT_SUPPORTED,problem="}) {
    EXPECT_FALSE(parse(bad)->ok) << bad;
  }
  EXPECT_NE(parse("cudnn-execute:NOT_SUPPORTED,problem=" + std::string(256, 'x'))->err.find("at most 255"),
            std::string::npos);
  // Pathological but legal: compiled, and matched in linear time over a long text.
  auto q = parse("cudnn-execute:NOT_SUPPORTED,problem~(a*)*b;cudnn-execute:NOT_SUPPORTED,problem~(a|a)*c$");
  ASSERT_TRUE(q->ok) << q->err;
  std::string as(10000, 'a');
  EXPECT_FALSE(matches(q->plan->rules[0], as));
  EXPECT_FALSE(matches(q->plan->rules[1], as));
  EXPECT_TRUE(matches(q->plan->rules[1], as + "c"));
  // Escaped separators reach the pattern as plain characters.
  auto e = parse("cudnn-execute:NOT_SUPPORTED,problem~x\\[8\\,16\\]|y\\;");
  ASSERT_TRUE(e->ok) << e->err;
  EXPECT_TRUE(matches(e->plan->rules[0], "conv_fwd x[8,16] w"));
  EXPECT_TRUE(matches(e->plan->rules[0], "y;"));
  EXPECT_FALSE(matches(e->plan->rules[0], "conv_fwd x[8,32] w"));
}

TEST(FaultPlan, ValuesAreReadExactlyOrRefused) {
  auto value = [](const std::string& rule) {
    auto p = parse(rule);
    EXPECT_TRUE(p->ok) << rule << ": " << p->err;
    return p->ok ? p->plan->rules[0] : Rule{};
  };
  EXPECT_EQ(value("alloc:OOM,from=0.3s").from_ns, 300'000'000u);  // exact, not 299999999
  EXPECT_EQ(value("alloc:OOM,from=1.000000001").from_ns, 1'000'000'001u);
  EXPECT_EQ(value("alloc:OOM,from=250ns").from_ns, 250u);
  EXPECT_EQ(value("alloc:OOM,from=18446744073s").from_ns, 18'446'744'073'000'000'000u);
  EXPECT_EQ(value("alloc:OOM,from=18446744073.709551615s").from_ns, UINT64_MAX);
  EXPECT_EQ(value("alloc:OOM,size>=0.1KB").min_size, 100u);
  EXPECT_EQ(value("alloc:OOM,size>=0.1K").min_size, 102u);
  EXPECT_EQ(value("alloc:OOM,size>=16777215.99999TiB").min_size, (16777215ull << 40) + 1099500632659ull);
  EXPECT_EQ(value("alloc:OOM,p=1e-3,seed=0").probability, 1e-3);
  EXPECT_EQ(value("alloc:OOM,problem=0x00000000DEADbeef").problem_kind, kProblemHash);
  EXPECT_EQ(value("alloc:OOM,problem=0x-000000000000001").problem_kind, kProblemSubstring);

  struct Case {
    const char* rule;
    const char* says;
  } cases[] = {
      // Times past 2^64 ns used to wrap and fire at once.
      {"alloc:OOM,from=20000000000s", "'from=20000000000s': too large"},
      {"alloc:OOM,from=18446744073.709551616s", "too large"},
      {"alloc:OOM,until=99999999999999999999999", "too large"},
      {"alloc:OOM,from=6000000h", "too large"},
      {"alloc:OOM,from=-1s", "a time since the process started"},
      {"alloc:OOM,from=1e3", "a time since the process started"},
      {"alloc:OOM,from=1.2.3s", "a time since the process started"},
      {"alloc:OOM,from=.s", "a time since the process started"},
      {"alloc:OOM,from=", "a time since the process started"},
      {"alloc:OOM,until=0", "until=0"},
      // Probabilities: decimal numbers in [0, 1] only.
      {"alloc:OOM,p=nan", "a probability in [0, 1]"},
      {"alloc:OOM,p=NAN", "a probability in [0, 1]"},
      {"alloc:OOM,p=inf", "a probability in [0, 1]"},
      {"alloc:OOM,p=-0.1", "a probability in [0, 1]"},
      {"alloc:OOM,p=1.0000001", "a probability in [0, 1]"},
      {"alloc:OOM,p=0x1p-2", "a probability in [0, 1]"},
      {"alloc:OOM,p=1e400", "a probability in [0, 1]"},
      {"alloc:OOM,p=0.5x", "a probability in [0, 1]"},
      {"alloc:OOM,p=", "a probability in [0, 1]"},
      {"alloc:OOM,p=e5", "a probability in [0, 1]"},
      // Byte counts past 2^64, or not plain numbers.
      {"alloc:OOM,size>=16777216TiB", "not a byte count"},
      {"alloc:OOM,size>=18446744073709551616", "not a byte count"},
      {"alloc:OOM,size>=1e3", "not a byte count"},
      {"alloc:OOM,size>=-5", "not a byte count"},
      {"alloc:OOM,size>=nanGiB", "not a byte count"},
      {"alloc:OOM,size>=", "not a byte count"},
      // Counts.
      {"alloc:OOM,nth=18446744073709551616", "'nth=18446744073709551616'"},
      {"alloc:OOM,after=18446744073709551615", "too large"},
      {"alloc:OOM,every=+3", "'every=+3'"},
      {"alloc:OOM,max=-1", "'max=-1'"},
      {"alloc:OOM,seed=18446744073709551616,p=0.5", "'seed=18446744073709551616'"},
      {"alloc:OOM,seed=0", "a seed without p="},
      {"alloc:OOM,device=-1", "'device=-1'"},
      {"alloc:OOM,device=9999999999", "'device=9999999999'"},
      {"alloc:OOM,engine=9223372036854775808", "'engine=9223372036854775808'"},
      {"alloc:OOM,pid=0", "'pid=0'"},
      {"alloc:OOM,at=1++2", "'at=1++2'"},
      {"alloc:18446744073709551616", "unknown error"},
      {"alloc:-2", "unknown error"},
  };
  for (const auto& c : cases) {
    auto p = parse(c.rule);
    EXPECT_FALSE(p->ok) << c.rule;
    EXPECT_NE(p->err.find(c.says), std::string::npos) << c.rule << " -> " << p->err;
  }
}

TEST(FaultPlan, MemoryCapValuesAreChecked) {
  MemCap c;
  char err[256];
  ASSERT_TRUE(parse_mem_cap("0.5GiB", &c, err, sizeof err)) << err;
  EXPECT_EQ(c.bytes[kCapDevices], 1ull << 29);
  ASSERT_TRUE(parse_mem_cap("1e1%", &c, err, sizeof err)) << err;
  EXPECT_DOUBLE_EQ(c.fraction[kCapDevices], 0.1);
  for (const char* bad : {"nan%", "inf%", "-5%", "0%", "100.5%", "%", "1e999%", "16777216TiB", "1e3GiB", "-1GiB",
                          "0=1GiB,0=2GiB", "8GiB,all=50%", "0=", "=8GiB", "99999999999999999999=1GiB", "0.0GiB"}) {
    EXPECT_FALSE(parse_mem_cap(bad, &c, err, sizeof err)) << bad;
  }
  EXPECT_FALSE(parse_mem_cap(nullptr, &c, err, sizeof err));
  EXPECT_TRUE(parse_mem_cap("0=1GiB,1=1GiB,all=2GiB", &c, err, sizeof err)) << err;
}

TEST(FaultPlanBuilder, JsonValuesCannotSmuggleRules) {
  auto refused = [](const char* json, const char* says) {
    try {
      FileRules fr = rules_from_json(nlohmann::json::parse(json), "f.json");
      ADD_FAILURE() << json << " was accepted as: " << (fr.rules.empty() ? "" : fr.rules[0]);
    } catch (const PlanError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << json << " -> " << e.what();
    }
  };
  // Values holding the spec's separators.
  refused(R"([{"calls": "alloc", "error": "OOM,nth=1"}])", "rules[0].error: \"OOM,nth=1\" is not an error name");
  refused(R"([{"calls": "alloc,nth=1", "error": "OOM"}])", "rules[0].calls: \"alloc,nth=1\" is not a call group");
  refused(R"([{"calls": ["alloc", "sync:OOM;alloc"], "error": "OOM"}])", "is not a call group");
  refused(R"([{"calls": "alloc", "error": "OOM;sync:OOM"}])", "is not an error name");
  refused(R"([{"calls": "alloc", "error": "OOM", "nth=1,every": 2}])", "\"nth=1,every\" is not a rule key");
  refused(R"([{"calls": "alloc", "error": "OOM", "problem": "x\ny"}])", "rules[0].problem: \"x\\ny\" holds a line break");
  refused(R"([{"calls": "alloc", "error": "OOM", "problem": "x\\", "seed": 1}])", "backslash");
  refused(R"([{"calls": "alloc", "error": "OOM", "problem": "x\\,nth=1"}])", "backslash");
  refused(R"([{"calls": "alloc", "error": "OOM", "problem": " conv"}])", "white space");
  refused(R"(["alloc:OOM;sync:OOM"])", "rules[0]: \"alloc:OOM;sync:OOM\" holds more than one rule");
  refused(R"(["alloc:OOM\nsync:OOM"])", "holds more than one rule");
  // Types.
  refused(R"([{"calls": 5, "error": "OOM"}])", "rules[0].calls: expected a call group");
  refused(R"([{"calls": [], "error": "OOM"}])", "names no call");
  refused(R"([{"calls": "alloc", "error": true}])", "rules[0].error: expected an error name");
  refused(R"([{"calls": "alloc", "error": 2.5}])", "rules[0].error: expected an error name");
  refused(R"([{"calls": "alloc", "error": "OOM", "problem": 5}])", "rules[0].problem: expected text (a JSON string), not 5");
  refused(R"([{"calls": "alloc", "error": "OOM", "nth": true}])", "rules[0].nth: expected a number or a string, not true");
  refused(R"([{"calls": "alloc", "error": "OOM", "nth": null}])", "rules[0].nth: expected a number or a string");
  refused(R"([{"calls": "alloc", "error": "OOM", "nth": {"a": 1}}])", "rules[0].nth: expected a number or a string");
  refused(R"([{"calls": "alloc", "error": "OOM", "nth": [1, 2]}])", "an array is taken only for \"at\"");
  refused(R"([{"calls": "alloc", "error": "OOM", "at": [1, "2,nth=3"]}])", "is not a call number");
  refused(R"([{"calls": "alloc", "error": "OOM", "at": [1, -2]}])", "is not a call number");
  refused(R"({"rules": [], "mem_cap": true})", "mem_cap: expected a memory cap");
  refused(R"([5])", "a rule is a spec string or an object");

  // What the spec can carry is carried: escaped separators, backslashes the regex keeps.
  FileRules fr = rules_from_json(nlohmann::json::parse(R"J([
      {"calls": "cudnn-execute", "error": "NOT_SUPPORTED", "problem_regex": "x\\[8,16\\]|a;b", "at": [1, "3"]},
      {"calls": "cudnn-execute", "error": "NOT_SUPPORTED", "problem": "a\\\\,b", "p": 0.5, "from": 1.5}])J"),
                                 "f.json");
  ASSERT_EQ(fr.rules.size(), 2u);
  EXPECT_EQ(fr.rules[0], "cudnn-execute:NOT_SUPPORTED,at=1+3,problem~x\\[8\\,16\\]|a\\;b");
  EXPECT_EQ(fr.rules[1], "cudnn-execute:NOT_SUPPORTED,from=1.5,p=0.5,problem=a\\\\\\,b");
  check_plan(fr.rules);
  auto p = parse(check_plan(fr.rules));
  ASSERT_TRUE(p->ok) << p->err;
  ASSERT_EQ(p->plan->n, 2);
  EXPECT_EQ(p->plan->rules[0].n_at, 2);
  EXPECT_TRUE(matches(p->plan->rules[0], "conv x[8,16] y"));
  EXPECT_TRUE(matches(p->plan->rules[0], "a;b"));
  EXPECT_STREQ(p->plan->rules[1].problem, "a\\\\,b");
  EXPECT_EQ(p->plan->rules[1].from_ns, 1'500'000'000u);
  // A spec string that ends in a backslash would swallow the ';' before the next rule.
  EXPECT_THROW(check_plan({"alloc:OOM,problem=x\\", "sync:OOM"}), PlanError);
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
