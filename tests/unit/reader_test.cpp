// The trace reader on hand-built files: clock conversion through anchors, record validation,
// and the diagnostics that name where reading stopped.
#include "trace/reader.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <cmath>
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

TEST(Clock, TheLastAnchorIsKeptHoweverCloseSoNoCallEndsAfterTheRun) {
  // A process of 0.6 ms: start and end anchors only, the calibrated rate (2.0) slightly off the
  // true one (2.01). The end anchor must be exact, or calls just before it land after the end.
  reader::Clock c;
  const uint64_t end_ticks = 1000 + 1'206'000;
  c.init(trace::ClockKind::kX86Tsc, 2.0, {{1000, 5'000'000}, {end_ticks, 5'600'000}});
  EXPECT_EQ(c.to_ns(end_ticks), 5'600'000u);
  EXPECT_LE(c.to_ns(end_ticks - 10), 5'600'000u);
  // With a chunk anchor 1.2 ms in and the end 0.3 ms later: the end replaces the chunk anchor.
  reader::Clock d;
  d.init(trace::ClockKind::kX86Tsc, 2.0,
         {{1000, 5'000'000}, {1000 + 2'412'000, 6'200'000}, {1000 + 3'015'000, 6'500'000}});
  EXPECT_EQ(d.to_ns(1000 + 3'015'000), 6'500'000u);
  EXPECT_EQ(d.to_ns(1000), 5'000'000u);
  // An end anchor that goes backwards is not kept.
  reader::Clock e;
  e.init(trace::ClockKind::kX86Tsc, 2.0,
         {{1000, 5'000'000}, {1000 + 4'000'000, 7'000'000}, {1000 + 4'000'100, 6'999'000}});
  EXPECT_EQ(e.to_ns(1000 + 4'000'000), 7'000'000u);
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
  void add_process(const std::string& cmdline_nul_separated) {
    std::string host = "node0";
    uint32_t size = trace::align8(uint32_t(sizeof(trace::ProcessInfo) + host.size() + cmdline_nul_separated.size()));
    auto* r = reinterpret_cast<trace::ProcessInfo*>(append(0, size));
    std::memset(static_cast<void*>(r), 0, size);
    r->h = trace::make_header(trace::RecordType::kProcessInfo, size);
    r->pid = 4242;
    r->rank = r->local_rank = r->world_size = -1;
    r->hostname_len = uint32_t(host.size());
    r->cmdline_len = uint32_t(cmdline_nul_separated.size());
    std::memcpy(r->text, host.data(), host.size());
    std::memcpy(r->text + host.size(), cmdline_nul_separated.data(), cmdline_nul_separated.size());
  }
  void add_call(uint64_t ts, uint64_t ptr, uint64_t size, uint16_t api = 0) {
    constexpr uint32_t kSize = sizeof(trace::CallRecord) + 16;
    auto* r = reinterpret_cast<trace::CallRecord*>(append(1, kSize));
    r->h = trace::RecordHeader{uint8_t(trace::RecordType::kCall), 0, kSize, api, 0};
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
  EXPECT_NE(t.error().message.find("version 99 was written by a newer cuprobe; this one reads version 2"), std::string::npos) << t.error().message;
}

TEST(JsonLine, EscapesControlCharactersAndQuotes) {
  JsonLine j;
  j.begin();
  j.str("s", "a\"b\\c\n\x01");
  j.hex("p", 0xdeadbeef);
  j.inum("n", -3);
  EXPECT_EQ(j.finish(), R"({"s":"a\"b\\c\n\u0001","p":"0xdeadbeef","n":-3})");
}

