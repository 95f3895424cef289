// The flight recorder and capture windows (issue 15, docs/flight-recorder.md) on the test doubles:
// the soak test (millions of calls from many threads through a ring of a few MiB: bounded disk
// and memory, every always-kept record there, the analysis of the last window the same as with
// the whole trace), the default's switch at three quarters of the limit, CUPROBE_KEEP=all as
// before, a SIGKILL in the middle of recycling, the capture window, and values refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include "support/run.h"
#include "trace/reader.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kDeviceMem = 1ull << 30;
constexpr uint64_t kOomRequest = 2ull << 30;
constexpr int kThreads = 8;

// Steps per worker: 8 x 50000 steps make about 2.8 million calls (1.6 million events, the rest
// counted launches and queries). Sanitized builds run an eighth of it.
long soak_steps() { return CUPROBE_SANITIZED || CUPROBE_THREAD_SANITIZED ? 6000 : 50000; }

struct Soak {
  RunResult r;
  std::string dir;
  uint64_t mallocs = 0, frees = 0, finds = 0, live = 0, rss_kb = 0;
  uint64_t file_bytes = 0;
  json analysis;
  const json& process() const { return analysis["summary"]["per_process"][0]; }
  uint64_t calls(const std::string& api) const { return analysis["summary"]["calls_by_api"].value(api, uint64_t(0)); }
  std::set<std::string> rules() const {
    std::set<std::string> out;
    for (const auto& f : analysis["findings"]) out.insert(f["rule"].get<std::string>());
    return out;
  }
  const json* finding(const std::string& rule) const {
    for (const auto& f : analysis["findings"]) {
      if (f["rule"] == rule) return &f;
    }
    return nullptr;
  }
};

Soak soak(const std::string& tag, const Env& shim_vars, long steps, int shape_every = 0) {
  Soak s;
  s.dir = fresh_dir(tag);
  Env env = shim_vars;
  env.emplace_back("FAKECUDA_MEM", std::to_string(kDeviceMem));
  env.emplace_back("CUPROBE_OUT", s.dir);
  env.emplace_back("CUPROBE_ALERTS", "off");
  env.emplace_back("LD_PRELOAD", shim_preload());
  s.r = run({program("soak"), std::to_string(kThreads), std::to_string(steps), std::to_string(shape_every),
             std::to_string(kOomRequest)},
            shim_env(env));
  std::istringstream out(s.r.out);
  std::string word;
  while (out >> word) {
    uint64_t* into = word == "mallocs"      ? &s.mallocs
                     : word == "frees"      ? &s.frees
                     : word == "finds"      ? &s.finds
                     : word == "live_bytes" ? &s.live
                     : word == "rss_kb"     ? &s.rss_kb
                                            : nullptr;
    if (into != nullptr) out >> *into;
  }
  for (const auto& e : fs::directory_iterator(s.dir)) s.file_bytes += fs::file_size(e.path());
  // allocation-churn's share of time in the calls follows how loaded the machine is (under a
  // sanitizer, next to a build, it crossed its 1 % in one of two soak runs): the runs compared
  // here are separate processes, so the rule decides on the calls alone.
  s.analysis = analyze_json({s.dir}, {"--set", "allocation-churn.min_time_share=0"});
  return s;
}

// Nothing lost of what must be kept: every allocation and free, every search, every cuDNN handle,
// the framework's OOM report, as many as the program made (it counts them itself).
void expect_everything_kept(const Soak& s) {
  auto lines = dump(s.dir, {"--api", "cudaMalloc,cudaFree,cudnnFindConvolutionForwardAlgorithmEx,cudnnCreate,"
                                     "_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE"});
  EXPECT_EQ(of_type(lines, "call", "cudaMalloc").size(), s.mallocs + 1) << "every allocation, the failed one too";
  EXPECT_EQ(of_type(lines, "call", "cudaFree").size(), s.frees);
  EXPECT_EQ(of_type(lines, "call", "cudnnFindConvolutionForwardAlgorithmEx").size(), s.finds);
  EXPECT_EQ(of_type(lines, "call", "cudnnCreate").size(), uint64_t(kThreads));
  EXPECT_EQ(of_type(lines, "call", "_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE").size(), 1u);
  EXPECT_EQ(s.process()["searches"], s.finds);
  EXPECT_EQ(s.process()["kept_dropped"], 0u);
  EXPECT_EQ(s.process()["dropped_events"], 0u);
}

