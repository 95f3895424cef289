// `cuprobe export --format perfetto` and `--format chrome` as users run them, checked against what
// `cuprobe analyze --json` says of the same job: the Perfetto file decoded with libprotobuf
// (tests/export/perfetto_subset.proto, Perfetto's field numbers) for its tracks, interned names,
// slice nesting, plan selections, memory counters, findings and wall-clock times; the Chrome file
// parsed as JSON for the same counts.
//
// The file is compiled twice: into cuprobe_perfetto_tests with CUPROBE_PERFETTO_PROTO (the
// protobuf half, linked with libprotobuf by tests/export/perfetto.cmake) and into cuprobe_tests
// without it (the Chrome half).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "support/run.h"

#ifdef CUPROBE_PERFETTO_PROTO
#include "perfetto_subset.pb.h"
#endif

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFixtures = std::string(CUPROBE_TEST_RULES_DIR) + "/fixtures";
const std::string kOom = kFixtures + "/oom-postmortem/fire/out_of_memory.jsonl";
const std::string kRank0 = kFixtures + "/algo-divergence/fire/rank0.jsonl";
const std::string kRank1 = kFixtures + "/algo-divergence/fire/rank1.jsonl";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `cuprobe export --format FORMAT -o OUT PATHS...`; returns OUT.
std::string export_to(const std::string& format, const std::string& tag, const std::vector<std::string>& paths) {
  std::string out = fresh_dir(tag) + (format == "chrome" ? "/run.json" : "/run.pftrace");
  std::vector<std::string> cmd = {cuprobe_bin(), "export", "--format", format, "-o", out};
  cmd.insert(cmd.end(), paths.begin(), paths.end());
  RunResult r = run(cmd);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(out)) << r.err;
  for (const auto& e : fs::directory_iterator(fs::path(out).parent_path())) {
    EXPECT_NE(e.path().extension(), ".part") << "a partial file was left: " << e.path();
  }
  EXPECT_NE(r.err.find("wrote " + out), std::string::npos) << r.err;
  return out;
}

std::multiset<std::string> finding_titles(const json& report) {
  std::multiset<std::string> s;
  for (const auto& f : report["findings"]) s.insert(f["title"].get<std::string>());
  return s;
}

// A copy of the fixture trace `src` whose process line says another host (with characters JSON
// must escape), same pid: two hosts whose processes share a pid.
std::string on_other_host(const std::string& src, const std::string& dir) {
  std::string text = slurp(src);
  const std::string from = "\"host\":\"node0\"";
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << src;
  if (at != std::string::npos) text.replace(at, from.size(), "\"host\":\"node9 \\\"\\u0001\\t\xC3\xA9\"");
  std::string out = dir + "/other_host.jsonl";
  std::ofstream(out, std::ios::binary) << text;
  return out;
}

#ifdef CUPROBE_PERFETTO_PROTO

namespace pb = cuprobe_test::perfetto;

// A decoded Perfetto export, with the checks every export must pass done while decoding.
struct Decoded {
  struct Event {
    uint64_t ts = 0;
    size_t order = 0;  // position in the file: the tie-break of equal times
    pb::TrackEvent::Type type{};
    uint64_t track = 0;
    std::string name;
    json args = json::object();
    int64_t counter = 0;
    std::vector<std::pair<uint64_t, int64_t>> extra;  // extra counter track, value
  };
  std::map<uint64_t, pb::TrackDescriptor> tracks;
  std::vector<Event> events;
  uint32_t primary_clock = 0;
  uint32_t default_clock = 0;

  std::vector<const pb::TrackDescriptor*> processes() const {
    std::vector<const pb::TrackDescriptor*> v;
    for (const auto& [uuid, t] : tracks) {
      if (t.has_process()) v.push_back(&t);
    }
    return v;
  }
  std::vector<const Event*> on(uint64_t track, pb::TrackEvent::Type type) const {
    std::vector<const Event*> v;
    for (const auto& e : events) {
      if (e.track == track && e.type == type) v.push_back(&e);
    }
    return v;
  }
  const pb::TrackDescriptor* named(const std::string& name) const {
    for (const auto& [uuid, t] : tracks) {
      if (t.name() == name) return &t;
    }
    return nullptr;
  }
};

class Interned {
 public:
  void add(uint64_t iid, const std::string& s) {
    EXPECT_TRUE(map_.emplace(iid, s).second) << "iid " << iid << " interned twice";
  }
  std::string get(uint64_t iid) const {
    auto it = map_.find(iid);
    EXPECT_NE(it, map_.end()) << "iid " << iid << " used before it was interned";
    return it == map_.end() ? std::string() : it->second;
  }

