// The shim against the CUDA driver (driver_hooks.h): calls that reach libcuda through entry-point
// lookups, cuGetProcAddress, dlsym on a libcuda handle and linking, each recorded with the return
// code the program saw and its sizes; lookups handing out wrappers only for what the shim wraps;
// CUPROBE_DISABLE; the toolkit's stub driver; a driver without one of the functions; fault mode;
// memory samples; and PyTorch's expandable segments running out of memory, explained by
// `cuprobe analyze`.
#include <gtest/gtest.h>

#include <fstream>

#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "cuprobe/hooks/driver_hooks.h"
#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kMiB = 1ull << 20;
#define CUPROBE_ONE(...) +1
constexpr size_t kDriverHooks = 0 CUPROBE_DRIVER_HOOKS(CUPROBE_ONE);
#undef CUPROBE_ONE

// What a driver program printed (driver_sequence.h's format).
struct Printed {
  struct Call {
    std::string api;
    int ret;
  };
  std::vector<Call> calls;
  std::vector<std::pair<std::string, std::string>> pointers;  // (name, wrapped|real|wrong|missing)
  std::map<std::string, std::string> outs;                    // API -> what its failure left
  std::vector<std::string> other;

  int count(const std::string& api) const {
    int n = 0;
    for (const auto& c : calls) n += c.api == api;
    return n;
  }
  int ret(const std::string& api) const {
    for (const auto& c : calls) {
      if (c.api == api) return c.ret;
    }
    return -1;
  }
};

Printed parse_printed(const std::string& out) {
  Printed p;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string first, second, third;
    ls >> first >> second >> third;
    if (first == "wrapped" || first == "real" || first == "wrong" || first == "missing") {
      p.pointers.emplace_back(second, first);
    } else if (first == "out") {
      p.outs[second] = third;
    } else if (!second.empty() && third.empty() && second.find_first_not_of("-0123456789") == std::string::npos) {
      p.calls.push_back({first, std::stoi(second)});
    } else {
      p.other.push_back(line);
    }
  }
  return p;
}

struct Traced {
  RunResult r;
  std::string dir;
  Printed printed;
  std::vector<json> lines;

  // The program's own calls, and the memory samples the shim took (mem_sample.h).
  std::vector<json> calls(const std::string& api = "") const { return of_type(lines, "call", api); }
  std::vector<json> samples(const std::string& api = "") const { return of_type(lines, "sample", api); }
  json process() const {
    auto procs = of_type(lines, "process");
    return procs.empty() ? json() : procs[0];
  }
};

Traced record_program(const std::string& tag, const std::vector<std::string>& argv, const Env& env = {},
                      const std::vector<std::string>& opts = {}) {
  Traced t;
  t.dir = fresh_dir(tag);
  t.r = record(t.dir, argv, env, opts);
  t.printed = parse_printed(t.r.out);
  if (fs::exists(t.dir)) t.lines = dump(t.dir);
  return t;
}

// The program's calls and the trace's, one for one (api, ret).
void expect_calls_match(const Traced& t) {
  const auto& seen = t.printed.calls;
  size_t i = 0;
  for (const auto& c : t.calls()) {
    ASSERT_LT(i, seen.size()) << "trace has more calls than the program made: " << c.dump();
    EXPECT_EQ(c["api"], seen[i].api) << "call #" << i << ": " << c.dump();
    EXPECT_EQ(c["ret"], seen[i].ret) << "call #" << i << ": " << c.dump();
    ++i;
  }
  EXPECT_EQ(i, seen.size()) << "trace has fewer calls than the program made; first missing: "
                            << (i < seen.size() ? seen[i].api : "");
}

// The first of the program's own calls of `api` in the trace.
json first_call(const Traced& t, const std::string& api) {
  auto calls = t.calls(api);
  return calls.empty() ? json() : calls[0];
}