TEST(FlightRecorder, SoakKeepsTheLastWindowAndEverythingThatMustBeKept) {
  const long steps = soak_steps();
  Soak whole = soak("fr-soak-all", {{"CUPROBE_KEEP", "all"}}, steps, 5000);
  Soak ring = soak("fr-soak-ring", {{"CUPROBE_KEEP", "last:4MiB"}}, steps, 5000);
  Soak longer = soak("fr-soak-ring2", {{"CUPROBE_KEEP", "last:4MiB"}}, 2 * steps, 5000);
  for (const Soak* s : {&whole, &ring, &longer}) {
    ASSERT_EQ(s->r.status, 1) << "the soak ends with an OOM: " << s->r.out << s->r.err;
    ASSERT_EQ(s->analysis["summary"]["processes"], 1) << s->analysis.dump();
  }
  uint64_t whole_events = whole.process()["events"];
  ASSERT_GT(whole_events, uint64_t(kThreads) * uint64_t(steps) * 3) << "the soak's calls were recorded";
  EXPECT_TRUE(whole.process()["coverage"].is_null()) << "CUPROBE_KEEP=all has no ring";

  // Bounded disk: the routine calls take the ring's 4 MiB, whatever the run's length; what grows
  // is the kept stream (the allocations the workers keep making).
  const json& cov = ring.process()["coverage"];
  ASSERT_TRUE(cov.is_object()) << ring.process().dump();
  EXPECT_EQ(cov["keep"], "last");
  EXPECT_EQ(cov["ring_bytes"], 4u << 20);
  EXPECT_GT(whole.file_bytes, 4 * ring.file_bytes) << whole.file_bytes << " vs " << ring.file_bytes;
  EXPECT_LT(ring.file_bytes, 24u << 20) << "ring 4 MiB + kept records + one 8 MiB segment of slack";
  uint64_t kept_growth = 64 * (longer.calls("cudaMalloc") + longer.calls("cudaFree") - ring.calls("cudaMalloc") -
                               ring.calls("cudaFree"));
  EXPECT_LT(longer.file_bytes, ring.file_bytes + kept_growth + (9u << 20))
      << "twice the run: only the kept records (" << kept_growth << " bytes) and segment slack more";
  // Bounded memory: the process's peak resident set does not follow the run's length.
  EXPECT_LT(longer.rss_kb, ring.rss_kb + 8 * 1024) << ring.rss_kb << " kB, then " << longer.rss_kb << " kB";

  // Nothing lost of what must be kept, and the rest accounted for: what is there plus what the ring
  // overwrote is what the run with every event recorded (give or take the shim's own memory
  // samples, which follow the clock).
  expect_everything_kept(ring);
  expect_everything_kept(longer);
  uint64_t ring_events = ring.process()["events"];
  uint64_t overwritten = cov["overwritten_calls"];
  EXPECT_GT(overwritten, whole_events / 2);
  EXPECT_NEAR(double(ring_events + overwritten), double(whole_events), 8.0);
  EXPECT_GT(cov["complete_from_s"].get<double>(), 0.0);

  // The analysis of the last window: the same findings as with the whole trace, the OOM explained
  // the same way, and each finding says which part of the run it rests on.
  EXPECT_EQ(ring.rules(), whole.rules()) << ring.analysis["findings"].dump(1);
  const json* oom = ring.finding("oom-postmortem");
  const json* oom_whole = whole.finding("oom-postmortem");
  ASSERT_NE(oom, nullptr) << ring.analysis["findings"].dump(1);
  ASSERT_NE(oom_whole, nullptr);
  EXPECT_EQ((*oom)["evidence"]["live"], ring.live) << (*oom)["evidence"].dump();
  EXPECT_EQ((*oom)["evidence"]["live"], (*oom_whole)["evidence"]["live"]);
  EXPECT_EQ((*oom)["evidence"]["requested"], kOomRequest);
  EXPECT_EQ((*oom)["call_sites"], (*oom_whole)["call_sites"]);
  EXPECT_NE((*oom)["message"].get<std::string>().find("[Rests on partial traces: "), std::string::npos);
  EXPECT_TRUE((*oom)["evidence"]["coverage"].is_array());
  EXPECT_EQ((*oom_whole)["message"].get<std::string>().find("Rests on partial"), std::string::npos);
  // The HTML report carries the same sentence for its Processes table ("trace holds").
  std::string html = fresh_dir("fr-soak-report") + "/r.html";
  RunResult rep = run({cuprobe_bin(), "report", "-o", html, ring.dir});
  ASSERT_EQ(rep.status, 0) << rep.err;
  std::ifstream in(html);
  std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find(cov["text"].get<std::string>()), std::string::npos);
  EXPECT_NE(page.find("'trace holds'"), std::string::npos);
}

