// The trace reader on hand-built files: clock conversion through anchors, record validation,
// and the diagnostics that name where reading stopped.
#include "trace/reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "json_line.h"
#include "support/run.h"

namespace cuprobe {
namespace {

TEST(Clock, MonotonicTicksAreNanoseconds) {
  reader::Clock c;
  c.init(trace::ClockKind::kMonotonicNs, 1.0, {{100, 100}});
  EXPECT_EQ(c.to_ns(123456789), 123456789u);
  EXPECT_EQ(c.duration_ns(5, 77), 77u);
}

TEST(Clock, CounterTicksFollowTheAnchorsPiecewise) {
  reader::Clock c;
  // 3 ticks per ns for the first 10 ms, then 2 ticks per ns (a rate change the reader must follow).
  c.init(trace::ClockKind::kX86Tsc, 2.5,
         {{1000, 5'000'000}, {1000 + 30'000'000, 15'000'000}, {1000 + 30'000'000 + 20'000'000, 25'000'000}});
  EXPECT_EQ(c.to_ns(1000), 5'000'000u);
  EXPECT_EQ(c.to_ns(1000 + 15'000'000), 10'000'000u);
  EXPECT_EQ(c.to_ns(1000 + 30'000'000 + 10'000'000), 20'000'000u);
  EXPECT_NEAR(double(c.duration_ns(1000, 3000)), 1000.0, 1.0);
  // Outside the anchored range: the overall rate (50e6 ticks over 20e6 ns).
  EXPECT_NEAR(double(c.to_ns(1000 + 50'000'000 + 2'500'000)), 26'000'000.0, 2.0);
  EXPECT_NEAR(double(c.to_ns(1000 - 2'500'000 + 2'500'000)), 5'000'000.0, 2.0);
  // Monotonic across anchor boundaries.
  uint64_t prev = 0;
  for (uint64_t t = 0; t < 60'000'000; t += 99'991) {
    EXPECT_GE(c.to_ns(t), prev);
    prev = c.to_ns(t);
  }
}

TEST(Clock, ConvertWithASegmentHintAgreesWithToNs) {
  reader::Clock c;
  c.init(trace::ClockKind::kX86Tsc, 2.5,
         {{1000, 5'000'000}, {1000 + 30'000'000, 15'000'000}, {1000 + 30'000'000 + 20'000'000, 25'000'000}});
  // Forward, backward and jumping across segments, with calls that straddle an anchor.
  std::vector<uint64_t> starts;
  for (uint64_t t = 0; t < 60'000'000; t += 1'234'567) starts.push_back(t);
  for (int64_t t = 60'000'000; t > 0; t -= 7'654'321) starts.push_back(uint64_t(t));
  starts.push_back(1000 + 30'000'000 - 500);
  size_t segment = 0;
  for (uint64_t s : starts) {
    for (uint64_t dur : {uint64_t(0), uint64_t(3000), uint64_t(2'000'000)}) {
      uint64_t ts = 0, d = 0;
      c.convert(s, dur, &segment, &ts, &d);
      EXPECT_EQ(ts, c.to_ns(s)) << s;
      EXPECT_NEAR(double(d), double(c.duration_ns(s, dur)), 1.0) << s << " " << dur;
    }
  }
}

TEST(Clock, OneAnchorUsesTheCalibratedRate) {
  reader::Clock c;
  c.init(trace::ClockKind::kX86Tsc, 2.0, {{2000, 1000}});
  EXPECT_EQ(c.to_ns(4000), 2000u);
}

// Builds a minimal trace: header, one meta chunk with an API table, one thread chunk.
class HandBuiltTrace : public ::testing::Test {
 protected:
  std::vector<char> file_ = std::vector<char>(trace::kFileHeaderSize + 2 * trace::kChunkSize, 0);
  uint32_t pos_[2] = {0, 0};

  void SetUp() override {
    auto* h = reinterpret_cast<trace::FileHeader*>(file_.data());
    std::memcpy(h->magic, trace::kMagic, 8);
    h->version = trace::kVersion;
    h->header_size = trace::kFileHeaderSize;
    h->chunk_size = trace::kChunkSize;
    h->pid = 4242;
    h->chunks_claimed = 2;
    h->state = uint32_t(trace::FileState::kExited);
    h->clock_kind = uint32_t(trace::ClockKind::kMonotonicNs);
    h->ticks_per_ns = 1.0;
    h->start = {1000, 1000, 1'700'000'000'000'000'000ull};
    h->end = {9000, 9000, 1'700'000'000'000'008'000ull};
    for (uint32_t i = 0; i < 2; ++i) {
      auto* c = chunk(i);
      c->magic = trace::kChunkMagic;
      c->tid = i == 0 ? trace::kMetaTid : 77;
      c->seq = 0;
    }
    add_api(0, "cudaMalloc", "ptr:p,size:u", trace::kApiDeviceAlloc);
  }

