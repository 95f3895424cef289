// Call stacks: the native chain named in order (also from threads and from a library loaded with
// dlopen), Python frames through ctypes with the GIL held and released, on every interpreter of
// CUPROBE_TEST_PYTHONS, the stack modes, offline symbolization from another directory, and call
// sites in findings.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Recorded {
  std::vector<json> lines;
  std::map<int, json> stacks;  // by id
  std::vector<json> mallocs;
  std::vector<std::string> functions(int stack) const {
    std::vector<std::string> out;
    for (const auto& f : stacks.at(stack)["native"]) out.push_back(f.value("function", ""));
    return out;
  }
};

Recorded record_stacks(const std::string& tag, const std::vector<std::string>& argv,
                       const std::vector<std::string>& opts = {}, const std::vector<std::string>& dump_opts = {}) {
  Recorded r;
  std::string dir = fresh_dir(tag);
  RunResult res = record(dir, argv, shim_env(), opts);
  EXPECT_EQ(res.status, 0) << res.err;
  r.lines = dump(dir, dump_opts);
  for (const auto& s : of_type(r.lines, "stack")) r.stacks[s["id"].get<int>()] = s;
  r.mallocs = of_type(r.lines, "call", "cudaMalloc");
  return r;
}

json malloc_of(const Recorded& r, uint64_t size) {
  for (const auto& c : r.mallocs)
    if (c["size"] == size) return c;
  return json();
}

TEST(Stacks, NativeChainIsNamedInOrderFromThreadsAndDlopenedLibraries) {
  Recorded r = record_stacks("chain", {program("stack_chain")});
  json main_call = malloc_of(r, 2 << 20);
  ASSERT_TRUE(main_call.contains("stack")) << main_call.dump();
  auto f = r.functions(main_call["stack"]);
  ASSERT_GE(f.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(f.begin(), f.begin() + 4),
            (std::vector<std::string>{"chain_three", "chain_two", "chain_one", "main"}))
      << "the shim's own frames are left out; the caller comes first";
  json first_native = r.stacks.at(main_call["stack"])["native"][0];
  EXPECT_EQ(first_native["module"], "stack_chain");
  EXPECT_NE(first_native.value("file", "").find("stack_chain.cpp"), std::string::npos) << first_native.dump();

  std::set<int> thread_stacks;
  int thread_calls = 0;
  for (const auto& c : r.mallocs) {
    if (c["size"] != 3 << 20) continue;
    ++thread_calls;
    thread_stacks.insert(c["stack"].get<int>());
  }
  EXPECT_EQ(thread_calls, 3);
  ASSERT_EQ(thread_stacks.size(), 1u) << "the same stack from three threads is stored once";
  auto tf = r.functions(*thread_stacks.begin());
  ASSERT_GE(tf.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(tf.begin(), tf.begin() + 3),
            (std::vector<std::string>{"chain_three", "chain_two", "chain_one"}));

  json plugin = malloc_of(r, 4 << 20);
  ASSERT_TRUE(plugin.contains("stack"));
  json top = r.stacks.at(plugin["stack"])["native"][0];
  EXPECT_EQ(top["function"], "plugin_alloc");
  EXPECT_EQ(top["module"], "libstack_plugin.so") << "a library loaded after the start is in the module map";
  EXPECT_EQ(r.functions(plugin["stack"])[1], "main");
}

// The interpreters the Python tests run under: CUPROBE_TEST_PYTHONS (colon-separated), else those
// found when the build was configured (tests/CMakeLists.txt: the system python3 and pyenv's CPython
// 3.9 and later; 3.9 for a version without a layout). One that is not there (a build tree copied to another machine) is left out; at
// least one must be.
struct Interpreter {
  std::string path;
  int minor = 0;
  bool free_threaded = false;
  std::string version;
  // Python frames are read from the interpreter's structures when it released the GIL.
  bool frames_without_gil() const { return !free_threaded && minor >= 10 && minor <= 14; }
};

std::vector<Interpreter> test_pythons() {
  const char* env = getenv("CUPROBE_TEST_PYTHONS");
  std::string list = env && *env ? env : CUPROBE_DEFAULT_TEST_PYTHONS;
  std::vector<Interpreter> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    std::string path = list.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? list.size() + 1 : end + 1;
    if (path.empty()) continue;
    RunResult r = run({path, "-c",
                       "import sys, sysconfig; print(sys.version_info[1], "
                       "int(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))), sys.version.split()[0])"});
    if (r.status != 0) {
      EXPECT_TRUE(env == nullptr || *env == 0) << path << " from CUPROBE_TEST_PYTHONS does not run: " << r.err;
      continue;
    }
    Interpreter i;
    i.path = path;
    std::istringstream in(r.out);
    int ft = 0;
    in >> i.minor >> ft >> i.version;
    i.free_threaded = ft != 0;
    out.push_back(i);
  }
  EXPECT_FALSE(out.empty()) << "no Python interpreter among " << list;
  return out;
}

int marker_line(const std::string& script, const std::string& marker) {
  std::ifstream in(script);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(marker) != std::string::npos) return n;
  return 0;
}