TEST(FlightRecorder, AutoKeepsTheStartWholeThenTheLastQuarterOfTheLimit) {
  Soak s = soak("fr-auto", {{"CUPROBE_MAX_MB", "8"}}, soak_steps() / 2);
  ASSERT_EQ(s.r.status, 1) << s.r.err;
  const json& cov = s.process()["coverage"];
  ASSERT_TRUE(cov.is_object()) << s.process().dump();
  EXPECT_EQ(cov["keep"], "auto");
  EXPECT_EQ(cov["ring_bytes"], 2u << 20) << "a quarter of 8 MiB";
  EXPECT_GT(cov["ring_started_s"].get<double>(), 0.0);
  EXPECT_GT(cov["overwritten_calls"].get<uint64_t>(), 0u);
  EXPECT_LE(s.file_bytes, (8u << 20) + (64u << 10)) << "the limit holds";
  expect_everything_kept(s);
  // The start is there: the first steps' routine calls were written before the ring began.
  auto copies = of_type(dump(s.dir, {"--api", "cudaMemcpyAsync"}), "call", "cudaMemcpyAsync");
  ASSERT_FALSE(copies.empty());
  uint64_t first = UINT64_MAX;
  for (const auto& c : copies) first = std::min(first, c["ts_ns"].get<uint64_t>());
  auto lines = dump(s.dir, {"--api", "cudaMemcpyAsync"});
  uint64_t start_ns = of_type(lines, "process")[0]["start_ns"];
  uint64_t ring_ns = of_type(lines, "process")[0]["coverage"]["ring_started_ns"];
  EXPECT_LT(first, ring_ns) << "routine calls from before the ring began are kept";
  EXPECT_GT(ring_ns, start_ns);
}

TEST(FlightRecorder, KeepAllStopsAtTheLimitAsBefore) {
  Soak s = soak("fr-all", {{"CUPROBE_KEEP", "all"}, {"CUPROBE_MAX_MB", "4"}}, soak_steps() / 4);
  ASSERT_EQ(s.r.status, 1) << s.r.err;
  EXPECT_TRUE(s.process()["coverage"].is_null());
  EXPECT_GT(s.process()["dropped_events"].get<uint64_t>(), 0u);
  ASSERT_NE(s.finding("trace-integrity"), nullptr) << s.analysis["findings"].dump(1);
  EXPECT_EQ((*s.finding("trace-integrity"))["evidence"]["trace_limit_hit"], true);
}