 private:
  std::map<uint64_t, std::string> map_;
};

json annotation_value(const pb::DebugAnnotation& a, const Interned& names, const Interned& values);

std::string annotation_name(const pb::DebugAnnotation& a, const Interned& names) {
  return a.has_name_iid() ? names.get(a.name_iid()) : a.name();
}

json annotation_value(const pb::DebugAnnotation& a, const Interned& names, const Interned& values) {
  if (a.dict_entries_size() > 0) {
    json d = json::object();
    for (const auto& e : a.dict_entries()) d[annotation_name(e, names)] = annotation_value(e, names, values);
    return d;
  }
  if (a.array_values_size() > 0) {
    json v = json::array();
    for (const auto& e : a.array_values()) v.push_back(annotation_value(e, names, values));
    return v;
  }
  if (a.has_string_value_iid()) return values.get(a.string_value_iid());
  if (a.has_string_value()) return a.string_value();
  if (a.has_int_value()) return a.int_value();
  if (a.has_uint_value()) return a.uint_value();
  if (a.has_double_value()) return a.double_value();
  if (a.has_bool_value()) return a.bool_value();
  return nullptr;
}

Decoded decode(const std::string& path) {
  Decoded d;
  pb::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(slurp(path))) << path << " is not a Perfetto trace";
  EXPECT_GE(trace.packet_size(), 3);
  Interned event_names, arg_names, values;
  bool cleared = false;
  std::set<uint32_t> sequences;
  for (int i = 0; i < trace.packet_size(); ++i) {
    const pb::TracePacket& p = trace.packet(i);
    sequences.insert(p.trusted_packet_sequence_id());
    if (p.has_clock_snapshot()) {
      d.primary_clock = p.clock_snapshot().primary_trace_clock();
      EXPECT_FALSE(cleared) << "the clock snapshot must come before the events";
      continue;
    }
    if (!cleared) {
      EXPECT_EQ(p.sequence_flags(), 1u) << "the sequence's first packet clears its incremental state";
      cleared = true;
      if (p.has_trace_packet_defaults()) d.default_clock = p.trace_packet_defaults().timestamp_clock_id();
    } else {
      EXPECT_EQ(p.sequence_flags(), 2u) << "packet " << i << " does not declare that it needs incremental state";
    }
    if (p.has_interned_data()) {
      for (const auto& n : p.interned_data().event_names()) event_names.add(n.iid(), n.name());
      for (const auto& n : p.interned_data().debug_annotation_names()) arg_names.add(n.iid(), n.name());
      for (const auto& n : p.interned_data().debug_annotation_string_values()) values.add(n.iid(), n.str());
    }
    if (p.has_track_descriptor()) {
      const auto& t = p.track_descriptor();
      EXPECT_TRUE(d.tracks.emplace(t.uuid(), t).second) << "track uuid " << t.uuid() << " declared twice";
      if (t.has_parent_uuid()) {
        EXPECT_TRUE(d.tracks.count(t.parent_uuid())) << "parent of " << t.uuid() << " unknown";
      }
    }
    if (p.has_track_event()) {
      const auto& e = p.track_event();
      EXPECT_TRUE(d.tracks.count(e.track_uuid())) << "event on undeclared track " << e.track_uuid();
      EXPECT_TRUE(p.has_timestamp());
      Decoded::Event ev;
      ev.ts = p.timestamp();
      ev.order = size_t(i);
      ev.type = e.type();
      ev.track = e.track_uuid();
      if (e.has_name_iid()) ev.name = event_names.get(e.name_iid());
      else ev.name = e.name();
      for (const auto& a : e.debug_annotations()) ev.args[annotation_name(a, arg_names)] = annotation_value(a, arg_names, values);
      ev.counter = e.counter_value();
      EXPECT_EQ(e.extra_counter_track_uuids_size(), e.extra_counter_values_size());
      for (int k = 0; k < e.extra_counter_track_uuids_size() && k < e.extra_counter_values_size(); ++k) {
        EXPECT_TRUE(d.tracks.count(e.extra_counter_track_uuids(k)));
        ev.extra.emplace_back(e.extra_counter_track_uuids(k), e.extra_counter_values(k));
      }
      d.events.push_back(std::move(ev));
    }
  }
  sequences.erase(0);
  EXPECT_EQ(sequences.size(), 1u) << "one trusted_packet_sequence_id";
  // Slices properly nested per track, in the order a viewer sorts them (time, then file order).
  std::vector<const Decoded::Event*> sorted;
  for (const auto& e : d.events) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->ts < b->ts; });
  std::map<uint64_t, std::vector<const Decoded::Event*>> open;
  for (const auto* e : sorted) {
    if (e->type == pb::TrackEvent::TYPE_SLICE_BEGIN) {
      EXPECT_FALSE(e->name.empty());
      open[e->track].push_back(e);
    } else if (e->type == pb::TrackEvent::TYPE_SLICE_END) {
      auto& stack = open[e->track];
      EXPECT_FALSE(stack.empty()) << "slice end without a begin on track " << e->track << " at " << e->ts;
      if (!stack.empty()) stack.pop_back();
    }
  }
  for (const auto& [track, stack] : open) EXPECT_TRUE(stack.empty()) << stack.size() << " slices left open on " << track;
  return d;
}