// stack_script.py under one interpreter (its own function, so that a failed assertion ends the
// checks of this interpreter only).
void check_script(const Interpreter& py, const std::string& script, int marker, int marker_nogil) {
  Recorded r = record_stacks("python", {py.path, script, build_path("tests/programs/libstack_plugin.so")});
  json header = of_type(r.lines, "process").at(0);
  uint64_t refused = header["stats"].value("python_frames_refused", uint64_t(0));
  json with = malloc_of(r, 2 << 20), without = malloc_of(r, 3 << 20);
  ASSERT_TRUE(with.contains("stack"));
  ASSERT_TRUE(without.contains("stack"));
  const json& st = r.stacks.at(with["stack"]);
  const json& st2 = r.stacks.at(without["stack"]);
  EXPECT_EQ(st["native"][0]["function"], "helper_alloc");
  EXPECT_EQ(st2["native"][0]["function"], "helper_alloc");
  if (py.free_threaded) {
    EXPECT_TRUE(st["python"].empty()) << "a free-threaded build is not read: native frames only";
    EXPECT_TRUE(st2["python"].empty());
    EXPECT_EQ(refused, 2u);
    return;
  }
  if (py.minor < 10) {  // no PyGC_Disable, no known layout: native frames only, and no fault
    EXPECT_TRUE(st["python"].empty()) << st.dump();
    EXPECT_TRUE(st2["python"].empty()) << st2.dump();
    EXPECT_EQ(refused, 1u) << "unknown version";
    return;
  }
  ASSERT_FALSE(st["python"].empty()) << st.dump();
  EXPECT_EQ(fs::path(st["python"][0]["file"].get<std::string>()).filename(), "stack_script.py");
  EXPECT_EQ(st["python"][0]["function"], "allocate_with_gil");
  EXPECT_EQ(st["python"][0]["line"], marker);
  EXPECT_EQ(st["python"].size(), 1u) << "Python frames stop at the application's own innermost line";

  // ctypes.CDLL released the GIL (as PyTorch does around its operators): the thread's frames are
  // read from the interpreter's own structures, with the layout of its version.
  if (!py.frames_without_gil()) {
    EXPECT_TRUE(st2["python"].empty()) << "no frame layout for Python 3." << py.minor << ": native frames only";
    EXPECT_EQ(refused, 1u) << "unknown version";
    return;
  }
  EXPECT_EQ(refused, 0u);
  ASSERT_FALSE(st2["python"].empty()) << st2.dump();
  EXPECT_EQ(fs::path(st2["python"][0]["file"].get<std::string>()), fs::path(script));
  EXPECT_EQ(st2["python"][0]["function"], "allocate_without_gil");
  EXPECT_EQ(st2["python"][0]["line"], marker_nogil);
  EXPECT_EQ(st2["python"].size(), 1u);
}

TEST(Stacks, PythonLinesWithAndWithoutTheGil) {
  std::string script = program("stack_script.py");
  int marker = marker_line(script, "STACK-LINE-GIL"), marker_nogil = marker_line(script, "STACK-LINE-NOGIL");
  ASSERT_GT(marker, 0);
  ASSERT_GT(marker_nogil, 0);
  for (const Interpreter& py : test_pythons()) {
    SCOPED_TRACE(py.path + " (" + py.version + (py.free_threaded ? ", free-threaded)" : ")"));
    check_script(py, script, marker, marker_nogil);
  }
}

// A package's frames down to the application's, under one interpreter.
void check_chain(const Interpreter& py, const std::string& dir) {
  std::string out = fresh_dir("pylib-trace");
  RunResult res = record(out, {py.path, dir + "/app.py", build_path("tests/programs/libstack_plugin.so")},
                         shim_env({{"PYTHONPATH", dir + "/site-packages"}}), {});
  ASSERT_EQ(res.status, 0) << res.err;
  auto stacks = of_type(dump(out), "stack");
  ASSERT_EQ(stacks.size(), 1u);
  std::vector<std::string> fns;
  for (const auto& f : stacks[0]["python"])
    fns.push_back(f["function"].get<std::string>() + ":" + std::to_string(f["line"].get<int>()));
  if (!py.frames_without_gil()) {
    EXPECT_TRUE(fns.empty());
    return;
  }
  EXPECT_EQ(fns, (std::vector<std::string>{"inner:5", "outer:8", "main:5"}));
  ASSERT_EQ(stacks[0]["python"].size(), 3u);
  EXPECT_EQ(stacks[0]["python"][0]["file"], dir + "/site-packages/fakelib/__init__.py");
  EXPECT_EQ(stacks[0]["python"][2]["file"], dir + "/app.py");
}