// Sizes and devices of the sequence's calls (driver_sequence.h).
void expect_sequence_fields(const Traced& t) {
  struct Sized {
    const char* api;
    uint64_t size;
  } sized[] = {{"cuMemAlloc_v2", 1 * kMiB},     {"cuMemAllocAsync", 3 * kMiB},       {"cuMemAllocManaged", 5 * kMiB},
               {"cuMemHostAlloc", 7 * 1024},    {"cuMemAddressReserve", 256 * kMiB}, {"cuMemCreate", 64 * kMiB},
               {"cuMemMap", 64 * kMiB},         {"cuMemSetAccess", 64 * kMiB},       {"cuMemUnmap", 64 * kMiB},
               {"cuMemAddressFree", 256 * kMiB}};
  for (const auto& s : sized) {
    json c = first_call(t, s.api);
    ASSERT_FALSE(c.is_null()) << s.api << " not recorded";
    EXPECT_EQ(c["size"], s.size) << c.dump();
  }
  json create = first_call(t, "cuMemCreate");
  EXPECT_EQ(create["device"], 1) << "physical memory is on prop->location.id: " << create.dump();
  EXPECT_EQ(create["location_type"], 1) << create.dump();  // CU_MEM_LOCATION_TYPE_DEVICE
  EXPECT_EQ(first_call(t, "cuMemSetAccess")["access_device"], 1);
}

// Every function of the shim's table came back as its wrapper; what the shim does not wrap came
// back as the driver's own.
void expect_pointers(const Printed& p, size_t wrapped_expected, const std::string& mode) {
  size_t wrapped = 0;
  std::map<std::string, std::string> unwrapped = {{"cuCtxGetDevice", ""}};
  if (mode != "dlsym") unwrapped["cuMemAlloc@3010"] = "";
  for (const auto& [name, where] : p.pointers) {
    if (unwrapped.count(name)) {
      unwrapped[name] = where;
      continue;
    }
    EXPECT_EQ(where, "wrapped") << mode << ": " << name;
    wrapped += where == "wrapped";
  }
  EXPECT_EQ(wrapped, wrapped_expected) << mode;
  for (const auto& [name, where] : unwrapped) EXPECT_EQ(where, "real") << mode << ": " << name;
}

// The driver double, by path: under a sanitizer, dlopen by name does not search the program's
// RUNPATH (the interceptor is the caller glibc sees).
std::string fake_driver() { return fake_dir('a') + "/libcuda.so.1"; }

// driver_paths MODE under the shim: every call recorded, every known function wrapped.
void check_driver_paths(const std::string& mode) {
  Traced t = record_program("driver_" + mode, {program("driver_paths"), mode, fake_driver()});
  ASSERT_EQ(t.r.status, 0) << t.r.out << t.r.err;
  ASSERT_FALSE(t.printed.calls.empty()) << t.r.out;
  EXPECT_TRUE(t.printed.other.empty()) << t.r.out;
  expect_calls_match(t);
  expect_sequence_fields(t);
  for (const auto& c : t.printed.calls) {
    if (c.api != "cudaGetDriverEntryPointByVersion" && c.api != "cuGetProcAddress_v2") {
      EXPECT_EQ(c.ret, 0) << c.api;
    }
  }

  // One record per lookup the program made: none for the runtime double's own lookups through
  // the driver's cuGetProcAddress, none for dlsym.
  const size_t lookups = kDriverHooks + 2;  // the table, cuCtxGetDevice, cuMemAlloc@3010
  if (mode == "entry") {
    EXPECT_EQ(t.printed.count("cudaGetDriverEntryPointByVersion"), int(lookups));
    EXPECT_EQ(t.calls("cudaGetDriverEntryPointByVersion").size(), lookups);
    EXPECT_TRUE(t.calls("cuGetProcAddress_v2").empty());
    json create;
    for (const auto& c : t.calls("cudaGetDriverEntryPointByVersion")) {
      if (c["symbol"] == "cuMemCreate") create = c;
    }
    ASSERT_FALSE(create.is_null());
    EXPECT_EQ(create["version"], 12000);
    EXPECT_EQ(create["status"], 0);  // cudaDriverEntryPointSuccess
  } else if (mode == "procaddr") {
    EXPECT_EQ(t.printed.count("cuGetProcAddress_v2"), int(lookups));
    EXPECT_EQ(t.calls("cuGetProcAddress_v2").size(), lookups);
    EXPECT_TRUE(t.calls("cudaGetDriverEntryPointByVersion").empty());
    json old;
    for (const auto& c : t.calls("cuGetProcAddress_v2")) {
      if (c["symbol"] == "cuMemAlloc" && c["version"] == 3010) old = c;
    }
    ASSERT_FALSE(old.is_null());
    EXPECT_EQ(old["ret"], 0);
  } else {
    EXPECT_TRUE(t.calls("cudaGetDriverEntryPointByVersion").empty());
    EXPECT_TRUE(t.calls("cuGetProcAddress_v2").empty());
  }
  // procaddr also found cuGetProcAddress_v2 itself through dlsym.
  expect_pointers(t.printed, kDriverHooks + (mode == "procaddr" ? 1 : 0), mode);

  json p = t.process();
  EXPECT_EQ(p["state"], "exited");
  EXPECT_EQ(p["stats"]["missing_symbols"], 0);
}

