// The shim against CUDA runtime libraries: every hooked call recorded with the return code the
// program saw, argument fields, counted launches, the process header, the real libcudart.so.13
// without a GPU, private loading, and a missing real function.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "support/run.h"
#include "trace/reader.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Observed {
  std::string api;
  int ret;
  bool counted;
};

std::vector<Observed> parse_observed(const std::string& out) {
  std::vector<Observed> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    Observed o;
    std::string tag;
    ls >> o.api >> o.ret >> tag;
    o.counted = tag == "counted";
    v.push_back(o);
  }
  return v;
}

// The program's own view of each call must match the trace call for call.
void expect_calls_match(const std::vector<Observed>& seen, const std::vector<json>& lines) {
  auto calls = of_type(lines, "call");
  std::vector<Observed> recorded;
  size_t i = 0;
  for (const auto& o : seen) {
    if (o.counted) continue;
    ASSERT_LT(i, calls.size()) << "trace has fewer calls than the program made; missing " << o.api;
    // The shim itself never appears: its own queries go to the real functions directly.
    EXPECT_EQ(calls[i]["api"], o.api) << "call #" << i;
    EXPECT_EQ(calls[i]["ret"], o.ret) << o.api;
    ++i;
  }
  EXPECT_EQ(i, calls.size()) << "trace has more calls than the program made";
  std::map<std::string, int> counted_seen;
  for (const auto& o : seen) {
    if (o.counted) counted_seen[o.api]++;
  }
  std::map<std::string, int> counted_trace;
  for (const auto& c : of_type(lines, "count")) counted_trace[c["api"]] += c["calls"].get<int>();
  EXPECT_EQ(counted_seen, counted_trace);
}

const json* first_call(const std::vector<json>& lines, const std::string& api) {
  for (const auto& l : lines) {
    if (l.value("type", "") == "call" && l.value("api", "") == api) return &l;
  }
  return nullptr;
}

