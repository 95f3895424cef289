// How call sites are written: the application's own Python line before library frames, library
// paths relative to site-packages, and stacks read back from cuprobe dump's JSON Lines. Native
// frames resolved from a real binary (tests/programs/inline_probe): file:line and inlined calls
// from its DWARF, from a separate debug file after stripping, and never through a shell.
#include "trace/symbolize.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/run.h"

namespace cuprobe::reader {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What inline_probe printed: the return address of its call from inlined code (the program's own
// virtual address) and the source lines that call sits on.
struct Probe {
  uint64_t ret = 0;
  int inner_line = 0;  // the call in inlined_step
  int outer_line = 0;  // inlined_step's call in outer_step
  uint64_t main_ret = 0;
  int main_line = 0;  // main's call of outer_step
};

Probe run_probe() {
  test::RunResult r = test::run({test::program("inline_probe")});
  EXPECT_EQ(r.status, 0) << r.err;
  Probe p;
  std::istringstream in(r.out);
  in >> std::hex >> p.ret >> std::dec >> p.inner_line >> p.outer_line;
  in >> std::hex >> p.main_ret >> std::dec >> p.main_line;
  EXPECT_NE(p.ret, 0u) << r.out;
  return p;
}

std::string probe_build_id() {
  std::ifstream in(test::program("inline_probe.build-id"));
  std::string id;
  in >> id;
  return id;
}

// A trace of one process that had `module` mapped at load bias 0, so that its addresses are the
// file's own.
std::unique_ptr<Trace> trace_with_module(const std::string& module, const std::string& build_id) {
  json process = {{"type", "process"}, {"pid", 7}};
  json mapped = {{"type", "module"},     {"pid", 7},      {"path", module},      {"start", "0x0"},
                 {"end", "0x100000000"}, {"bias", "0x0"}, {"build_id", build_id}};
  std::string path = test::fresh_dir("symbolize-module") + "/t.jsonl";
  std::ofstream(path) << process.dump() << "\n" << mapped.dump() << "\n";
  auto traces = open_traces(path);
  EXPECT_TRUE(traces) << traces.error().message;
  if (!traces || traces->empty()) return nullptr;
  return std::move((*traces)[0]);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The probe's call resolved in `module`: the inlined function with its line, inlined into
// outer_step at the line of the inlined call.
void expect_inlined_call(const Symbol& s, const Probe& p) {
  EXPECT_EQ(s.module, fs::path(s.module).filename().string());
  EXPECT_EQ(s.function.rfind("inlined_step", 0), 0u) << s.function;
  EXPECT_TRUE(ends_with(s.file, "inline_probe.cpp")) << s.file;
  EXPECT_EQ(s.line, p.inner_line);
  ASSERT_EQ(s.inlined_into.size(), 1u) << Symbolizer::text(s);
  EXPECT_EQ(s.inlined_into[0].function, "outer_step");
  EXPECT_TRUE(ends_with(s.inlined_into[0].file, "inline_probe.cpp")) << s.inlined_into[0].file;
  EXPECT_EQ(s.inlined_into[0].line, p.outer_line);
  std::string text = Symbolizer::text(s);
  EXPECT_NE(text.find(fmt::format("at inline_probe.cpp:{} inlined into outer_step at inline_probe.cpp:{} (",
                                  p.inner_line, p.outer_line)),
            std::string::npos)
      << text;
}

TEST(Symbolize, InlinedCallHasItsLineAndTheFunctionItWasInlinedInto) {
  Probe p = run_probe();
  auto t = trace_with_module(test::program("inline_probe"), probe_build_id());
  ASSERT_TRUE(t);
  Symbolizer sym;
  Symbol s = sym.resolve(*t, p.ret);
  EXPECT_EQ(s.module, "inline_probe");
  EXPECT_EQ(s.offset, p.ret - 1);
  expect_inlined_call(s, p);
  // Resolved again from the module's cache, the same.
  EXPECT_EQ(Symbolizer::text(sym.resolve(*t, p.ret)), Symbolizer::text(s));
  // A call outside inlined code: main's call of outer_step.
  Symbol direct = sym.resolve(*t, p.main_ret);
  EXPECT_EQ(direct.function, "main");
  EXPECT_TRUE(ends_with(direct.file, "inline_probe.cpp")) << direct.file;
  EXPECT_EQ(direct.line, p.main_line);
  EXPECT_TRUE(direct.inlined_into.empty()) << Symbolizer::text(direct);
  EXPECT_EQ(Symbolizer::text(direct), fmt::format("main at inline_probe.cpp:{} (inline_probe)", p.main_line));
}

TEST(Symbolize, StrippedBinaryUsesItsSeparateDebugFile) {
  Probe p = run_probe();
  std::string id = probe_build_id();
  ASSERT_GT(id.size(), 2u);
  // Beside the binary, through its .gnu_debuglink (name and CRC).
  std::string beside = test::fresh_dir("debuglink");
  fs::copy_file(test::program("inline_probe.stripped"), beside + "/inline_probe");
  fs::copy_file(test::program("inline_probe.debug"), beside + "/inline_probe.debug");
  {
    auto t = trace_with_module(beside + "/inline_probe", id);
    ASSERT_TRUE(t);
    Symbolizer sym;
    expect_inlined_call(sym.resolve(*t, p.ret), p);
  }
  // In .debug/ beside it.
  std::string dotdebug = test::fresh_dir("dotdebug");
  fs::create_directories(dotdebug + "/.debug");
  fs::copy_file(test::program("inline_probe.stripped"), dotdebug + "/inline_probe");
  fs::copy_file(test::program("inline_probe.debug"), dotdebug + "/.debug/inline_probe.debug");
  {
    auto t = trace_with_module(dotdebug + "/inline_probe", id);
    ASSERT_TRUE(t);
    Symbolizer sym;
    expect_inlined_call(sym.resolve(*t, p.ret), p);
  }
  // Alone, without its debug file: no line, and no crash.
  std::string alone = test::fresh_dir("nodebug");
  fs::copy_file(test::program("inline_probe.stripped"), alone + "/inline_probe");
  auto t = trace_with_module(alone + "/inline_probe", id);
  ASSERT_TRUE(t);
  {
    Symbolizer sym;
    Symbol s = sym.resolve(*t, p.ret);
    EXPECT_EQ(s.module, "inline_probe");
    EXPECT_TRUE(s.file.empty()) << s.file;
    EXPECT_TRUE(s.inlined_into.empty());
  }
  // Then by build id under a symbol directory (--symbols DIR: DIR/.build-id/NN/REST.debug).
  {
    Symbolizer sym({test::program("inline_probe.debug-root")});
    expect_inlined_call(sym.resolve(*t, p.ret), p);
  }
  // A file of the linked name that is another build's (another build id) is not used.
  std::string wrong = test::fresh_dir("wrongdebug");
  fs::copy_file(test::program("inline_probe.stripped"), wrong + "/inline_probe");
  fs::copy_file(test::program("stack_chain"), wrong + "/inline_probe.debug");
  {
    auto w = trace_with_module(wrong + "/inline_probe", id);
    ASSERT_TRUE(w);
    Symbolizer sym;
    EXPECT_TRUE(sym.resolve(*w, p.ret).file.empty());
  }
}

TEST(Symbolize, ShellMetacharactersInModulePathsRunNothing) {
  // A trace is a file from anyone: its module paths go to open(2) and nowhere else. Quoted into a
  // shell command (addr2line -e '<path>', as symbolization once did), each of these paths would
  // have created `pwned` in `dir`.
  Probe p = run_probe();
  std::string dir = test::fresh_dir("metachars");
  std::string pwned = dir + "/pwned";
  std::vector<std::string> paths = {
      dir + "/a'; touch " + pwned + "; 'b/inline_probe",  // an existing binary, in an odd directory
      dir + "/x'; touch " + pwned + "; '",                // no such file
      dir + "/$(touch " + pwned + ")/inline_probe",
      dir + "/`touch " + pwned + "`",
  };
  fs::create_directories(fs::path(paths[0]).parent_path());
  fs::copy_file(test::program("inline_probe"), paths[0]);
  for (const auto& path : paths) {
    auto t = trace_with_module(path, "");
    ASSERT_TRUE(t);
    Symbolizer sym({dir + "/no-such-dir'; touch " + pwned + "; '"});
    Symbol s = sym.resolve(*t, p.ret);
    if (path == paths[0]) {
      expect_inlined_call(s, p);  // read as the file it is
    } else {
      EXPECT_TRUE(s.function.empty()) << path;
      EXPECT_TRUE(s.file.empty()) << path;
      EXPECT_EQ(s.offset, p.ret - 1);
    }
    EXPECT_FALSE(fs::exists(pwned)) << path;
  }
}

TEST(Symbolize, AFifoNamedByATraceIsNotWaitedOn) {
  // Opening a FIFO for reading waits for a writer: the symbolizer must refuse it instead.
  std::string dir = test::fresh_dir("fifo");
  ASSERT_EQ(mkfifo((dir + "/inline_probe").c_str(), 0600), 0);
  auto t = trace_with_module(dir + "/inline_probe", "");
  ASSERT_TRUE(t);
  Symbolizer sym({dir});
  Symbol s = sym.resolve(*t, 0x1001);
  EXPECT_EQ(s.module, "inline_probe");
  EXPECT_TRUE(s.function.empty());
}

TEST(Symbolize, ApplicationLineFirstThenLibraryFrames) {
  std::string dir = test::fresh_dir("symbolize");
  std::string path = dir + "/t.jsonl";
  std::ofstream(path) << R"J({"type":"process","pid":7}
{"type":"stack","pid":7,"id":3,"python":[{"file":"/venv/lib/python3.12/site-packages/torch/nn/functional.py","function":"batch_norm","line":2846},{"file":"/venv/lib/python3.12/site-packages/torch/nn/modules/batchnorm.py","function":"forward","line":194},{"file":"/home/me/train.py","function":"step","line":33},{"file":"/home/me/train.py","function":"<module>","line":50}],"native":[{"pc":"0x1234","text":"c10::alloc_block (libc10_cuda.so)"},{"pc":"0x5678","text":"at::empty (libtorch_cpu.so)"}]}
{"type":"call","pid":7,"api":"cudaMalloc","ret":2,"ts_ns":1,"size":10,"stack":3}
)J";
  auto traces = open_traces(path);
  ASSERT_TRUE(traces) << traces.error().message;
  const Trace& t = *(*traces)[0];
  Symbolizer sym;
  auto sites = sym.describe(t, StackId(3), 2, 1);
  ASSERT_EQ(sites.size(), 3u);
  EXPECT_EQ(sites[0], "/home/me/train.py:33 in step");
  EXPECT_EQ(sites[1], "torch/nn/functional.py:2846 in batch_norm");
  EXPECT_EQ(sites[2], "c10::alloc_block (libc10_cuda.so)");
  EXPECT_TRUE(sym.describe(t, StackId(99)).empty());
  uint32_t stack = 0;
  t.for_each_event([&](const Event& e) { stack = e.stack; });
  EXPECT_EQ(stack, 3u);
  EXPECT_TRUE(Symbolizer::is_library(PyFrame{"/usr/lib/python3.12/threading.py", "run", 1}));
  EXPECT_FALSE(Symbolizer::is_library(PyFrame{"/home/me/train.py", "f", 1}));
  // PyTorch from a source checkout is a library as an installed one is.
  EXPECT_TRUE(Symbolizer::is_library(PyFrame{"/src/pytorch/torch/nn/modules/conv.py", "forward", 1}));
  EXPECT_EQ(Symbolizer::text(PyFrame{"/src/pytorch/torch/nn/modules/conv.py", "forward", 549}),
            "torch/nn/modules/conv.py:549 in forward");
}

}  // namespace
}  // namespace cuprobe::reader