bool mentions(const std::vector<std::string>& notes, const std::string& text) {
  for (const auto& d : notes) {
    if (d.find(text) != std::string::npos) return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& notes) {
  std::string all;
  for (const auto& d : notes) all += d + "\n";
  return all;
}

// The reader's exit statuses: a signal or a status above 2 is a crash.
void expect_clean_exit(const test::RunResult& r, const std::string& what) {
  EXPECT_LE(r.status, 2) << what << " died (status " << r.status << "): " << r.err;
}

TEST_F(HandBuiltTrace, CallsOfAnApiWithoutAnApiInfoRecordAreCountedAndNamed) {
  add_process(std::string("train\0", 6));
  add_call(2000, 0x1000, 64);
  add_call(3000, 0x2000, 128, /*api=*/7);  // no API-info record for id 7
  std::string path = write();
  auto t = reader::TraceFile::open(path);
  ASSERT_TRUE(t) << t.error().message;
  int unknown = 0;
  (*t)->for_each_event([&](const reader::Event& e) {
    if (e.api == 7) {
      ++unknown;
      EXPECT_EQ(e.nargs, 0);  // arguments of an undescribed API cannot be named
      EXPECT_EQ((*t)->api_name(e.api), "unknown");
    }
  });
  EXPECT_EQ(unknown, 1);
  EXPECT_EQ((*t)->damaged_records(), 1u);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "1 call of 1 API id the trace has no API-info record for (the first: id 7)"))
      << joined((*t)->diagnostics());
  auto dump = test::run({test::cuprobe_bin(), "dump", path});
  EXPECT_EQ(dump.status, 0) << dump.err;
  EXPECT_NE(dump.out.find("\"api\":\"unknown\""), std::string::npos);
  auto analyze = test::run({test::cuprobe_bin(), "analyze", path});
  expect_clean_exit(analyze, "analyze");
  EXPECT_NE(analyze.out.find("trace-integrity"), std::string::npos) << analyze.out;
}

TEST_F(HandBuiltTrace, ATraceWithoutAnyApiInfoRecordIsAnalyzed) {
  // No API table at all: the meta chunk holds only the process record.
  std::memset(reinterpret_cast<char*>(chunk(0)) + trace::kChunkHeaderSize, 0, pos_[0]);
  pos_[0] = 0;
  chunk(0)->used = 0;
  add_process(std::string("train\0", 6));
  add_call(2000, 0x1000, 64);
  add_call(3000, 0x2000, 128);
  std::string path = write();
  auto analyze = test::run({test::cuprobe_bin(), "analyze", "--json", path});
  expect_clean_exit(analyze, "analyze");
  auto report = nlohmann::json::parse(analyze.out);
  EXPECT_EQ(report["summary"]["events"], 2);
  auto dump = test::run({test::cuprobe_bin(), "dump", path});
  EXPECT_EQ(dump.status, 0) << dump.err;
}

TEST_F(HandBuiltTrace, AnApiInfoRecordWithImpossibleLengthsIsCountedNotSilentlyDropped) {
  add_api(3, "cudaFree", "ptr:p", trace::kApiDeviceFree);
  // Its name and fields said to be longer than the record.
  auto* r = reinterpret_cast<trace::ApiInfo*>(reinterpret_cast<char*>(chunk(0)) + trace::kChunkHeaderSize + pos_[0] -
                                              trace::align8(uint32_t(sizeof(trace::ApiInfo) + 8 + 5)));
  ASSERT_EQ(r->h.aux, 3);
  r->name_len = 0xffff;
  r->fields_len = 0xfffffff0u;  // the sum overflows 32 bits
  add_call(2000, 0x1000, 64, 3);
  std::string path = write();
  auto t = reader::TraceFile::open(path);
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)->api(3), nullptr);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "1 API-info records with bad lengths")) << joined((*t)->diagnostics());
  for (const char* cmd : {"dump", "analyze"}) expect_clean_exit(test::run({test::cuprobe_bin(), cmd, path}), cmd);
}