TEST(DriverCapture, RuntimeEntryPointLookups) { check_driver_paths("entry"); }
TEST(DriverCapture, DriverGetProcAddressLookups) { check_driver_paths("procaddr"); }
TEST(DriverCapture, DlsymOnALibcudaHandle) { check_driver_paths("dlsym"); }

TEST(DriverCapture, LinkedCallsAreRecorded) {
  Traced t = record_program("driver_direct", {program("driver_direct")});
  ASSERT_EQ(t.r.status, 0) << t.r.out << t.r.err;
  EXPECT_TRUE(t.printed.pointers.empty()) << t.r.out;
  for (const auto& c : t.printed.calls) EXPECT_EQ(c.ret, 0) << c.api;
  expect_calls_match(t);
  expect_sequence_fields(t);
  // A handle names the physical allocation its release gives back.
  json create = first_call(t, "cuMemCreate");
  json release = first_call(t, "cuMemRelease");
  ASSERT_FALSE(release.is_null());
  EXPECT_EQ(release["handle"], create["handle"]);
  EXPECT_EQ(t.process()["stats"]["missing_symbols"], 0);
}

TEST(DriverCapture, DisabledShimHandsOutTheDriversOwnFunctions) {
  for (std::string mode : {"entry", "procaddr", "dlsym"}) {
    std::string dir = fresh_dir("disabled_" + mode);
    RunResult r = run({program("driver_paths"), mode, fake_driver()},
                      shim_env({{"LD_PRELOAD", shim_preload()}, {"CUPROBE_DISABLE", "1"}, {"CUPROBE_OUT", dir}}));
    ASSERT_EQ(r.status, 0) << mode << r.out << r.err;
    Printed p = parse_printed(r.out);
    ASSERT_GE(p.pointers.size(), kDriverHooks) << mode << r.out;
    std::string not_real;
    for (const auto& [name, where] : p.pointers) {
      if (where != "real") not_real += " " + where + ":" + name;
    }
    EXPECT_EQ(not_real, "") << mode;
    std::string failed;
    for (const auto& c : p.calls) {
      if (c.ret != 0) failed += " " + c.api + ":" + std::to_string(c.ret);
    }
    EXPECT_EQ(failed, "") << mode;
    EXPECT_EQ(p.ret("cuMemCreate"), 0) << mode << r.out;
    bool traced = false;
    if (fs::exists(dir)) {
      for (const auto& e : fs::directory_iterator(dir)) traced |= e.path().extension() == ".cuprobe";
    }
    EXPECT_FALSE(traced) << mode << ": a disabled shim writes no trace";
  }
}

TEST(DriverCapture, StubDriverFailsEveryCallAndEachIsRecordedWithItsSize) {
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!fs::exists(stub)) GTEST_SKIP() << "no " << stub;
  Traced t = record_program("driver_stub", {program("driver_paths"), "dlsym", stub});
  ASSERT_EQ(t.r.status, 0) << t.r.out << t.r.err;
  std::cout << t.r.out;
  expect_pointers(t.printed, kDriverHooks, "dlsym");
  ASSERT_FALSE(t.printed.calls.empty());
  const int stub_error = t.printed.calls.front().ret;
  EXPECT_NE(stub_error, 0);  // CUDA 13.0's stub: CUDA_ERROR_STUB_LIBRARY (34)
  for (const auto& c : t.printed.calls) EXPECT_EQ(c.ret, stub_error) << c.api;
  expect_calls_match(t);
  for (const char* api : {"cuMemAlloc_v2", "cuMemAllocAsync", "cuMemAllocManaged", "cuMemHostAlloc",
                          "cuMemAddressReserve", "cuMemCreate"}) {
    json c = first_call(t, api);
    ASSERT_FALSE(c.is_null()) << api;
    EXPECT_EQ(c["ret"], stub_error) << c.dump();
  }
  EXPECT_EQ(first_call(t, "cuMemAlloc_v2")["size"], 1 * kMiB);
  EXPECT_EQ(first_call(t, "cuMemCreate")["size"], 64 * kMiB);
  EXPECT_EQ(first_call(t, "cuMemAddressReserve")["size"], 256 * kMiB);
}