// Begin events of slices on a track and its lanes whose name contains `part`.
std::vector<const Decoded::Event*> slices_on_tracks_named(const Decoded& d, const std::string& part) {
  std::vector<const Decoded::Event*> v;
  for (const auto& [uuid, t] : d.tracks) {
    if (t.name().find(part) == std::string::npos) continue;
    auto s = d.on(uuid, pb::TrackEvent::TYPE_SLICE_BEGIN);
    v.insert(v.end(), s.begin(), s.end());
  }
  return v;
}

// Largest value each counter track (by name) reached.
std::map<std::string, int64_t> counter_peaks(const Decoded& d) {
  std::map<std::string, int64_t> peak;
  auto note = [&](uint64_t track, int64_t v) {
    const auto& t = d.tracks.at(track);
    EXPECT_TRUE(t.has_counter()) << t.name() << " gets counter values but is not a counter track";
    EXPECT_EQ(t.counter().unit(), pb::CounterDescriptor::UNIT_SIZE_BYTES);
    EXPECT_GE(v, 0) << t.name();
    peak[t.name()] = std::max(peak[t.name()], v);
  };
  for (const auto& e : d.events) {
    if (e.type != pb::TrackEvent::TYPE_COUNTER) continue;
    note(e.track, e.counter);
    for (const auto& [track, v] : e.extra) note(track, v);
  }
  return peak;
}

void expect_findings(const Decoded& d, const json& report, uint64_t lo, uint64_t hi) {
  const pb::TrackDescriptor* track = d.named("cuprobe findings");
  if (report["findings"].empty()) {
    EXPECT_EQ(track, nullptr);
    return;
  }
  ASSERT_NE(track, nullptr);
  std::multiset<std::string> titles;
  for (const auto* e : d.on(track->uuid(), pb::TrackEvent::TYPE_INSTANT)) {
    titles.insert(e->name);
    EXPECT_EQ(e->args["title"], e->name);
    EXPECT_TRUE(e->args.contains("severity") && e->args.contains("message") && e->args.contains("fix")) << e->args;
    EXPECT_GE(e->ts, lo);
    EXPECT_LE(e->ts, hi);
  }
  EXPECT_EQ(titles, finding_titles(report));
}