TEST_F(HandBuiltTrace, ACallAtAnAbsurdTimeIsLeftOutAndReported) {
  add_process(std::string("train\0", 6));
  add_call(2000, 0x1000, 64);
  add_call(3000, 0x2000, 128);
  add_call(uint64_t(1) << 62, 0x3000, 256);  // a flipped bit: 146 years into the run
  std::string path = write();
  auto t = reader::TraceFile::open(path);
  ASSERT_TRUE(t);
  int events = 0;
  (*t)->for_each_event([&](const reader::Event&) { ++events; });
  EXPECT_EQ(events, 2);
  EXPECT_EQ((*t)->ignored_events(), 1u);
  EXPECT_EQ((*t)->last_event_ns(), 3010u);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "1 call with a time outside the recording")) << joined((*t)->diagnostics());
  auto analyze = test::run({test::cuprobe_bin(), "analyze", "--json", path});
  expect_clean_exit(analyze, "analyze");
  auto report = nlohmann::json::parse(analyze.out);
  EXPECT_NEAR(report["summary"]["duration_s"].get<double>(), 1010e-9, 1e-12);
  bool integrity = false;
  for (const auto& f : report["findings"]) integrity = integrity || f["rule"] == "trace-integrity";
  EXPECT_TRUE(integrity) << analyze.out;
}

TEST_F(HandBuiltTrace, WhenTheHeaderTimesAreWrongTheCallsAreKept) {
  add_call(2000, 0x1000, 64);
  add_call(3000, 0x2000, 128);
  auto* h = reinterpret_cast<trace::FileHeader*>(file_.data());
  h->start.ticks = uint64_t(1) << 61;  // the header is what is damaged
  h->end.ticks = (uint64_t(1) << 61) + 8000;
  auto t = reader::TraceFile::open(write());
  ASSERT_TRUE(t);
  int events = 0;
  (*t)->for_each_event([&](const reader::Event&) { ++events; });
  EXPECT_EQ(events, 2);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "the header's start and end times do not fit")) << joined((*t)->diagnostics());
}

TEST_F(HandBuiltTrace, TextThatIsNotUtf8OrCutInsideACharacterGivesValidJson) {
  // A command line of 100 two-byte characters (cut at 160 bytes it would end mid-character),
  // then bytes that are not UTF-8 at all.
  std::string arg;
  for (int i = 0; i < 100; ++i) arg += "\xc3\xa9";
  add_process(std::string("python3\0", 8) + arg + std::string("\0\xff\xfe-latin1-\xe9t\xe9\0", 16));
  add_call(2000, 0x1000, 64);
  std::string path = write();
  auto analyze = test::run({test::cuprobe_bin(), "analyze", "--json", path});
  EXPECT_LE(analyze.status, 1) << analyze.err;
  auto report = nlohmann::json::parse(analyze.out);  // throws on invalid JSON
  std::string command = report["summary"]["per_process"][0]["command"];
  EXPECT_EQ(command.rfind("python3 \xc3\xa9", 0), 0u) << command;
  EXPECT_EQ(command.substr(command.size() - 3), "\xe2\x80\xa6");  // cut between characters, marked
  auto dump = test::run({test::cuprobe_bin(), "dump", path});
  ASSERT_EQ(dump.status, 0) << dump.err;
  std::string dumped = test::fresh_dir("utf8") + "/d.jsonl";
  std::ofstream(dumped) << dump.out;
  for (size_t start = 0; start < dump.out.size();) {
    size_t end = dump.out.find('\n', start);
    EXPECT_NO_THROW((void)nlohmann::json::parse(dump.out.substr(start, end - start)));
    start = end == std::string::npos ? dump.out.size() : end + 1;
  }
  auto again = test::run({test::cuprobe_bin(), "analyze", "--json", dumped});
  EXPECT_LE(again.status, 1) << again.err;
  EXPECT_NO_THROW((void)nlohmann::json::parse(again.out));
}

