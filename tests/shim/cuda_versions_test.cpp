// One shim binary in processes of either CUDA runtime major version (issue 25): the same program
// built as for CUDA 12 (linked against the libcudart.so.12 double, CUDA 12's cudaDeviceProp and
// _v2 names) and for CUDA 13 is traced by the same libcuprobe.so; the device descriptions come
// from the driver and are the same in both, the version-dependent calls are recorded under the
// names the program called with the right arguments, and a process that uses only the driver is
// described too. What the driver cannot answer is left out of the description, never made up.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "support/run.h"

namespace cuprobe::test {
namespace {

using nlohmann::json;

constexpr const char* kName = "NVIDIA H200 (cuprobe double)";
constexpr uint64_t kMem = 150754820096ull;  // what an H200 reports

Env device_env() { return {{"FAKECUDA_DEVICE_NAME", kName}, {"FAKECUDA_MEM", std::to_string(kMem)}}; }

std::map<std::string, std::vector<std::string>> printed(const std::string& out) {
  std::map<std::string, std::vector<std::string>> m;
  std::istringstream in(out);
  std::string key, rest;
  while (in >> key && std::getline(in, rest)) m[key].push_back(rest.substr(rest.find_first_not_of(' ')));
  return m;
}

std::string uuid_of(int device) {
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", 0x10 * device + i);
    hex += b;
    if (i == 3 || i == 5 || i == 7 || i == 9) hex += '-';
  }
  return "GPU-" + hex;
}

// A field that is absent reads as null and fails the comparison (never an abort on a const json).
json field(const json& j, const char* key) { return j.is_object() ? j.value(key, json()) : json(); }

void expect_device(const json& d, int index) {
  SCOPED_TRACE("device " + std::to_string(index));
  EXPECT_EQ(field(d, "index"), index);
  EXPECT_EQ(field(d, "name"), kName);
  EXPECT_EQ(field(d, "total_mem"), kMem);
  EXPECT_EQ(field(d, "uuid"), uuid_of(index));
  char pci[16];
  std::snprintf(pci, sizeof pci, "0000:%02x:00.0", 0x18 + index);
  EXPECT_EQ(field(d, "pci_bus_id"), pci);
  EXPECT_EQ(field(d, "cc"), "9.0");
  EXPECT_EQ(field(d, "multiprocessors"), 132);
}

struct Case {
  int major;
  int runtime_version;
  std::string properties_api;  // what that version's headers compile cudaGetDeviceProperties to
  std::string elapsed_api;
};

class CudaVersions : public ::testing::TestWithParam<Case> {};

TEST_P(CudaVersions, SameShimRecordsTheDevicesAndTheVersionDependentCalls) {
  const Case& c = GetParam();
  std::string prog = program("cuda_versions_" + std::to_string(c.major));
  std::string dir = fresh_dir("cuda" + std::to_string(c.major));
  RunResult r = record(dir, {prog}, device_env());
  ASSERT_EQ(r.status, 0) << r.out << r.err;

  // The program's own view: the runtime it loaded, and its cudaDeviceProp in its own layout.
  auto seen = printed(r.out);
  ASSERT_EQ(seen["runtime"].size(), 1u) << r.out;
  EXPECT_EQ(seen["runtime"][0], std::to_string(c.runtime_version));
  ASSERT_EQ(seen["prop"].size(), 2u) << r.out;
  EXPECT_EQ(seen["prop"][0], std::string("1 0|") + kName + "|25|132|9");
  EXPECT_EQ(seen["prop"][1], std::string("0 0|") + kName + "|24|132|9");
  EXPECT_EQ(seen["entry"], std::vector<std::string>{"0 1"});
  EXPECT_EQ(seen["elapsed"], std::vector<std::string>{"0"});

  auto lines = dump(dir);
  auto procs = of_type(lines, "process");
  ASSERT_EQ(procs.size(), 1u);
  json& p = procs[0];
  EXPECT_EQ(field(p, "cuda_runtime_version"), c.runtime_version);
  EXPECT_EQ(field(p, "cuda_driver_version"), 13000);
  EXPECT_EQ(p["stats"]["missing_symbols"], 0);
  ASSERT_EQ(p["devices"].size(), 2u) << p.dump();
  std::map<int, json> by_index;
  for (const auto& d : p["devices"]) by_index[field(d, "index").is_number() ? d["index"].get<int>() : -1] = d;
  ASSERT_EQ(by_index.size(), 2u);
  expect_device(by_index[0], 0);
  expect_device(by_index[1], 1);

  // The properties query under the name the program called, with its device.
  auto props = of_type(lines, "call", c.properties_api);
  ASSERT_EQ(props.size(), 2u) << c.properties_api;
  EXPECT_EQ(props[0]["of_device"], 1);
  EXPECT_EQ(props[1]["of_device"], 0);
  EXPECT_EQ(props[0]["ret"], 0);
  std::string other_props = c.major == 12 ? "cudaGetDeviceProperties" : "cudaGetDeviceProperties_v2";
  EXPECT_TRUE(of_type(lines, "call", other_props).empty());

  // The version-less lookup resolves as of the runtime's own version, and hands back a recording
  // wrapper: the program's call through the pointer is in the trace.
  auto entries = of_type(lines, "call", "cudaGetDriverEntryPoint");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0]["symbol"], "cuMemAlloc");
  EXPECT_EQ(entries[0]["version"], c.runtime_version);
  auto driver_allocs = of_type(lines, "call", "cuMemAlloc_v2");
  ASSERT_EQ(driver_allocs.size(), 1u);
  EXPECT_EQ(driver_allocs[0]["size"], 4096);

  auto elapsed = of_type(lines, "call", c.elapsed_api);
  ASSERT_EQ(elapsed.size(), 1u) << c.elapsed_api;
  EXPECT_EQ(elapsed[0]["ret"], 0);
  EXPECT_GE(elapsed[0]["ms"].get<double>(), 0.0);

  // The shim's own queries (runtime version, device description) are not the program's calls.
  EXPECT_EQ(of_type(lines, "call", "cudaRuntimeGetVersion").size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Runtimes, CudaVersions,
                         ::testing::Values(Case{12, 12080, "cudaGetDeviceProperties_v2", "cudaEventElapsedTime_v2"},
                                           Case{13, 13001, "cudaGetDeviceProperties", "cudaEventElapsedTime"}),
                         [](const auto& info) { return "Cuda" + std::to_string(info.param.major); });

