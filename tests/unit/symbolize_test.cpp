// How call sites are written: the application's own Python line before library frames, library
// paths relative to site-packages, and stacks read back from cuprobe dump's JSON Lines.
#include "trace/symbolize.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/run.h"

namespace cuprobe::reader {
namespace {

TEST(Symbolize, ApplicationLineFirstThenLibraryFrames) {
  std::string dir = test::fresh_dir("symbolize");
  std::string path = dir + "/t.jsonl";
  std::ofstream(path)
      << R"J({"type":"process","pid":7}
{"type":"stack","pid":7,"id":3,"python":[{"file":"/venv/lib/python3.12/site-packages/torch/nn/functional.py","function":"batch_norm","line":2846},{"file":"/venv/lib/python3.12/site-packages/torch/nn/modules/batchnorm.py","function":"forward","line":194},{"file":"/home/me/train.py","function":"step","line":33},{"file":"/home/me/train.py","function":"<module>","line":50}],"native":[{"pc":"0x1234","text":"c10::alloc_block (libc10_cuda.so)"},{"pc":"0x5678","text":"at::empty (libtorch_cpu.so)"}]}
{"type":"call","pid":7,"api":"cudaMalloc","ret":2,"ts_ns":1,"size":10,"stack":3}
)J";
  auto traces = open_traces(path);
  ASSERT_TRUE(traces) << traces.error().message;
  const Trace& t = *(*traces)[0];
  Symbolizer sym;
  auto sites = sym.describe(t, 3, 2, 1);
  ASSERT_EQ(sites.size(), 3u);
  EXPECT_EQ(sites[0], "/home/me/train.py:33 in step");
  EXPECT_EQ(sites[1], "torch/nn/functional.py:2846 in batch_norm");
  EXPECT_EQ(sites[2], "c10::alloc_block (libc10_cuda.so)");
  EXPECT_TRUE(sym.describe(t, 99).empty());
  uint32_t stack = 0;
  t.for_each_event([&](const Event& e) { stack = e.stack; });
  EXPECT_EQ(stack, 3u);
  EXPECT_TRUE(Symbolizer::is_library(PyFrame{"/usr/lib/python3.12/threading.py", "run", 1}));
  EXPECT_FALSE(Symbolizer::is_library(PyFrame{"/home/me/train.py", "f", 1}));
}

}  // namespace
}  // namespace cuprobe::reader