TEST(Stacks, PythonFramesRunThroughLibrariesToTheApplicationsLine) {
  // A package's frames (under site-packages) are kept until the first frame of the application;
  // the GIL is released (ctypes.CDLL), so they are read from the interpreter's structures.
  std::string dir = fresh_dir("pylib");
  fs::create_directories(dir + "/site-packages/fakelib");
  // Each call sits below its function's first line, and `inner` is a method (its qualified name
  // is not its name): a line or a name read from the wrong place shows.
  std::ofstream(dir + "/site-packages/fakelib/__init__.py")
      << "import ctypes\n"
         "class Lib:\n"
         "    def inner(self, lib):\n"
         "        size = ctypes.c_size_t(2 << 20)\n"
         "        return lib.helper_alloc(size)\n"
         "def outer(lib):\n"
         "    x = Lib()\n"
         "    return x.inner(lib)\n";
  std::ofstream(dir + "/app.py") << "import ctypes, sys\n"
                                    "import fakelib\n"
                                    "def main():\n"
                                    "    lib = ctypes.CDLL(sys.argv[1])\n"
                                    "    fakelib.outer(lib)\n"
                                    "main()\n";
  for (const Interpreter& py : test_pythons()) {
    SCOPED_TRACE(py.path + " (" + py.version + ")");
    check_chain(py, dir);
  }
}

TEST(Stacks, ModesChooseWhichCallsCarryStacks) {
  std::vector<std::string> probe = {program("fault_probe"), "malloc:1000", "malloc:4194304", "malloc:2097152", "sync"};
  auto has_stack = [](const Recorded& r) {
    std::string s;
    for (const auto& c : of_type(r.lines, "call")) s += c.contains("stack") ? '1' : '.';
    return s;
  };
  EXPECT_EQ(has_stack(record_stacks("off", probe, {"--stacks", "off"})), "....");
  EXPECT_EQ(has_stack(record_stacks("alloc", probe)), ".11.") << "default: allocations of 1 MiB and more";
  EXPECT_EQ(has_stack(record_stacks("min", probe, {"--stack-min-bytes", "3MiB"})), ".1..");
  EXPECT_EQ(has_stack(record_stacks("all", probe, {"--stacks", "all"})), "1111");
  EXPECT_EQ(has_stack(record_stacks("errors", probe, {"--stacks", "errors", "--fault", "alloc:OOM,nth=3"})), "..1.")
      << "errors: failed and injected calls only";
  Recorded shallow = record_stacks("depth", probe, {"--stack-depth", "1"});
  for (const auto& [id, s] : shallow.stacks) EXPECT_EQ(s["native"].size(), 1u);
  RunResult bad = record(fresh_dir("badmode"), probe, shim_env(), {"--stacks", "some"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--stacks expects"), std::string::npos);
}

TEST(Stacks, SymbolizedOfflineFromAnotherDirectory) {
  // The program runs from one directory, which is then moved: its binaries are found again
  // through --symbols, and only there.
  std::string base = fresh_dir("moved");
  fs::create_directories(base + "/a");
  for (const char* f : {"stack_chain", "libstack_plugin.so"}) {
    fs::copy_file(build_path(std::string("tests/programs/") + f), base + "/a/" + f);
  }
  std::string dir = base + "/trace";
  RunResult res = record(dir, {base + "/a/stack_chain"}, shim_env({{"LD_LIBRARY_PATH", fake_dir('a')}}), {});
  ASSERT_EQ(res.status, 0) << res.err;
  fs::rename(base + "/a", base + "/b");
  auto names = [&](const std::vector<std::string>& opts) {
    std::set<std::string> fns;
    for (const auto& s : of_type(dump(dir, opts), "stack"))
      for (const auto& f : s["native"]) fns.insert(f.value("function", ""));
    return fns;
  };
  EXPECT_FALSE(names({}).count("chain_three")) << "the binary is gone from its recorded path";
  EXPECT_TRUE(names({"--symbols", base + "/b"}).count("chain_three"));
  EXPECT_TRUE(names({"--symbols", base + "/b"}).count("plugin_alloc"));
  EXPECT_FALSE(names({"--no-symbols", "--symbols", base + "/b"}).count("chain_three"));
}

TEST(Stacks, FindingsNameTheirCallSites) {
  std::string dir = fresh_dir("sites");
  RunResult res = record(dir, {program("stack_chain")}, shim_env(), {"--mem-cap", "6MiB"});
  ASSERT_EQ(res.status, 0) << res.err;
  RunResult a = run({cuprobe_bin(), "analyze", "--json", dir});
  json rep = json::parse(a.out);
  bool found = false;
  for (const auto& f : rep["findings"]) {
    if (f["rule"] != "oom-postmortem") continue;
    found = true;
    ASSERT_FALSE(f["call_sites"].empty()) << f.dump();
    std::string first = f["call_sites"][0];
    EXPECT_EQ(first.rfind("the failed request: plugin_alloc", 0), 0u) << first << ": the decisive (last) failure";
    std::string all = f["call_sites"].dump();
    EXPECT_NE(all.find("chain_three"), std::string::npos) << all;
    EXPECT_NE(all.find("of the largest live allocations from"), std::string::npos) << all;
  }
  EXPECT_TRUE(found) << rep.dump();
  // The text report prints them under the finding.
  RunResult text = run({cuprobe_bin(), "analyze", dir});
  EXPECT_NE(text.out.find("    at the failed request: plugin_alloc"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("of the largest live allocations from: chain_three"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace cuprobe::test