TEST(PerfettoExport, SearchStormDecodesToTracksSlicesCountersAndFindings) {
  std::string dir = fresh_dir("perfetto-storm");
  uint64_t before = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch()).count());
  RunResult rec = record(dir, {build_path("examples/simulated_storm"), "--benchmark", "--bwd", "--shapes", "12", "--steps", "20"});
  ASSERT_EQ(rec.status, 0) << rec.err;
  uint64_t after = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch()).count());
  json report = analyze_json({dir});
  Decoded d = decode(export_to("perfetto", "perfetto-storm-out", {dir}));

  // Wall clock, given as is: REALTIME is the trace's clock and the sequence's default.
  EXPECT_EQ(d.primary_clock, 1u);
  EXPECT_EQ(d.default_clock, 1u);
  ASSERT_FALSE(d.events.empty());
  for (const auto& e : d.events) {
    ASSERT_GE(e.ts, before) << e.name;
    ASSERT_LE(e.ts, after) << e.name;
  }

  // One process, named by its label; threads under it with its pid.
  auto procs = d.processes();
  ASSERT_EQ(procs.size(), 1u);
  const json& pp = report["summary"]["per_process"][0];
  EXPECT_EQ(procs[0]->process().pid(), pp["pid"].get<int>());
  EXPECT_EQ(procs[0]->process().process_name(), pp["label"].get<std::string>());
  int threads = 0;
  for (const auto& [uuid, t] : d.tracks) {
    if (!t.has_thread()) continue;
    threads++;
    EXPECT_EQ(t.thread().pid(), pp["pid"].get<int>());
    EXPECT_EQ(t.parent_uuid(), procs[0]->uuid());
    EXPECT_FALSE(t.thread().thread_name().empty());
  }
  EXPECT_GE(threads, 1);

  // A plan-selection slice per search, each with its candidates' engines, knobs and times.
  auto searches = slices_on_tracks_named(d, "plan selections");
  ASSERT_GT(report["summary"]["searches"].get<int>(), 0);
  EXPECT_EQ(int(searches.size()), report["summary"]["searches"].get<int>());
  int timed = 0;
  for (const auto* s : searches) {
    EXPECT_TRUE(s->name == "benchmark search" || s->name == "heuristic selection") << s->name;
    EXPECT_FALSE(s->args.value("problem", "").empty()) << s->args;
    if (s->args["candidate_count"] == 0) continue;
    ASSERT_TRUE(s->args["candidates"].is_array()) << s->args;
    EXPECT_EQ(s->args["candidates"].size(), s->args["candidate_count"].get<size_t>());
    for (const auto& c : s->args["candidates"]) {
      EXPECT_TRUE(c.contains("engine")) << c;
      EXPECT_TRUE(c.contains("knobs")) << c;
      if (c.contains("time_ms")) timed++;
    }
    if (s->name == "benchmark search" && s->args.contains("winner_engine")) {
      EXPECT_TRUE(s->args.contains("winner_time_ms")) << s->args;
    }
  }
  EXPECT_GT(timed, 0) << "a benchmark search's candidates carry their measured times";

  // Executions on the thread tracks (the storm's timed candidates among them), with their arguments.
  int executions = 0, candidates = 0;
  for (const auto& e : d.events) {
    if (e.type != pb::TrackEvent::TYPE_SLICE_BEGIN || !d.tracks.at(e.track).has_thread()) continue;
    if (!e.args.contains("engine")) continue;
    executions++;
    if (e.args["candidate"] == true) candidates++;
    EXPECT_TRUE(e.args.contains("knobs") && e.args.contains("workspace") && e.args.contains("problem")) << e.args;
  }
  EXPECT_GT(executions, candidates);
  EXPECT_GT(candidates, 0);

  // Memory counters per owner and per device in total, the total peaking where analyze says.
  auto peaks = counter_peaks(d);
  for (const auto& m : pp["memory"]) {
    std::string total = "cuda:" + std::to_string(m["device"].get<int>()) + " · total";
    ASSERT_TRUE(peaks.count(total)) << total;
    EXPECT_EQ(peaks[total], m["peak"].get<int64_t>()) << total;
  }
  EXPECT_GE(peaks.size(), 2u);
  expect_findings(d, report, before, after);
}

TEST(PerfettoExport, OutOfMemoryShowsFailuresAndMemoryByOwner) {
  json report = analyze_json({kOom});
  Decoded d = decode(export_to("perfetto", "perfetto-oom", {kOom}));
  auto procs = d.processes();
  ASSERT_EQ(procs.size(), 1u);
  const json& pp = report["summary"]["per_process"][0];
  EXPECT_EQ(procs[0]->process().process_name(), pp["label"].get<std::string>());

  int failures = 0;
  for (const auto& e : d.events) {
    if (e.type != pb::TrackEvent::TYPE_SLICE_BEGIN || e.name.find(" failed") == std::string::npos) continue;
    failures++;
    EXPECT_TRUE(d.tracks.at(e.track).has_thread());
    EXPECT_EQ(e.name, e.args["api"].get<std::string>() + " failed");
    EXPECT_NE(e.args["status"], 0) << e.args;
    EXPECT_FALSE(e.args["library"].get<std::string>().empty());
  }
  EXPECT_GT(failures, 0);

  auto peaks = counter_peaks(d);
  bool owner_track = false;
  for (const auto& [name, v] : peaks) {
    if (name.rfind("cuda:", 0) == 0 && name.find(" · total") == std::string::npos) owner_track = true;
  }
  EXPECT_TRUE(owner_track) << "a counter track per owner";
  for (const auto& m : pp["memory"]) {
    std::string total = "cuda:" + std::to_string(m["device"].get<int>()) + " · total";
    EXPECT_EQ(peaks[total], m["peak"].get<int64_t>()) << total;
  }
  // The fixture's times: 2026-11-30 and on (its process started at 1796000000 s).
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& e : d.events) lo = std::min(lo, e.ts), hi = std::max(hi, e.ts);
  EXPECT_GE(lo, 1'700'000'000'000'000'000ull);
  expect_findings(d, report, lo, hi);
}

