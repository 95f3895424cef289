// The "pin" codec (common/plan_pin_text.h): what format_pin writes (the strings `cuprobe plans
// export` puts in a plan file) parse_pin reads back, and the GPU-name hash both sides use.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "plan_pin_text.h"

namespace cuprobe::test {
namespace {

std::string format(const pins::PinWords& w) {
  std::string s(pins::format_pin(w, nullptr, 0), '\0');
  pins::format_pin(w, s.data(), s.size() + 1);
  return s;
}

TEST(PinText, WrittenAsPlansExportWroteItAndReadBack) {
  pins::PinWords w;
  w.hash = 0x00ab00cd00ef0012ull;
  w.engine = 7;
  w.align = 16;
  w.gpu = "NVIDIA H100 80GB HBM3";
  w.cudnn = 90100;
  w.knobs = "tile_size=4,stages=3";
  w.time_ms = 0.0078125;  // a tie at 6 decimals: rounded to even, as fmt's {:.6f} did
  w.search_ms = 12.3456;
  std::string s = format(w);
  char gpu[9];
  snprintf(gpu, sizeof gpu, "%08x", pins::gpu_name_hash(w.gpu));
  EXPECT_EQ(s, std::string("h=00ab00cd00ef0012 s=backend e=7 a=16 g=") + gpu +
                   " v=90100 k=tile_size=4,stages=3 t=0.007812 c=12.346");
  pins::Pin p;
  ASSERT_TRUE(pins::parse_pin(s.data(), s.data() + s.size(), &p)) << s;
  EXPECT_EQ(p.hash, w.hash);
  EXPECT_EQ(p.engine, 7);
  EXPECT_EQ(p.align, 16u);
  EXPECT_EQ(p.gpu, pins::gpu_name_hash(w.gpu));
  EXPECT_EQ(p.cudnn, 90100);
  EXPECT_EQ(p.legacy, 0);
  EXPECT_EQ(p.key, pins::plan_key(7, "tile_size=4,stages=3"));
  // Knobs at -1 are the engine's own (cuDNN's log lists them): the same plan as without them, in
  // any order (issue 33).
  pins::PinWords logged = w;
  logged.knobs = "stages=3,split_k_slc=-1,tile_size=4";
  std::string ws = format(logged);
  pins::Pin q;
  ASSERT_TRUE(pins::parse_pin(ws.data(), ws.data() + ws.size(), &q)) << ws;
  EXPECT_EQ(q.key, p.key);
  EXPECT_EQ(q.n_knobs, 2);
  EXPECT_TRUE(q.answerable);

  pins::PinWords l;
  l.hash = 1;
  l.legacy = true;
  l.engine = 2;
  l.math = 1;
  l.deterministic = false;
  EXPECT_EQ(format(l), "h=0000000000000001 s=legacy e=2 m=1 d=0");
  std::string ls = format(l);
  ASSERT_TRUE(pins::parse_pin(ls.data(), ls.data() + ls.size(), &p));
  EXPECT_EQ(p.legacy, 1);
  EXPECT_EQ(p.math, 1);
  EXPECT_EQ(p.determinism, 0);
  EXPECT_EQ(p.time_ms, -1) << "not written, not read";

  char small[8];
  EXPECT_EQ(pins::format_pin(l, small, sizeof small), ls.size()) << "the whole length, as snprintf";
  EXPECT_EQ(std::string(small), ls.substr(0, 7));
}

TEST(PinText, GpuNameHashIsFnv1a32) {
  EXPECT_EQ(pins::gpu_name_hash(""), 2166136261u);
  EXPECT_EQ(pins::gpu_name_hash("a"), 0xe40c292cu);
}

}  // namespace
}  // namespace cuprobe::test