TEST_F(HandBuiltTrace, AFileTruncatedWhileItIsReadReadsAsEmptyInsteadOfSigbus) {
  for (int i = 0; i < 100; ++i) add_call(2000 + uint64_t(i) * 10, 0x1000 + uint64_t(i), 64);
  std::string path = write();
  auto t = reader::TraceFile::open(path);
  ASSERT_TRUE(t);
  ASSERT_EQ(truncate(path.c_str(), trace::kFileHeaderSize + 4096), 0);
  int events = 0;
  (*t)->for_each_event([&](const reader::Event&) { ++events; });  // the thread's chunk is gone
  EXPECT_EQ(events, 0);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "the file shrank while it was read")) << joined((*t)->diagnostics());
}

TEST_F(HandBuiltTrace, RecordsZeroedWhileTheFileIsReadEndTheChunkInsteadOfLooping) {
  for (int i = 0; i < 100; ++i) add_call(2000 + uint64_t(i) * 10, 0x1000 + uint64_t(i), 64);
  std::string path = write();
  auto t = reader::TraceFile::open(path);
  ASSERT_TRUE(t);
  std::vector<char> zeros(trace::kChunkDataSize, 0);
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, zeros.data(), zeros.size(), trace::kFileHeaderSize + trace::kChunkSize + trace::kChunkHeaderSize),
            ssize_t(zeros.size()));
  close(fd);
  int events = 0;
  (*t)->for_each_event([&](const reader::Event&) { ++events; });
  EXPECT_EQ(events, 0);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "was written to while it was read")) << joined((*t)->diagnostics());
}

TEST(FindTraceFiles, FifosSocketsAndSymlinksInARunDirectoryAreSkippedAndNamed) {
  std::string dir = test::fresh_dir("rundir");
  std::string outside = test::fresh_dir("outside") + "/secret.cuprobe";
  std::ofstream(outside) << "not yours";
  ASSERT_EQ(mkfifo((dir + "/pipe.cuprobe").c_str(), 0600), 0);
  ASSERT_EQ(symlink("/nonexistent/x.cuprobe", (dir + "/dangling.cuprobe").c_str()), 0);
  ASSERT_EQ(symlink(outside.c_str(), (dir + "/elsewhere.cuprobe").c_str()), 0);
  std::ofstream(dir + "/real.cuprobe") << "x";
  std::vector<std::string> skipped;
  auto files = reader::find_trace_files(dir, &skipped);
  ASSERT_TRUE(files) << files.error().message;
  EXPECT_EQ(*files, std::vector<std::string>{dir + "/real.cuprobe"});
  ASSERT_EQ(skipped.size(), 3u) << joined(skipped);
  EXPECT_TRUE(mentions(skipped, "pipe.cuprobe: skipped: not a regular file (a FIFO)")) << joined(skipped);
  EXPECT_TRUE(mentions(skipped, "dangling.cuprobe: skipped: a symbolic link to /nonexistent/x.cuprobe")) << joined(skipped);
  EXPECT_TRUE(mentions(skipped, "elsewhere.cuprobe: skipped: a symbolic link to " + outside)) << joined(skipped);
}

TEST(FindTraceFiles, AFifoNobodyWritesToIsRefusedAfterAWaitNotBlockedOnForever) {
  std::string fifo = test::fresh_dir("fifo") + "/t.cuprobe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Opening the FIFO for reading would wait forever for a writer; the reader waits 10 s.
  for (const char* cmd : {"dump", "analyze"}) {
    auto r = test::run({test::cuprobe_bin(), cmd, fifo});
    EXPECT_EQ(r.status, 2) << cmd;
    EXPECT_NE(r.err.find("a FIFO that nothing wrote to within 10 s"), std::string::npos) << cmd << ": " << r.err;
  }
  // A binary trace is mapped, which a FIFO cannot be.
  auto direct = reader::TraceFile::open(fifo);
  ASSERT_FALSE(direct);
  EXPECT_NE(direct.error().message.find("not a regular file (a FIFO)"), std::string::npos);
}