TEST(DriverCapture, MissingDriverFunctionReturnsNotFoundAndIsCounted) {
  Traced t = record_program("driver_partial", {program("driver_direct")},
                            {{"LD_LIBRARY_PATH", build_path("tests/doubles/driver-partial")}});
  ASSERT_EQ(t.r.status, 0) << t.r.out << t.r.err;
  EXPECT_EQ(t.printed.ret("cuMemCreate"), 500) << t.r.out;  // CUDA_ERROR_NOT_FOUND
  EXPECT_EQ(t.printed.ret("cuMemAlloc_v2"), 0) << "the rest of the driver works: " << t.r.out;
  expect_calls_match(t);
  EXPECT_GE(t.process()["stats"]["missing_symbols"].get<int>(), 1);
  EXPECT_EQ(first_call(t, "cuMemCreate")["ret"], 500);
  EXPECT_NE(t.r.err.find("calls without a real function"), std::string::npos) << t.r.err;
}

TEST(DriverCapture, FaultRulesAndTheMemoryCapReachDriverAllocations) {
  Traced named = record_program("driver_fault_named", {program("driver_direct")}, {},
                                {"-q", "--fault", "cuMemCreate:OOM,first=1"});
  ASSERT_EQ(named.r.status, 0) << named.r.err;
  EXPECT_EQ(named.printed.ret("cuMemCreate"), 2) << named.r.out;  // CUDA_ERROR_OUT_OF_MEMORY
  EXPECT_EQ(named.printed.ret("cuMemAlloc_v2"), 0);
  json create = first_call(named, "cuMemCreate");
  EXPECT_EQ(create["ret"], 2);
  EXPECT_EQ(create["injected"], "rule1") << create.dump();
  EXPECT_EQ(create["size"], 64 * kMiB);
  // An injected failure leaves the output as the real driver leaves it on a genuine one (seen on
  // an H200): cuMemCreate does not touch *handle, cuMemAlloc sets *dptr to 0.
  EXPECT_EQ(named.printed.outs["cuMemCreate"], "0xdead0000") << named.r.out;
  expect_calls_match(named);

  // The allocation group takes in the driver's allocations: the first is cuMemAlloc_v2.
  Traced group =
      record_program("driver_fault_group", {program("driver_direct")}, {}, {"-q", "--fault", "alloc:OOM,nth=1"});
  ASSERT_EQ(group.r.status, 0) << group.r.err;
  EXPECT_EQ(group.printed.ret("cuMemAlloc_v2"), 2) << group.r.out;
  EXPECT_EQ(group.printed.ret("cuMemCreate"), 0) << group.r.out;
  EXPECT_EQ(first_call(group, "cuMemAlloc_v2")["injected"], "rule1");
  EXPECT_EQ(group.printed.outs["cuMemAlloc_v2"], "0") << group.r.out;
  expect_calls_match(group);

  // A 32 MiB card: the small allocations fit, the 64 MiB physical allocation does not.
  Traced cap = record_program("driver_cap", {program("driver_direct")}, {}, {"-q", "--mem-cap", "32MiB"});
  ASSERT_EQ(cap.r.status, 0) << cap.r.err;
  EXPECT_EQ(cap.printed.ret("cuMemAlloc_v2"), 0) << cap.r.out;
  EXPECT_EQ(cap.printed.ret("cuMemAllocManaged"), 0) << cap.r.out;
  EXPECT_EQ(cap.printed.ret("cuMemCreate"), 2) << cap.r.out;
  json capped = first_call(cap, "cuMemCreate");
  EXPECT_EQ(capped["injected"], "mem-cap") << capped.dump();
  expect_calls_match(cap);
}

TEST(DriverCapture, MemorySamplesAreWritten) {
  // After a driver allocation the sample asks the driver (cuMemGetInfo: the allocation may come
  // from inside the runtime, which must not be called back); at exit it asks the runtime when
  // the process has one.
  struct Case {
    std::vector<std::string> argv;
    std::string api;       // of the samples after allocations
    std::string exit_api;  // of the sample at exit
  } cases[] = {{{program("driver_paths"), "entry", fake_driver()}, "cuMemGetInfo_v2", "cudaMemGetInfo"},
               {{program("driver_direct")}, "cuMemGetInfo_v2", "cuMemGetInfo_v2"}};
  for (const auto& c : cases) {
    Traced t = record_program("driver_samples", c.argv);
    ASSERT_EQ(t.r.status, 0) << t.r.err;
    auto samples = t.samples();
    ASSERT_GE(samples.size(), 2u) << "the first allocation's and the exit's: " << c.api;
    for (size_t i = 0; i < samples.size(); ++i) {
      const auto& s = samples[i];
      EXPECT_EQ(s["api"], i + 1 == samples.size() ? c.exit_api : c.api) << s.dump();
      EXPECT_EQ(s["ret"], 0) << s.dump();
      EXPECT_EQ(s["total"], 80ull << 30) << s.dump();
    }
    // Samples are the device's truth: the first, after the 1 MiB cuMemAlloc, sees it in use; the
    // last, at exit, sees everything given back.
    EXPECT_EQ(samples.front()["total"].get<uint64_t>() - samples.front()["free"].get<uint64_t>(), 1 * kMiB)
        << samples.front().dump();
    EXPECT_EQ(samples.back()["free"], samples.back()["total"]) << samples.back().dump();
    EXPECT_GT(samples.back()["ts_ns"].get<uint64_t>(), t.calls().back()["ts_ns"].get<uint64_t>());
  }
}