  trace::ChunkHeader* chunk(uint32_t i) {
    return reinterpret_cast<trace::ChunkHeader*>(file_.data() + trace::kFileHeaderSize + size_t(i) * trace::kChunkSize);
  }
  char* append(uint32_t i, uint32_t size) {
    char* p = reinterpret_cast<char*>(chunk(i)) + trace::kChunkHeaderSize + pos_[i];
    pos_[i] += size;
    chunk(i)->used = pos_[i];
    return p;
  }
  void add_api(uint16_t id, const std::string& name, const std::string& fields, uint32_t flags) {
    uint32_t size = trace::align8(uint32_t(sizeof(trace::ApiInfo) + name.size() + fields.size()));
    auto* r = reinterpret_cast<trace::ApiInfo*>(append(0, size));
    r->h = trace::make_header(trace::RecordType::kApiInfo, size, id);
    r->library = uint16_t(trace::Library::kCudart);
    r->name_len = uint16_t(name.size());
    r->fields_len = uint32_t(fields.size());
    r->flags = flags;
    r->count_slot = -1;
    std::memcpy(r->text, name.data(), name.size());
    std::memcpy(r->text + name.size(), fields.data(), fields.size());
  }
  void add_call(uint64_t ts, uint64_t ptr, uint64_t size) {
    constexpr uint32_t kSize = sizeof(trace::CallRecord) + 16;
    auto* r = reinterpret_cast<trace::CallRecord*>(append(1, kSize));
    r->h = trace::RecordHeader{uint8_t(trace::RecordType::kCall), 0, kSize, 0, 0};
    r->ret = 0;
    r->start_ticks = ts;
    r->dur_ticks = 10;
    r->tail[0] = ptr;
    r->tail[1] = size;
  }
  std::string write() {
    std::string path = test::fresh_dir("handbuilt") + "/t.cuprobe";
    std::ofstream(path, std::ios::binary).write(file_.data(), std::streamsize(file_.size()));
    return path;
  }
};

TEST_F(HandBuiltTrace, ReadsCallsWithTheirNamedFields) {
  add_call(2000, 0x1000, 64);
  add_call(3000, 0x2000, 128);
  auto t = reader::TraceFile::open(write());
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ((*t)->pid(), 4242u);
  EXPECT_EQ((*t)->call_records(), 2u);
  EXPECT_EQ((*t)->wall_ns(3000), 1'700'000'000'000'002'000ull);
  std::vector<uint64_t> sizes;
  (*t)->for_each_event([&](const reader::Event& e) {
    EXPECT_EQ((*t)->api_name(e.api), "cudaMalloc");
    EXPECT_EQ(e.tid, 77u);
    ASSERT_EQ(e.nargs, 2);
    sizes.push_back(e.args[1]);
  });
  EXPECT_EQ(sizes, (std::vector<uint64_t>{64, 128}));
  // The process record is missing from this file, and the reader says so.
  ASSERT_EQ((*t)->diagnostics().size(), 1u);
  EXPECT_NE((*t)->diagnostics()[0].find("process record is missing"), std::string::npos);
}

TEST_F(HandBuiltTrace, ACorruptRecordStopsItsChunkAndIsNamed) {
  add_call(2000, 0x1000, 64);
  auto* bad = reinterpret_cast<trace::RecordHeader*>(append(1, 8));
  *bad = trace::RecordHeader{uint8_t(trace::RecordType::kCall), 0, 3, 0, 0};  // size not a multiple of 8
  auto t = reader::TraceFile::open(write());
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)->call_records(), 1u);
  bool named = false;
  for (const auto& d : (*t)->diagnostics()) {
    named = named || (d.find("chunk 1 (thread 77) offset 40: invalid record size 3") != std::string::npos);
  }
  EXPECT_TRUE(named);
}

TEST_F(HandBuiltTrace, WrongVersionIsRefusedWithBothVersions) {
  reinterpret_cast<trace::FileHeader*>(file_.data())->version = 99;
  auto t = reader::TraceFile::open(write());
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("version 99 is not supported"), std::string::npos) << t.error().message;
}

TEST(JsonLine, EscapesControlCharactersAndQuotes) {
  JsonLine j;
  j.begin();
  j.str("s", "a\"b\\c\n\x01");
  j.hex("p", 0xdeadbeef);
  j.inum("n", -3);
  EXPECT_EQ(j.finish(), R"({"s":"a\"b\\c\n\u0001","p":"0xdeadbeef","n":-3})");
}

}  // namespace
}  // namespace cuprobe