TEST(FlightRecorder, ASigkillWhileTheRingTurnsLeavesAReadableTrace) {
  std::string dir = fresh_dir("fr-kill");
  Env env = {{"FAKECUDA_MEM", std::to_string(kDeviceMem)}, {"CUPROBE_OUT", dir}, {"CUPROBE_KEEP", "last:1MiB"},
             {"LD_PRELOAD", shim_preload()}};
  Child c = spawn({program("soak"), "4", "100000000", "1000", std::to_string(kOomRequest)}, shim_env(env));
  ASSERT_GT(c.pid, 0);
  // Let the ring turn over many times, then kill it in the middle of whatever it was doing.
  std::this_thread::sleep_for(std::chrono::milliseconds(CUPROBE_THREAD_SANITIZED ? 3000 : 700));
  ::kill(c.pid, SIGKILL);
  EXPECT_EQ(c.wait(), 128 + SIGKILL);
  auto lines = dump(dir, {"--no-events"});
  auto procs = of_type(lines, "process");
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_FALSE(procs[0].contains("diagnostics")) << procs[0]["diagnostics"].dump(1);
  EXPECT_GT(procs[0]["coverage"]["recycled_chunks"].get<uint64_t>(), 0u) << procs[0].dump();
  json a = analyze_json({dir});
  EXPECT_EQ(a["summary"]["per_process"][0]["state"], "incomplete");
  for (const auto& w : a.value("warnings", json::array())) ADD_FAILURE() << w;
}

TEST(FlightRecorder, ACaptureWindowRecordsRoutineCallsOnlyInsideIt) {
  // The soak is over long before the window opens one second after the start: only the calls that
  // are always kept are there; every other one is counted as outside the window.
  Soak whole = soak("fr-window-all", {{"CUPROBE_KEEP", "all"}}, soak_steps() / 8);
  Soak s = soak("fr-window", {{"CUPROBE_DELAY_S", "1"}}, soak_steps() / 8);
  // CI under TSan once saw the reference with 42 events and no copies: TSan had reported a race
  // (fixed) and the program ended early; say why if anything like it recurs.
  ASSERT_EQ(whole.r.status, 1) << whole.r.out << whole.r.err;
  ASSERT_GT(whole.calls("cudaMemcpyAsync"), 0u) << whole.analysis.dump().substr(0, 4000);
  ASSERT_EQ(s.r.status, 1) << s.r.err;
  const json& cov = s.process()["coverage"];
  ASSERT_TRUE(cov.is_object()) << s.process().dump();
  // The delay counts from the shim's start, the trace's clock from a little later; under TSan that
  // gap grew to 22 ms in CI (3ca4280), and to 78 ms on the 2-core VM once the runtime double
  // opened the driver double and initialised it in its first call (issue 25's device queries):
  // a sanitized dlopen in between; and to 185 ms in CI's ASan stage on a loaded runner. The trace
  // never starts before the shim, so the window is never later than the delay on the trace's clock;
  // how much earlier depends on the machine's load, bounded loosely under sanitizers.
  double from_s = cov["window_from_s"].get<double>();
  EXPECT_LE(from_s, 1.0 + 1e-3);
  EXPECT_GT(from_s, CUPROBE_SANITIZED || CUPROBE_THREAD_SANITIZED ? 0.5 : 0.95);
  EXPECT_TRUE(cov["window_to_s"].is_null());
  // Only the copies and executions just after a search (kept with the search) are there.
  EXPECT_LT(s.calls("cudaMemcpyAsync") * 4, whole.calls("cudaMemcpyAsync"));
  EXPECT_LT(s.calls("cudnnConvolutionForward") * 4, whole.calls("cudnnConvolutionForward"));
  expect_everything_kept(s);
  uint64_t outside = cov["outside_window_calls"];
  EXPECT_NEAR(double(s.process()["events"].get<uint64_t>() + outside), double(whole.process()["events"].get<uint64_t>()),
              8.0);
  const json* oom = s.finding("oom-postmortem");
  ASSERT_NE(oom, nullptr);
  EXPECT_NE((*oom)["message"].get<std::string>().find("capture window"), std::string::npos) << (*oom)["message"];
}