TEST(PerfettoExport, JobOfTwoRanksAndTwoHostsSharingAPid) {
  std::string dir = fresh_dir("perfetto-hosts");
  std::string other = on_other_host(kRank0, dir);
  json report = analyze_json({kRank0, kRank1, other});
  ASSERT_EQ(report["summary"]["processes"], 3);
  Decoded d = decode(export_to("perfetto", "perfetto-hosts-out", {kRank0, kRank1, other}));
  auto procs = d.processes();
  ASSERT_EQ(procs.size(), 3u);
  std::set<std::string> labels, expected;
  std::set<int> pids;
  for (const auto* p : procs) {
    labels.insert(p->process().process_name());
    pids.insert(p->process().pid());
  }
  for (const auto& p : report["summary"]["per_process"]) expected.insert(p["label"].get<std::string>());
  EXPECT_EQ(labels, expected);
  EXPECT_EQ(pids.size(), 3u) << "a pid repeated on another host must still name another process";
  // Thread tracks follow their process's pid.
  for (const auto& [uuid, t] : d.tracks) {
    if (!t.has_thread()) continue;
    EXPECT_EQ(t.thread().pid(), d.tracks.at(t.parent_uuid()).process().pid());
  }
  EXPECT_EQ(int(slices_on_tracks_named(d, "plan selections").size()), report["summary"]["searches"].get<int>());
  ASSERT_FALSE(report["findings"].empty());
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& e : d.events) lo = std::min(lo, e.ts), hi = std::max(hi, e.ts);
  expect_findings(d, report, lo, hi);
}

#else  // the Chrome JSON half, in cuprobe_tests

json chrome(const std::string& path) {
  json j;
  try {
    j = json::parse(slurp(path));
  } catch (const std::exception& e) {
    ADD_FAILURE() << path << " is not JSON: " << e.what();
    return json::object();
  }
  EXPECT_TRUE(j.contains("traceEvents") && j["traceEvents"].is_array());
  return j;
}

TEST(ChromeExport, JobOfTwoHostsIsValidJsonWithTheSameCounts) {
  std::string dir = fresh_dir("chrome-hosts");
  std::string other = on_other_host(kRank0, dir);
  std::vector<std::string> paths = {kRank0, kRank1, other, kOom};
  json report = analyze_json(paths);
  json j = chrome(export_to("chrome", "chrome-hosts-out", paths));
  std::set<std::string> labels, expected;
  std::set<int64_t> pids;
  int searches = 0, memory = 0;
  std::multiset<std::string> findings;
  std::map<std::pair<int64_t, int64_t>, uint64_t> last_end;  // per thread: X events do not overlap
  for (const auto& e : j["traceEvents"]) {
    std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name") {
      labels.insert(e["args"]["name"].get<std::string>());
      EXPECT_TRUE(pids.insert(e["pid"].get<int64_t>()).second) << "pid " << e["pid"] << " names two processes";
    } else if (ph == "X") {
      ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e;
      EXPECT_GE(e["dur"].get<double>(), 0);
      if (e["name"] == "benchmark search" || e["name"] == "heuristic selection") {
        searches++;
        if (e["args"]["candidate_count"] != 0) {
          EXPECT_TRUE(e["args"]["candidates"].is_array()) << e;
        }
      }
    } else if (ph == "C") {
      memory++;
      EXPECT_TRUE(e["args"].contains("total")) << e;
    } else if (ph == "i" && e["s"] == "g") {
      findings.insert(e["name"].get<std::string>());
      EXPECT_EQ(e["args"]["title"], e["name"]);
    }
  }
  for (const auto& p : report["summary"]["per_process"]) expected.insert(p["label"].get<std::string>());
  EXPECT_EQ(labels, expected);
  EXPECT_EQ(labels.size(), 4u);
  EXPECT_TRUE(std::any_of(labels.begin(), labels.end(),
                          [](const std::string& l) { return l.find("node9 \"\x01\t\xC3\xA9") != std::string::npos; }))
      << "the host name survives escaping";
  EXPECT_EQ(searches, report["summary"]["searches"].get<int>());
  EXPECT_GT(memory, 0);
  EXPECT_FALSE(findings.empty());
  EXPECT_EQ(findings, finding_titles(report));
}

TEST(ChromeExport, TimesAreWallClockMicroseconds) {
  json j = chrome(export_to("chrome", "chrome-oom", {kOom}));
  int events = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M") continue;
    events++;
    // The fixture's process started at 1796000000 s (Unix epoch): in microseconds.
    EXPECT_GE(e["ts"].get<double>(), 1.796e15) << e;
    EXPECT_LT(e["ts"].get<double>(), 1.797e15) << e;
  }
  EXPECT_GT(events, 0);
}

#endif

}  // namespace
}  // namespace cuprobe::test