TEST(CudaVersionsDriver, DriverOnlyProcessIsDescribedFromTheDriver) {
  std::string dir = fresh_dir("driver-only");
  RunResult r = record(dir, {program("driver_only")}, device_env());
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "alloc 0\n");
  auto lines = dump(dir);
  auto procs = of_type(lines, "process");
  ASSERT_EQ(procs.size(), 1u);
  json& p = procs[0];
  EXPECT_FALSE(p.contains("cuda_runtime_version")) << "no runtime in this process";
  EXPECT_EQ(field(p, "cuda_driver_version"), 13000);
  ASSERT_EQ(p["devices"].size(), 1u) << p.dump();
  expect_device(p["devices"][0], 0);
}

TEST(CudaVersionsDriver, WhatTheDriverDoesNotAnswerIsLeftOut) {
  // A driver without the UUID queries: the rest of the description, no UUID.
  std::string dir = fresh_dir("driver-partial");
  Env env = device_env();
  env.push_back({"LD_LIBRARY_PATH", build_path("tests/doubles/driver-partial")});
  RunResult r = record(dir, {program("driver_only")}, env);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  auto p = of_type(dump(dir), "process").at(0);
  ASSERT_EQ(p["devices"].size(), 1u) << p.dump();
  const json& d = p["devices"][0];
  EXPECT_FALSE(d.contains("uuid")) << d.dump();
  EXPECT_EQ(field(d, "name"), kName);
  EXPECT_EQ(field(d, "pci_bus_id"), "0000:18:00.0");

  // A driver that was never initialised answers nothing: no device record at all.
  std::string dir2 = fresh_dir("driver-uninitialised");
  RunResult r2 = record(dir2, {program("driver_direct")}, device_env());
  ASSERT_EQ(r2.status, 0) << r2.out << r2.err;
  auto p2 = of_type(dump(dir2), "process").at(0);
  EXPECT_TRUE(p2["devices"].empty()) << p2.dump();
}

}  // namespace
}  // namespace cuprobe::test