TEST(FlightRecorder, ProcessWideRecordsAreNeverOverwritten) {
  // Thousands of distinct stacks (the meta writer's chunks fill and roll over many times) between
  // bursts of routine calls that wrap a 1 MiB ring again and again.
  std::string dir = fresh_dir("fr-meta");
  const int stacks = 3000, between = CUPROBE_THREAD_SANITIZED ? 50 : 200;
  RunResult r = run({program("meta_flood"), std::to_string(stacks), std::to_string(between)},
                    shim_env({{"CUPROBE_OUT", dir}, {"CUPROBE_KEEP", "last:1MiB"}}));
  ASSERT_EQ(r.status, 0) << r.err;
  auto files = reader::find_trace_files(dir);
  ASSERT_TRUE(files && files->size() == 1u);
  auto t = reader::TraceFile::open((*files)[0]);
  ASSERT_TRUE(t) << t.error().message;
  const reader::Trace& trace = **t;
  EXPECT_GT(trace.coverage().recycled_chunks, 50u) << "the ring turned over";
  EXPECT_TRUE(trace.diagnostics().empty()) << trace.diagnostics()[0];
  EXPECT_EQ(trace.stat(trace::kStatKeptDropped), 0u);
  std::istringstream out(r.out);
  std::string word;
  int seen = 0;
  uint32_t id = 0;
  uint64_t pc = 0;
  while (out >> word >> id >> pc) {
    ASSERT_EQ(word, "stack");
    const reader::Stack* st = trace.stack(reader::StackId(id));
    ASSERT_NE(st, nullptr) << "stack " << id << " of " << stacks << " is missing";
    ASSERT_EQ(st->pcs.size(), 24u);
    EXPECT_EQ(st->pcs[0], pc);
    ++seen;
  }
  EXPECT_EQ(seen, stacks);
  // The API table is process-wide too: the calls that are there still have their names.
  EXPECT_NE(trace.api_name(trace.apis().empty() ? 0 : 1), "");
  bool syncs = false;
  trace.for_each_event([&](const reader::Event& e) { syncs |= trace.api_name(e.api) == "cudaStreamSynchronize"; });
  EXPECT_TRUE(syncs);
}

// The counts a nvtx_window run prints, and the calls its trace holds.
struct NvtxRun {
  RunResult r;
  uint64_t inside = 0, outside = 0, syncs = 0;
  json coverage;
};
NvtxRun nvtx_run(const std::string& dir, const Env& env, const std::vector<std::string>& record_opts = {}) {
  NvtxRun n;
  n.r = record_opts.empty() ? run({program("nvtx_window"), "3000"}, shim_env(env))
                            : record(dir, {program("nvtx_window"), "3000"}, env, record_opts);
  std::istringstream out(n.r.out);
  std::string word;
  uint64_t v = 0;
  while (out >> word >> v) (word == "inside" ? n.inside : n.outside) = v;
  auto lines = dump(dir);
  n.syncs = of_type(lines, "call", "cudaStreamSynchronize").size();
  auto procs = of_type(lines, "process");
  if (!procs.empty()) n.coverage = procs[0].value("coverage", json());
  return n;
}