TEST(FindTraceFiles, AFifoThatIsWrittenToIsReadAsJsonLines) {
  std::string dir = test::fresh_dir("fifo-written");
  std::string fifo = dir + "/dump.jsonl";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string fixture = std::string(CUPROBE_TEST_RULES_DIR) + "/fixtures/sync-stall/fire";
  auto r = test::run({"bash", "-c",
                      "(sleep 1; cat " + fixture + "/*.jsonl > " + fifo + ") & " + test::cuprobe_bin() +
                          " analyze --json " + fifo + "; s=$?; wait; exit $s"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.out.find("sync-stall"), std::string::npos) << r.out;
}

TEST(JsonLine, BytesThatAreNotUtf8BecomeReplacementCharactersAndNanBecomesNull) {
  JsonLine j;
  j.begin();
  j.str("s", "caf\xc3\xa9 \xff\xc3");
  j.dbl("d", std::nan(""));
  j.dbl("inf", 1.0 / 0.0);
  EXPECT_EQ(j.finish(), "{\"s\":\"caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\",\"d\":null,\"inf\":null}");
}


// ---- Damage above one record: chunks and stretches of records (trace-integrity counts them) ----

int count_events(const reader::Trace& t) {
  int n = 0;
  t.for_each_event([&](const reader::Event&) { ++n; });
  return n;
}

std::string analyze_json(const std::string& path) {
  auto r = test::run({test::cuprobe_bin(), "analyze", "--json", path});
  expect_clean_exit(r, "analyze");
  return r.out;
}

TEST_F(HandBuiltTrace, AHealthyTraceWithABlankLastChunkHasNoDamage) {
  add_process(std::string("train\0", 6));
  for (int i = 0; i < 5; ++i) add_call(2000 + 100 * i, 0x1000, 64);
  auto* h = reinterpret_cast<trace::FileHeader*>(file_.data());
  file_.resize(file_.size() + trace::kChunkSize, 0);  // a third chunk, claimed and never used
  h = reinterpret_cast<trace::FileHeader*>(file_.data());
  h->chunks_claimed = 3;
  std::string path = write();
  auto t = reader::TraceFile::open(path);
  ASSERT_TRUE(t);
  EXPECT_EQ(count_events(**t), 5);
  EXPECT_FALSE((*t)->integrity().any());
  EXPECT_TRUE((*t)->diagnostics().empty()) << joined((*t)->diagnostics());
  EXPECT_EQ(analyze_json(path).find("trace-integrity"), std::string::npos);
}

TEST_F(HandBuiltTrace, AZeroedMagicOfTheLastChunkIsReportedAndItsRecordsRead) {
  // The probe's F6: one byte of the last claimed chunk's magic zeroed dropped every call in it
  // with "No findings". Its records still chain to its used size: read, and the damage reported.
  add_process(std::string("train\0", 6));
  for (int i = 0; i < 124; ++i) add_call(2000 + 10 * i, 0x1000 + i, 64);
  reinterpret_cast<uint8_t*>(&chunk(1)->magic)[0] = 0;
  std::string path = write();
  auto t = reader::TraceFile::open(path);
  ASSERT_TRUE(t);
  EXPECT_EQ(count_events(**t), 124);
  EXPECT_EQ((*t)->integrity().inconsistent, 1u);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "chunk 1: its header is damaged")) << joined((*t)->diagnostics());
  std::string out = analyze_json(path);
  EXPECT_NE(out.find("\"trace-integrity\""), std::string::npos) << out;
  EXPECT_NE(out.find("its header is damaged"), std::string::npos) << out;
}