TEST(DriverCapture, ExpandableSegmentsOutOfMemoryIsExplained) {
  const uint64_t request = (8ull << 30) + 1 * kMiB;  // not a multiple of PyTorch's 2 MiB rounding
  Traced t = record_program("expandable_oom", {program("expandable_oom"), std::to_string(request)},
                            {{"FAKECUDA_MEM", std::to_string(1ull << 30)}});
  ASSERT_EQ(t.r.status, 1) << t.r.out << t.r.err;
  EXPECT_NE(t.r.out.find("reports 1"), std::string::npos) << "the report reached libc10: " << t.r.out;

  // The framework's report, with the request as PyTorch saw it.
  auto reports = t.calls("_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0]["size"], request);
  EXPECT_EQ(reports[0]["allocated"], 170 * kMiB);
  EXPECT_EQ(reports[0]["reserved"], 180 * kMiB);
  EXPECT_EQ(reports[0]["device_type"], 1);
  EXPECT_EQ(reports[0]["device"], 0);
  // Nine pages for the requests that fitted, then (1 GiB - 180 MiB) / 20 MiB = 42 pages and a
  // failure, twice.
  int failed = 0, created = 0;
  for (const auto& c : t.calls("cuMemCreate")) (c["ret"] == 0 ? created : failed)++;
  EXPECT_EQ(failed, 2);
  EXPECT_EQ(created, 9 + 2 * 42);
  EXPECT_EQ(t.calls("cuMemRelease").size(), 2u * 42);

  RunResult a = run({cuprobe_bin(), "analyze", "--json", t.dir});
  ASSERT_NE(a.status, 2) << a.err;
  std::cout << a.out << "\n";
  json report = json::parse(a.out);
  json oom;
  for (const auto& f : report["findings"]) {
    if (f["rule"] == "oom-postmortem") oom = f;
  }
  ASSERT_FALSE(oom.is_null()) << report.dump(2);
  const json& ev = oom["evidence"];
  EXPECT_EQ(ev["fatal"], true);
  EXPECT_EQ(ev["api"], "cuMemCreate");
  EXPECT_EQ(ev["failed_call_size"], 20 * kMiB) << "a page failed underneath the request";
  EXPECT_EQ(ev["failed_calls"], 2);
  // The retry after freeing the cache is the same request (docs/analyze-json.md: "a failure and
  // PyTorch's retry after freeing its cache count once"), and it did not recover.
  EXPECT_EQ(ev["failed_requests"], 1);
  ASSERT_EQ(ev["failures"].size(), 2u);
  EXPECT_EQ(ev["failures"][0]["retried_ok"], false) << ev["failures"].dump(2);
  EXPECT_EQ(ev["failures"][1]["retry"], true) << ev["failures"].dump(2);
  // The request as torch.OutOfMemoryError prints it ("Tried to allocate 8.00 GiB"): the
  // caching allocator rounds large requests up to 2 MiB. Needs the analyzer change that makes
  // `requested` the framework's request.
  const uint64_t rounded = (request + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
  EXPECT_EQ(ev["requested"], rounded) << ev.dump(2);
}

// Issue 28: a stream-ordered pool keeps what was freed reserved, and more than was ever live when
// requests grow (the fake pool does not merge free blocks, as the real one may not). The shim
// samples the pool beside the device's account, and memory-coverage counts the pool's reserved
// bytes as seen: no gap. The job's PYTORCH_CUDA_ALLOC_CONF is recorded with the process.
TEST(DriverCapture, PoolReservedMemoryIsSampledAndCountsAsSeen) {
  constexpr uint64_t kGiB = 1ull << 30;
  Traced t = record_program("pool_growth", {program("pool_growth")},
                            {{"FAKECUDA_MEM", std::to_string(16 * kGiB)},
                             {"CUPROBE_MEM_SAMPLE_MS", "1"},
                             {"PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync"}});
  ASSERT_EQ(t.r.status, 0) << t.r.out << t.r.err;
  EXPECT_EQ(t.process()["environment"]["PYTORCH_CUDA_ALLOC_CONF"], "backend:cudaMallocAsync") << t.process().dump();
  auto pool_samples = t.samples("cudaMemPoolGetAttribute");
  ASSERT_GE(pool_samples.size(), 4u) << "reserved and used at each sample after the first pooled allocation";
  uint64_t reserved_max = 0;
  for (const auto& s : pool_samples) {
    EXPECT_EQ(s["ret"], 0) << s.dump();
    if (s["attr"] == 5) reserved_max = std::max<uint64_t>(reserved_max, s["value"].get<uint64_t>());
  }
  EXPECT_EQ(reserved_max, 6 * kGiB) << "1 + 2 + 3 GiB: a larger request reuses no smaller free block";
  // The device's account saw the pool's 6 GiB in use at exit (and the last 1 MiB cudaMalloc), with
  // 3 GiB the most ever live in the pool.
  auto samples = t.samples("cudaMemGetInfo");
  ASSERT_FALSE(samples.empty());
  EXPECT_EQ(samples.back()["total"].get<uint64_t>() - samples.back()["free"].get<uint64_t>(), 6 * kGiB + (1u << 20));

  RunResult a = run({cuprobe_bin(), "analyze", "--json", t.dir});
  ASSERT_NE(a.status, 2) << a.err;
  json report = json::parse(a.out);
  for (const auto& f : report["findings"]) {
    EXPECT_NE(f["rule"], "memory-coverage") << "the pool's reserved memory was seen: " << f.dump(2);
  }
  // The same trace with the pool samples left out (a trace of an older shim) falls back on the
  // pool's peak of live allocations, 3 GiB: a 3 GiB gap, reported. What the samples change.
  std::string without = fresh_dir("pool_growth_unsampled") + ".jsonl";
  {
    std::ofstream out(without);
    for (const auto& line : t.lines) {
      if (line.value("sample", false) && line.value("api", "") == "cudaMemPoolGetAttribute") continue;
      out << line.dump() << "\n";
    }
  }
  RunResult b = run({cuprobe_bin(), "analyze", "--json", without});
  ASSERT_NE(b.status, 2) << b.err;
  bool gap = false;
  const json unsampled = json::parse(b.out);
  for (const auto& f : unsampled["findings"]) gap = gap || f["rule"] == "memory-coverage";
  EXPECT_TRUE(gap) << b.out;
}

// Issue 28: an out-of-memory failure of a pool request that the pool's free memory would have
// served, had it been in one piece: fragmentation in the pool, told from the pool sample the shim
// takes right after the failure, not "live allocations fill the device".
TEST(DriverCapture, APoolThatHoldsEnoughInPiecesIsFragmentation) {
  constexpr uint64_t kGiB = 1ull << 30;
  Traced t = record_program("pool_oom", {program("pool_growth"), "oom"},
                            {{"FAKECUDA_MEM", std::to_string(7 * kGiB)}, {"CUPROBE_MEM_SAMPLE_MS", "1"}});
  ASSERT_EQ(t.r.status, 1) << t.r.out << t.r.err;
  RunResult a = run({cuprobe_bin(), "analyze", "--json", t.dir});
  ASSERT_NE(a.status, 2) << a.err;
  const json report = json::parse(a.out);
  ASSERT_FALSE(report["findings"].empty()) << a.out;
  const json& oom = report["findings"][0];
  ASSERT_EQ(oom["rule"], "oom-postmortem") << a.out;
  EXPECT_EQ(oom["evidence"]["cause"], "fragmentation") << oom.dump(2);
  EXPECT_EQ(oom["evidence"]["pool_reserved"], 6 * kGiB) << oom.dump(2);
  EXPECT_EQ(oom["evidence"]["pool_live"], 0) << oom.dump(2);
  EXPECT_NE(oom["message"].get<std::string>().find("fragmentation in the stream-ordered pool"), std::string::npos);
  EXPECT_NE(oom["fix"].get<std::string>().find("empty_cache"), std::string::npos) << oom["fix"];
}

}  // namespace
}  // namespace cuprobe::test