TEST(FlightRecorder, AnNvtxRangeOpensTheCaptureWindow) {
  std::string dir = fresh_dir("fr-nvtx");
  NvtxRun n = nvtx_run(dir, {{"CUPROBE_OUT", dir}, {"CUPROBE_WINDOW_NVTX", "cuprobe-window"}, {"LD_PRELOAD", shim_preload()}});
  ASSERT_EQ(n.r.status, 0) << n.r.err;
  ASSERT_EQ(n.inside, 2000u);
  // Pushed and popped on one thread (a nested range of another name inside), started on one thread
  // and ended on another: exactly the calls made inside were written.
  EXPECT_EQ(n.syncs, n.inside);
  ASSERT_TRUE(n.coverage.is_object());
  EXPECT_EQ(n.coverage["window_marker"], "cuprobe-window");
  EXPECT_EQ(n.coverage["window_marker_opens"], 2u);
  EXPECT_EQ(n.coverage["outside_window_calls"], n.outside);
  json a = analyze_json({dir});
  std::string text = a["summary"]["per_process"][0]["coverage"]["text"];
  EXPECT_NE(text.find("only while an NVTX range \"cuprobe-window\" was open (capture window, opened 2 times)"),
            std::string::npos)
      << text;

  // The same through record; and with another NVTX tool named, record refuses, the shim records all.
  std::string rec = fresh_dir("fr-nvtx-rec");
  NvtxRun r = nvtx_run(rec, {}, {"-q", "--window-nvtx", "cuprobe-window"});
  ASSERT_EQ(r.r.status, 0) << r.r.err;
  EXPECT_EQ(r.syncs, r.inside);
  RunResult refused = record(fresh_dir("fr-nvtx-other"), {program("nvtx_window")},
                             shim_env({{"NVTX_INJECTION64_PATH", "/opt/nsight/libToolsInjection64.so"}}),
                             {"--window-nvtx", "x"});
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find("NVTX_INJECTION64_PATH names /opt/nsight/libToolsInjection64.so"), std::string::npos)
      << refused.err;
  std::string other = fresh_dir("fr-nvtx-plain");
  NvtxRun o = nvtx_run(other, {{"CUPROBE_OUT", other}, {"CUPROBE_WINDOW_NVTX", "cuprobe-window"},
                               {"NVTX_INJECTION64_PATH", "/nonexistent/libtool.so"}, {"LD_PRELOAD", shim_preload()}});
  ASSERT_EQ(o.r.status, 0) << o.r.err;
  EXPECT_NE(o.r.err.find("recording every routine call instead"), std::string::npos) << o.r.err;
  EXPECT_EQ(o.syncs, o.inside + o.outside);
}

TEST(FlightRecorder, ValuesTheShimCannotTakeAreRefused) {
  // Under plain LD_PRELOAD: one warning, and the default.
  std::string dir = fresh_dir("fr-bad");
  RunResult r = run({program("exercise_cudart")},
                    shim_env({{"CUPROBE_OUT", dir}, {"CUPROBE_KEEP", "last:64KiB"}, {"LD_PRELOAD", shim_preload()}}));
  EXPECT_NE(r.err.find("cuprobe: CUPROBE_KEEP=last:64KiB is not all, auto or last:SIZE"), std::string::npos) << r.err;
  // By record: before the job starts, naming the option or the variable.
  RunResult bad = record(fresh_dir("fr-bad-rec"), {program("exercise_cudart")}, shim_env(), {"--keep", "last"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--keep expects all, auto or last:SIZE"), std::string::npos) << bad.err;
  RunResult inherited = record(fresh_dir("fr-bad-env"), {program("exercise_cudart")}, shim_env({{"CUPROBE_KEEP", "most"}}));
  EXPECT_EQ(inherited.status, 2);
  EXPECT_NE(inherited.err.find("CUPROBE_KEEP=most in the environment"), std::string::npos) << inherited.err;
  RunResult zero = record(fresh_dir("fr-bad-dur"), {program("exercise_cudart")}, shim_env(), {"--duration", "0"});
  EXPECT_EQ(zero.status, 2);
  // And what it takes.
  std::string ok_dir = fresh_dir("fr-ok-rec");
  RunResult ok = record(ok_dir, {program("exercise_cudart")}, shim_env(), {"-q", "--keep", "last:1MiB", "--delay", "0"});
  EXPECT_EQ(ok.status, 0) << ok.err;
  auto procs = of_type(dump(ok_dir, {"--no-events"}), "process");
  ASSERT_FALSE(procs.empty());
  EXPECT_EQ(procs[0]["coverage"]["keep"], "last");
  EXPECT_EQ(procs[0]["coverage"]["ring_bytes"], 1u << 20);
}

}  // namespace
}  // namespace cuprobe::test