TEST_F(HandBuiltTrace, ALastChunkThatCannotBeReadInACleanlyExitedProcessIsAFinding) {
  add_process(std::string("train\0", 6));
  for (int i = 0; i < 10; ++i) add_call(2000 + 10 * i, 0x1000 + i, 64);
  chunk(1)->magic = 0;
  chunk(1)->used = 7;  // not a size its records can end at
  std::string path = write();
  auto t = reader::TraceFile::open(path);
  ASSERT_TRUE(t);
  EXPECT_EQ(count_events(**t), 0);
  EXPECT_EQ((*t)->integrity().skipped_chunks, 1u);
  EXPECT_NE((*t)->integrity().first_chunk.find("although the process exited cleanly"), std::string::npos)
      << (*t)->integrity().first_chunk;
  std::string out = analyze_json(path);
  EXPECT_NE(out.find("could not be read at all"), std::string::npos) << out;
}

TEST_F(HandBuiltTrace, ARecordWithADamagedSizeIsSkippedToTheNextReadableOne) {
  add_process(std::string("train\0", 6));
  for (int i = 0; i < 70; ++i) add_call(2000 + 10 * i, 0x1000 + i, 64);
  // The fifth call's size loses a bit (40 -> 8): the reader lands inside it, then resynchronizes
  // at the sixth call instead of dropping the 65 that follow.
  auto* fifth = reinterpret_cast<trace::CallRecord*>(reinterpret_cast<char*>(chunk(1)) + trace::kChunkHeaderSize + 4 * 40);
  fifth->h.size = 12;
  std::string path = write();
  auto t = reader::TraceFile::open(path);
  ASSERT_TRUE(t);
  EXPECT_EQ(count_events(**t), 69);
  EXPECT_EQ((*t)->integrity().resyncs, 1u);
  EXPECT_EQ((*t)->integrity().skipped_bytes, 40u);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "offset 160: invalid record size 12; 40 bytes skipped to the next readable "
                                             "record at offset 200"))
      << joined((*t)->diagnostics());
  std::string out = analyze_json(path);
  EXPECT_NE(out.find("\"resynchronized\": 1"), std::string::npos) << out;
}

TEST_F(HandBuiltTrace, ACallWhoseSizeSwallowedTheNextRecordsIsLeftOutAndReported) {
  add_process(std::string("train\0", 6));
  for (int i = 0; i < 10; ++i) add_call(2000 + 10 * i, 0x1000 + i, 64);
  // The third call's size grows by 64 (a flipped bit): it now holds the two calls after it.
  auto* third = reinterpret_cast<trace::CallRecord*>(reinterpret_cast<char*>(chunk(1)) + trace::kChunkHeaderSize + 2 * 40);
  third->h.size = 40 + 80;
  std::string path = write();
  auto t = reader::TraceFile::open(path);
  ASSERT_TRUE(t);
  EXPECT_EQ(count_events(**t), 7);
  EXPECT_EQ((*t)->damaged_records(), 1u);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "1 call of cudaMalloc holds more than its 2 arguments"))
      << joined((*t)->diagnostics());
  EXPECT_NE(analyze_json(path).find("\"trace-integrity\""), std::string::npos);
}

TEST_F(HandBuiltTrace, AUsedSizeThatIsNotOnARecordBoundaryIsReported) {
  // CI's mutant 20: a chunk's used size lost 131 bytes (0xf9b0 -> 0xf92d). Records start on 8-byte
  // boundaries, so the reader must neither look for records at the odd offset (a misaligned read,
  // which UBSan stopped) nor drop the cut record silently.
  add_process(std::string("train\0", 6));
  for (int i = 0; i < 10; ++i) add_call(2000 + 10 * i, 0x1000 + i, 64);
  chunk(1)->used = 10 * 40 - 13;
  std::string path = write();
  auto t = reader::TraceFile::open(path);
  ASSERT_TRUE(t);
  EXPECT_EQ(count_events(**t), 9);
  EXPECT_EQ((*t)->integrity().resyncs, 1u);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "offset 360: invalid record size 40; the rest of this chunk (27 bytes)"))
      << joined((*t)->diagnostics());
  EXPECT_NE(analyze_json(path).find("\"trace-integrity\""), std::string::npos);
}