TEST(CudartCapture, EveryHookedCallOfTheDoubleIsRecordedWithItsFields) {
  std::string dir = fresh_dir("exercise");
  RunResult r = record(dir, {program("exercise_cudart")});
  ASSERT_EQ(r.status, 0) << r.err;
  auto seen = parse_observed(r.out);
  ASSERT_GE(seen.size(), 50u);
  auto lines = dump(dir);
  expect_calls_match(seen, lines);

  auto procs = of_type(lines, "process");
  ASSERT_EQ(procs.size(), 1u);
  const json& p = procs[0];
  EXPECT_EQ(p["state"], "exited");
  EXPECT_NE(p["cmdline"][0].get<std::string>().find("exercise_cudart"), std::string::npos);
  EXPECT_EQ(p["cuda_runtime_version"], 13001);
  EXPECT_EQ(p["cuda_driver_version"], 13000);
  EXPECT_EQ(p["launch_events"], 0);
  ASSERT_EQ(p["devices"].size(), 1u);
  EXPECT_EQ(p["devices"][0]["name"], "cuprobe test double");  // the driver double's description
  EXPECT_EQ(p["devices"][0]["total_mem"], 80ull << 30);
  EXPECT_EQ(p["devices"][0]["pci_bus_id"], "0000:18:00.0");
  EXPECT_EQ(p["devices"][0]["uuid"], "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
  EXPECT_EQ(p["stats"]["dropped_events"], 0);
  EXPECT_EQ(p["stats"]["missing_symbols"], 0);

  const json* malloc_call = first_call(lines, "cudaMalloc");
  ASSERT_NE(malloc_call, nullptr);
  EXPECT_EQ((*malloc_call)["size"], 1 << 20);
  EXPECT_EQ((*malloc_call)["device"], 0);
  std::string ptr = (*malloc_call)["ptr"];
  EXPECT_EQ(ptr.rfind("0x7f", 0), 0u) << ptr;
  // The matching free says how much it released.
  bool freed = false;
  for (const auto& c : of_type(lines, "call", "cudaFree")) {
    if (c["ptr"] == ptr) {
      EXPECT_EQ(c["size"], 1 << 20);
      freed = true;
    }
  }
  EXPECT_TRUE(freed);

  const json* pitch = first_call(lines, "cudaMallocPitch");
  ASSERT_NE(pitch, nullptr);
  EXPECT_EQ((*pitch)["pitch"], 1024);
  EXPECT_EQ((*pitch)["size"], 1024 * 10);
  const json* m3d = first_call(lines, "cudaMalloc3D");
  ASSERT_NE(m3d, nullptr);
  EXPECT_EQ((*m3d)["size"], 512 * 4 * 2);
  const json* async_ptsz = first_call(lines, "cudaMallocAsync_ptsz");
  ASSERT_NE(async_ptsz, nullptr);
  EXPECT_EQ((*async_ptsz)["size"], 8192);
  EXPECT_TRUE(async_ptsz->contains("stream"));
  const json* memcpy_call = first_call(lines, "cudaMemcpyAsync");
  ASSERT_NE(memcpy_call, nullptr);
  EXPECT_EQ((*memcpy_call)["size"], 4096);
  EXPECT_EQ((*memcpy_call)["kind"], 2);  // cudaMemcpyDeviceToHost
  const json* entry = first_call(lines, "cudaGetDriverEntryPointByVersion");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ((*entry)["symbol"], "cuMemCreate");
  EXPECT_EQ((*entry)["version"], 12000);
  const json* elapsed = first_call(lines, "cudaEventElapsedTime");
  ASSERT_NE(elapsed, nullptr);
  EXPECT_GE((*elapsed)["ms"].get<double>(), 0.0);

  // Timestamps are ordered and lie inside the process's lifetime.
  uint64_t prev = 0;
  for (const auto& c : of_type(lines, "call")) {
    uint64_t ts = c["ts_ns"];
    EXPECT_GE(ts, prev);
    EXPECT_GE(ts, p["start_ns"].get<uint64_t>());
    EXPECT_LE(ts + c["dur_ns"].get<uint64_t>(), p["end_ns"].get<uint64_t>());
    prev = ts;
  }
}

TEST(CudartCapture, RealRuntimeWithoutGpuRecordsEveryCallWithItsError) {
  std::string prog = program("exercise_cudart_real");
  if (std::string(CUPROBE_REAL_CUDART).empty() || !fs::exists(prog)) GTEST_SKIP() << "no real libcudart.so.13";
  std::string dir = fresh_dir("real");
  RunResult r = record(dir, {prog});
  ASSERT_EQ(r.status, 0) << r.err;
  auto seen = parse_observed(r.out);
  ASSERT_GE(seen.size(), 50u);
  auto lines = dump(dir);
  expect_calls_match(seen, lines);
  if (seen.front().ret == 35) {
    // No GPU (cudaErrorInsufficientDriver): every call fails the same way, and is still traced.
    for (const auto& c : of_type(lines, "call")) {
      if (c["api"] == "cudaGetLastError" || c["api"] == "cudaPeekAtLastError") continue;
      EXPECT_EQ(c["ret"], 35) << c["api"];
    }
  }
}

TEST(CudartCapture, PrivatelyLoadedRuntimeIsTracedAndTheMappedCopyIsCalled) {
  std::string lib = program("libprivate_user.so");
  Env lure = {{"LD_LIBRARY_PATH", fake_dir('b')}};  // a by-name load would find flavor 2 here
  RunResult plain = run({program("private_loader"), lib}, lure);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(plain.out, "rc 0 version 13001\n");

  std::string dir = fresh_dir("private");
  RunResult r = record(dir, {program("private_loader"), lib}, lure);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "rc 0 version 13001\n");
  auto lines = dump(dir);
  const json* m = first_call(lines, "cudaMalloc");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ((*m)["size"], 12345);
  const json* v = first_call(lines, "cudaRuntimeGetVersion");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ((*v)["version"], 13001);
  EXPECT_EQ(of_type(lines, "process")[0]["cuda_runtime_version"], 13001);
}

TEST(CudartCapture, MissingRealFunctionReturnsTheRuntimesErrorAndIsCounted) {
  std::string dir = fresh_dir("missing");
  RunResult r = record(dir, {program("missing_symbol")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "302\n");  // cudaErrorSharedObjectSymbolNotFound
  auto lines = dump(dir);
  EXPECT_EQ(of_type(lines, "process")[0]["stats"]["missing_symbols"], 1);
  auto calls = of_type(lines, "call", "cudaMallocAsync");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["ret"], 302);
  EXPECT_NE(r.err.find("1 calls without a real function"), std::string::npos) << r.err;
}

TEST(CudartCapture, KernelLaunchesAreCountedPerThreadAndDevice) {
  std::string dir = fresh_dir("launches");
  RunResult r = record(dir, {program("launches")});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = dump(dir);
  EXPECT_TRUE(of_type(lines, "call", "cudaLaunchKernel").empty());
  std::map<std::pair<std::string, int>, uint64_t> by_api_device;
  std::set<uint64_t> tids;
  for (const auto& c : of_type(lines, "count")) {
    by_api_device[{c["api"], c["device"]}] += c["calls"].get<uint64_t>();
    tids.insert(c["tid"].get<uint64_t>());
  }
  EXPECT_EQ((by_api_device[{"cudaLaunchKernel", 0}]), 1000u);
  EXPECT_EQ((by_api_device[{"cudaLaunchKernel", 1}]), 250u);
  EXPECT_EQ((by_api_device[{"cudaLaunchKernelExC", 0}]), 1u);
  EXPECT_EQ(tids.size(), 3u);
}

TEST(CudartCapture, LaunchEventsOnRequest) {
  std::string dir = fresh_dir("launch-events");
  RunResult r = record(dir, {program("launches")}, {}, {"--launch-events"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = dump(dir);
  auto launches = of_type(lines, "call", "cudaLaunchKernel");
  EXPECT_EQ(launches.size(), 1250u);
  EXPECT_EQ(launches[0]["grid_x"], 4);
  EXPECT_EQ(launches[0]["block_x"], 128);
  EXPECT_TRUE(of_type(lines, "count").empty());
  EXPECT_EQ(of_type(lines, "process")[0]["launch_events"], 1);
}

TEST(CudartCapture, StickyErrorsPassThroughUnchanged) {
  std::string dir = fresh_dir("sticky");
  // The second cudaMalloc fails with cudaErrorMemoryAllocation; the program then sees it again
  // from cudaPeekAtLastError and cudaGetLastError, exactly as without the shim.
  RunResult r = record(dir, {program("exercise_cudart")}, {{"FAKECUDA_FAIL", "cudaMallocPitch:2"}});
  ASSERT_EQ(r.status, 0) << r.err;
  auto seen = parse_observed(r.out);
  auto lines = dump(dir);
  expect_calls_match(seen, lines);
  EXPECT_EQ(first_call(lines, "cudaMallocPitch")->at("ret"), 2);
  EXPECT_EQ(first_call(lines, "cudaPeekAtLastError")->at("ret"), 2);
  EXPECT_EQ(first_call(lines, "cudaGetLastError")->at("ret"), 2);
}

TEST(CudartCapture, DisabledShimPassesThroughAndWritesNothing) {
  std::string dir = fresh_dir("disabled");
  RunResult r = record(dir, {program("exercise_cudart")}, {{"CUPROBE_DISABLE", "1"}});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GE(parse_observed(r.out).size(), 50u);
  EXPECT_TRUE(fs::is_empty(dir));
  EXPECT_NE(r.err.find("no trace in"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cuprobe::test