TEST_F(HandBuiltTrace, RecordsOfAnUnknownTypeAreCounted) {
  add_process(std::string("train\0", 6));
  add_call(2000, 0x1000, 64);
  auto* odd = reinterpret_cast<trace::RecordHeader*>(append(1, 16));
  *odd = trace::RecordHeader{200, 0, 16, 0, 0};
  add_call(3000, 0x2000, 64);
  auto t = reader::TraceFile::open(write());
  ASSERT_TRUE(t);
  EXPECT_EQ(count_events(**t), 2);
  EXPECT_EQ((*t)->damaged_records(), 1u);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "records of a type this cuprobe does not know")) << joined((*t)->diagnostics());
}

TEST_F(HandBuiltTrace, PinRecordsOfBothLayoutsAreReadAndAnotherSizeIsDamage) {
  add_process(std::string("train\0", 6));
  auto pin = [&](uint16_t size, trace::PinOutcome outcome) {
    trace::PinRecord r{};
    r.h = trace::make_header(trace::RecordType::kPin, size);
    r.outcome = uint32_t(outcome);
    r.problem_hash = 0xabc;
    r.ticks = 2500;
    r.engine = 5;
    r.flags = trace::kPinMoved;
    r.pinned_ms = 0.5f;
    r.search_ms = 3.0f;
    r.replaced_ms = 0.75f;
    std::memcpy(append(1, size), &r, std::min<size_t>(size, sizeof r));
  };
  pin(trace::kPinRecordV1Size, trace::PinOutcome::kBudgeted);  // written before replaced_ms existed
  pin(sizeof(trace::PinRecord), trace::PinOutcome::kSearchedLater);
  pin(48, trace::PinOutcome::kPinned);
  auto t = reader::TraceFile::open(write());
  ASSERT_TRUE(t) << t.error().message;
  const auto& pins = (*t)->pins();
  ASSERT_EQ(pins.size(), 2u);
  EXPECT_EQ(pins[0].outcome, trace::PinOutcome::kBudgeted);
  EXPECT_EQ(pins[0].replaced_ms, -1) << "the old layout has no replaced_ms";
  EXPECT_EQ(pins[1].outcome, trace::PinOutcome::kSearchedLater);
  EXPECT_EQ(pins[1].replaced_ms, 0.75);
  EXPECT_TRUE(pins[1].moved);
  EXPECT_EQ(pins[1].engine, 5);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "pin records of the wrong size")) << joined((*t)->diagnostics());
}

TEST_F(HandBuiltTrace, AMisnumberedChunkIsReported) {
  add_process(std::string("train\0", 6));
  add_call(2000, 0x1000, 64);
  chunk(1)->seq = 1;  // the thread's chunk 0 is missing
  auto t = reader::TraceFile::open(write());
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)->integrity().inconsistent, 1u);
  EXPECT_NE((*t)->integrity().first_inconsistent.find("thread 77: 1 chunk numbered up to 1"), std::string::npos)
      << (*t)->integrity().first_inconsistent;
}

TEST_F(HandBuiltTrace, RecordsPastTheClaimedChunksOfAnExitedProcessAreReadAndReported) {
  add_process(std::string("train\0", 6));
  add_call(2000, 0x1000, 64);
  add_call(3000, 0x2000, 64);
  reinterpret_cast<trace::FileHeader*>(file_.data())->chunks_claimed = 1;  // a damaged count
  auto t = reader::TraceFile::open(write());
  ASSERT_TRUE(t);
  EXPECT_EQ(count_events(**t), 2);
  EXPECT_TRUE(mentions((*t)->diagnostics(), "chunk 1 holds records but lies past the 1 chunks the header claims"))
      << joined((*t)->diagnostics());
}

}  // namespace
}  // namespace cuprobe
