// `cuprobe report`: the page for the bundled example's search storm and for rule fixtures with an
// out-of-memory failure and with ranks that chose different plans, opened in headless Chromium
// (issue 14's acceptance: no script error, the findings and the memory chart in the DOM, a
// screenshot under the build tree); and, without a browser, the aggregation of a long job (a
// bounded number of memory points that keeps the peak) and the escaping of trace text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/engine.h"
#include "export/export.h"
#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFixtures = std::string(CUPROBE_TEST_RULES_DIR) + "/fixtures";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Chromium as CI installs it (scripts/deps.sh); "" after failing the test when it is missing.
std::string chromium() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path p = fs::path(dir) / "chromium";
    if (!dir.empty() && access(p.c_str(), X_OK) == 0) return p.string();
  }
  ADD_FAILURE() << "chromium is not on PATH: run scripts/deps.sh (it installs Debian's chromium), which this "
                   "test needs to open the HTML report";
  return "";
}

// The page's text as the browser sees it after its script ran, and what the browser logged.
struct Dom {
  std::string html;
  std::string log;
};

std::string fmt_ptr(uint64_t p) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(p));
  return text;
}

std::vector<std::string> browser_args(const std::string& tag) {
  std::string profile = build_path("tests/report-chromium/" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(profile);
  // Root (CI's containers) needs --no-sandbox; a fresh profile keeps runs independent; the
  // timeout bounds a browser that hangs.
  return {"timeout", "90", chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
          "--user-data-dir=" + profile,
          "--enable-logging=stderr", "--v=0"};
}

Dom open_in_chromium(const std::string& html_path, const std::string& tag) {
  auto args = browser_args(tag);
  if (args[2].empty()) return {};
  args.insert(args.end(), {"--virtual-time-budget=5000", "--dump-dom", "file://" + html_path});
  RunResult r = run(args);
  EXPECT_EQ(r.status, 0) << "chromium --dump-dom " << html_path << ": " << r.err.substr(0, 2000);
  return {r.out, r.err};
}

void screenshot(const std::string& html_path, const std::string& name) {
  auto args = browser_args(name + "-shot");
  if (args[2].empty()) return;
  fs::create_directories(build_path("tests/report-screenshots"));
  std::string png = build_path("tests/report-screenshots/" + name + ".png");
  fs::remove(png);
  args.insert(args.end(), {"--hide-scrollbars", "--window-size=1400,2400", "--virtual-time-budget=5000",
                           "--screenshot=" + png, "file://" + html_path});
  RunResult r = run(args);
  EXPECT_EQ(r.status, 0) << r.err.substr(0, 2000);
  std::string bytes = slurp(png);
  ASSERT_GT(bytes.size(), 20000u) << png << " is missing or too small to show the report";
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << png << " is not a PNG";
}

// The element with this id, from its start tag to the end of the section or list it opens.
std::string section(const std::string& html, const std::string& id, const std::string& end = "</section>") {
  size_t at = html.find("id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  size_t stop = html.find(end, at);
  return html.substr(at, stop == std::string::npos ? std::string::npos : stop - at);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

// Text as Chromium serializes it in --dump-dom.
std::string escaped(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 2, "\xc2\xa0") == 0) {  // U+00A0
      out += "&nbsp;";
      ++i;
      continue;
    }
    switch (s[i]) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      default: out += s[i];
    }
  }
  return out;
}

std::string write_report(const std::vector<std::string>& paths, const std::string& tag) {
  std::string out = fresh_dir("report-" + tag) + "/report.html";
  std::vector<std::string> cmd = {cuprobe_bin(), "report", "-q", "-o", out};
  cmd.insert(cmd.end(), paths.begin(), paths.end());
  RunResult r = run(cmd);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("cuprobe report: wrote " + out), std::string::npos) << r.err;
  for (const auto& e : fs::directory_iterator(fs::path(out).parent_path())) {
    EXPECT_NE(e.path().extension(), ".part") << "a partial file was left: " << e.path();
  }
  return out;
}

// What every page must show after its script ran: no error of any kind, and each finding of the
// analysis under #findings.
void expect_clean_page(const Dom& dom, const json& analysis) {
  ASSERT_NE(dom.html.find("data-rendered=\"ok\""), std::string::npos)
      << "the report's script did not finish drawing:\n" << section(dom.html, "errors", "</ul>");
  std::string errors = section(dom.html, "errors", "</ul>");
  EXPECT_FALSE(errors.empty()) << "no #errors element";
  EXPECT_EQ(errors.find("<li"), std::string::npos) << "script errors:\n" << errors;
  std::istringstream log(dom.log);
  for (std::string line; std::getline(log, line);) {
    bool console = line.find(":CONSOLE") != std::string::npos;
    EXPECT_FALSE(console && (line.find("Uncaught") != std::string::npos || line.find("rror") != std::string::npos))
        << line;
  }
  std::string findings = section(dom.html, "findings");
  ASSERT_FALSE(analysis["findings"].empty());
  EXPECT_EQ(count(findings, "class=\"finding-title\""), analysis["findings"].size());
  for (const auto& f : analysis["findings"]) {
    EXPECT_NE(findings.find(escaped(f["title"].get<std::string>())), std::string::npos) << f["title"];
    EXPECT_NE(findings.find(escaped(f["message"].get<std::string>())), std::string::npos) << f["message"];
  }
}

// The memory charts, one per process and device, each with its stacked areas.
std::vector<std::string> memory_charts(const std::string& html) {
  std::string memory = section(html, "memory");
  std::vector<std::string> charts;
  const std::string start = "class=\"chart mem-chart\"";
  for (size_t at = memory.find(start); at != std::string::npos;) {
    size_t next = memory.find(start, at + start.size());
    charts.push_back(memory.substr(at, next == std::string::npos ? std::string::npos : next - at));
    at = next;
  }
  return charts;
}

TEST(ReportHtml, SearchStormOfTheBundledExampleOpensInChromium) {
  std::string run_dir = fresh_dir("storm") + "/run";
  RunResult rec = record(run_dir, {build_path("examples/simulated_storm"), "--benchmark", "--bwd", "--shapes", "12",
                                   "--steps", "20"});
  ASSERT_EQ(rec.status, 0) << rec.err;
  json analysis = analyze_json({run_dir});
  std::string page = write_report({run_dir}, "storm");
  Dom dom = open_in_chromium(page, "storm");
  expect_clean_page(dom, analysis);
  EXPECT_NE(section(dom.html, "findings").find("data-rule=\"research-storm\""), std::string::npos);

  auto charts = memory_charts(dom.html);
  ASSERT_FALSE(charts.empty()) << section(dom.html, "memory");
  for (const auto& c : charts) EXPECT_GT(count(c, "class=\"mem-area\""), 0u) << c.substr(0, 400);

  // Every search of the job is in a bar, and the steps it ran against are drawn.
  std::string searches = section(dom.html, "searches");
  EXPECT_GT(count(searches, "class=\"search-bar "), 0u);
  EXPECT_NE(searches.find("class=\"step-ticks\""), std::string::npos);
  EXPECT_NE(searches.find(" — " + std::to_string(analysis["summary"]["searches"].get<int>()) + " searches,"),
            std::string::npos)
      << "the lane's label gives the job's search count";
  EXPECT_NE(section(dom.html, "faults").find("No faults were injected"), std::string::npos);
  screenshot(page, "storm");
}

TEST(ReportHtml, OutOfMemoryIsMarkedOnTheDevicesChart) {
  std::string fixture = kFixtures + "/oom-postmortem/fire/out_of_memory.jsonl";
  json analysis = analyze_json({fixture});
  std::string page = write_report({fixture}, "oom");
  Dom dom = open_in_chromium(page, "oom");
  expect_clean_page(dom, analysis);
  auto charts = memory_charts(dom.html);
  ASSERT_EQ(charts.size(), 1u) << section(dom.html, "memory");
  EXPECT_NE(charts[0].find("data-device=\"0\""), std::string::npos);
  EXPECT_GT(count(charts[0], "class=\"mem-area\""), 0u);
  // The fixture's two failed 6 GiB cudaMalloc calls, and the finding's time.
  EXPECT_EQ(count(charts[0], "class=\"oom-marker\""), 2u) << charts[0];
  EXPECT_NE(charts[0].find("cudaMalloc of 6.00 GiB returned 2"), std::string::npos);
  EXPECT_NE(charts[0].find("class=\"finding-marker\""), std::string::npos);
  EXPECT_NE(charts[0].find("device capacity 24.0 GiB"), std::string::npos);
  screenshot(page, "oom");
}

TEST(ReportHtml, RanksThatChoseDifferentPlansAreTabled) {
  std::vector<std::string> ranks = {kFixtures + "/algo-divergence/fire/rank0.jsonl",
                                    kFixtures + "/algo-divergence/fire/rank1.jsonl"};
  json analysis = analyze_json(ranks);
  std::string page = write_report(ranks, "divergence");
  Dom dom = open_in_chromium(page, "divergence");
  expect_clean_page(dom, analysis);
  std::string div = section(dom.html, "divergence");
  ASSERT_NE(div.find("divergence-table"), std::string::npos) << div;
  EXPECT_GT(count(div, "class=\"div-row\""), 0u);
  EXPECT_NE(div.find("rank 0"), std::string::npos) << div;
  EXPECT_NE(div.find("rank 1"), std::string::npos) << div;
  EXPECT_EQ(div.find("No problem got different plans"), std::string::npos);
  screenshot(page, "divergence");
}

TEST(ReportHtml, ManyRanksShowGroupsAndOutliers) {
  // 24 ranks of one fixture process, renumbered; rank 9 on another GPU model.
  std::ifstream in(kFixtures + "/sync-stall/quiet/overlapped.jsonl");
  std::vector<json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
  std::string job = fresh_dir("report-ranks") + "/job.jsonl";
  {
    std::ofstream out(job);
    for (int r = 0; r < 24; ++r) {
      for (json j : lines) {
        j["pid"] = 7000 + r;
        if (j["type"] == "process") {
          j["rank"] = r;
          if (r == 9) j["devices"][0]["name"] = "NVIDIA A100";
        }
        out << j.dump() << "\n";
      }
    }
  }
  json analysis = analyze_json({job});
  std::string page = write_report({job}, "ranks");
  Dom dom = open_in_chromium(page, "ranks");
  expect_clean_page(dom, analysis);
  EXPECT_NE(dom.html.find("Processes alike, and the outliers"), std::string::npos);
  EXPECT_NE(dom.html.find("23 of 24"), std::string::npos);
  EXPECT_NE(dom.html.find(escaped("GPU NVIDIA A100 (cc 9.0) (others: NVIDIA H100 (cc 9.0))")), std::string::npos);
  EXPECT_NE(dom.html.find("Every process (24)"), std::string::npos);
  screenshot(page, "ranks");
}

// The data a page embeds, parsed back.
json embedded(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"cuprobe-data\">";
  size_t at = html.find(open);
  EXPECT_NE(at, std::string::npos);
  if (at == std::string::npos) return json::object();
  at += open.size();
  return json::parse(html.substr(at, html.find("</script>", at) - at));
}

// Fault mode (issue 32): the plan, the injected calls, and how the processes ended after the first.
TEST(ReportHtml, InjectedFaultsShowHowTheProcessesEnded) {
  std::string run_dir = fresh_dir("report-chaos") + "/run";
  ASSERT_EQ(record(run_dir, {program("fault_probe"), "malloc:10", "malloc:10", "sync"}, shim_env(),
                   {"-q", "--fault", "alloc:cudaErrorIllegalAddress,nth=2,sticky"})
                .status,
            0);
  std::string page = write_report({run_dir}, "chaos");
  Dom dom = open_in_chromium(page, "chaos");
  ASSERT_NE(dom.html.find("data-rendered=\"ok\""), std::string::npos) << section(dom.html, "errors", "</ul>");
  std::string faults = section(dom.html, "faults");
  EXPECT_NE(faults.find("faults-table"), std::string::npos) << faults;
  EXPECT_NE(faults.find("chaos-table"), std::string::npos) << faults;
  EXPECT_NE(faults.find("After the first injection: cudaMalloc on "), std::string::npos) << faults;
  EXPECT_NE(faults.find("exited"), std::string::npos) << faults;
}

TEST(ReportHtml, ComparedWithAnotherRunAsDiffSaysIt) {
  const Env engines = {{"FAKECUDNN_ENGINE_US", "0:300,1:200,2:100,3:400,4:500,5:600,6:700,7:800"}};
  std::string a = fresh_dir("report-cmp-a") + "/run", b = fresh_dir("report-cmp-b") + "/run";
  ASSERT_EQ(record(a, {program("frontend_search"), "--shapes", "3", "--steps", "20", "--benchmark"}, shim_env(engines),
                   {"-q"})
                .status,
            0);
  ASSERT_EQ(record(b, {program("frontend_search"), "--shapes", "3", "--steps", "20"}, shim_env(engines), {"-q"}).status,
            0);
  std::string page = fresh_dir("report-cmp") + "/report.html";
  RunResult r = run({cuprobe_bin(), "report", "-q", "-o", page, "--compare-with", a, b});
  ASSERT_EQ(r.status, 0) << r.err;
  Dom dom = open_in_chromium(page, "compare");
  ASSERT_NE(dom.html.find("data-rendered=\"ok\""), std::string::npos) << section(dom.html, "errors", "</ul>");
  EXPECT_EQ(section(dom.html, "errors", "</ul>").find("<li"), std::string::npos)
      << section(dom.html, "errors", "</ul>");
  std::string cmp = section(dom.html, "comparison");
  ASSERT_NE(cmp.find("causes-table"), std::string::npos) << cmp;
  EXPECT_NE(cmp.find("cudnn.benchmark: on (timed searches) in A, off (heuristics) in B"), std::string::npos) << cmp;
  // The page's comparison is the one cuprobe diff gives, cause for cause.
  json d = json::parse(run({cuprobe_bin(), "diff", "--json", a, b}).out);
  json page_diff = embedded(slurp(page))["diff"];
  ASSERT_EQ(page_diff["causes"].size(), d["causes"].size());
  for (size_t i = 0; i < d["causes"].size(); ++i) EXPECT_EQ(page_diff["causes"][i]["what"], d["causes"][i]["what"]);
  for (const char* part : {"syncs", "allocations", "coverage", "step_time", "peak_memory"})
    EXPECT_EQ(page_diff[part], d[part]) << part;
  EXPECT_NE(cmp.find("synchronizations per step"), std::string::npos) << cmp;
  EXPECT_NE(cmp.find("steady-state allocations and frees per step"), std::string::npos) << cmp;
  // Without --compare-with, the section says how to get one.
  std::string plain = write_report({b}, "nocompare");
  Dom dom2 = open_in_chromium(plain, "nocompare");
  EXPECT_NE(section(dom2.html, "comparison").find("No run to compare with"), std::string::npos);
  RunResult bad = run({cuprobe_bin(), "report", "-q", "-o", page, "--compare-with", "/no/such/run", b});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--compare-with: /no/such/run: no such file or directory"), std::string::npos) << bad.err;
  screenshot(page, "compare");
  // Extra synchronizations in B, recorded with their stacks: the page says where they came from.
  std::string sa = fresh_dir("report-cmp-sa") + "/run", sb = fresh_dir("report-cmp-sb") + "/run";
  const std::vector<std::string> job = {program("frontend_search"), "--shapes", "3", "--steps", "20", "--benchmark"};
  std::vector<std::string> job_b = job;
  job_b.insert(job_b.end(), {"--sync-every", "1"});
  Env slow = engines;
  slow.push_back({"FAKECUDA_DELAY_US", "cudaStreamSynchronize:3000"});
  ASSERT_EQ(record(sa, job, shim_env(slow), {"-q", "--stacks", "all"}).status, 0);
  ASSERT_EQ(record(sb, job_b, shim_env(slow), {"-q", "--stacks", "all"}).status, 0);
  std::string sync_page = fresh_dir("report-cmp-sync") + "/report.html";
  ASSERT_EQ(run({cuprobe_bin(), "report", "-q", "-o", sync_page, "--compare-with", sa, sb}).status, 0);
  Dom sync_dom = open_in_chromium(sync_page, "compare-sync");
  std::string sync_cmp = section(sync_dom.html, "comparison");
  EXPECT_NE(sync_cmp.find("B: 60 synchronizations from: "), std::string::npos) << sync_cmp;
}

Result<exporter::ExportStats> report_of(const std::string& jsonl, const std::string& out) {
  analysis::AnalyzeOptions options;
  options.paths = {jsonl};
  options.rule_dirs = {CUPROBE_TEST_RULES_DIR};
  auto report = analysis::analyze(options);
  if (!report) return report.error();
  exporter::ExportJob job;
  job.paths = options.paths;
  job.report = std::move(*report);
  return exporter::write_report(job, out);
}

std::string process_line(uint32_t pid, const std::string& cmd) {
  json p = {{"type", "process"}, {"pid", pid}, {"ppid", 1}, {"host", "node0"}, {"rank", -1}, {"local_rank", -1},
            {"world_size", -1}, {"cmdline", {"python3", cmd}}, {"start_ns", 1000000000},
            {"start_wall_ns", 1796000000000000000}, {"state", "exited"},
            {"devices", {{{"index", 0}, {"name", "NVIDIA H100"}, {"total_mem", 85899345920ull}, {"uuid", "GPU-x"},
                          {"pci_bus_id", "0000:18:00.0"}, {"cc", "9.0"}}}}};
  return p.dump() + "\n";
}

TEST(ReportAggregation, ManyMemoryChangesBecomeBoundedBucketsThatKeepThePeak) {
  // 60,000 allocations and frees over 60 s, 1 MiB to 64 MiB live, and one 40 GiB block held
  // for 1 us in the middle: the page keeps at most 2,000 buckets and still shows that peak.
  std::string dir = fresh_dir("aggregation");
  std::string jsonl = dir + "/long.jsonl";
  {
    std::ofstream out(jsonl);
    out << process_line(77, "train.py");
    uint64_t ts = 1000000000;
    const uint64_t spike = 40ull << 30;
    for (int i = 0; i < 30000; ++i) {
      uint64_t ptr = 0x7f0000000000ull + uint64_t(i) * 0x10000000ull;
      uint64_t size = (uint64_t(i % 64) + 1) << 20;
      if (i == 17321) size = spike;
      out << json{{"type", "call"}, {"api", "cudaMalloc"}, {"ret", 0}, {"ts_ns", ts}, {"dur_ns", 1000}, {"pid", 77},
                  {"tid", 77}, {"device", 0}, {"ptr", fmt_ptr(ptr)}, {"size", size}}.dump()
          << "\n";
      ts += i == 17321 ? 1000 : 1000000;
      out << json{{"type", "call"}, {"api", "cudaFree"}, {"ret", 0}, {"ts_ns", ts}, {"dur_ns", 1000}, {"pid", 77},
                  {"tid", 77}, {"device", 0}, {"ptr", fmt_ptr(ptr)}}.dump()
          << "\n";
      ts += 1000000;
    }
  }
  std::string out = dir + "/report.html";
  auto stats = report_of(jsonl, out);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  std::string html = slurp(out);
  EXPECT_EQ(stats->bytes, html.size());
  EXPECT_LT(html.size(), 2u << 20) << "a long job's page must stay small";
  json d = embedded(html);
  ASSERT_EQ(d["memory"].size(), 1u);
  const json& c = d["memory"][0];
  EXPECT_EQ(c["samples"], 60000);
  EXPECT_LE(c["k"].size(), 2000u);
  EXPECT_GE(c["k"].size(), 1000u) << "the grid should be as fine as its limit allows";
  uint64_t top = 0;
  size_t at = 0;
  for (size_t i = 0; i < c["peak"].size(); ++i) {
    if (c["peak"][i].get<uint64_t>() > top) {
      top = c["peak"][i];
      at = i;
    }
  }
  EXPECT_EQ(top, (40ull << 30)) << "the 1 us peak was lost in its bucket";
  EXPECT_EQ(c["max"], (40ull << 30));
  EXPECT_EQ(c["at_peak"][at][0], (40ull << 30)) << "the owners at the peak";
  EXPECT_EQ(c["last"][at], 0) << "each bucket also keeps its last value";
  // Said in the page and to the command.
  ASSERT_FALSE(stats->aggregated.empty());
  EXPECT_NE(stats->aggregated[0].find("60000 changes drawn as"), std::string::npos) << stats->aggregated[0];
  EXPECT_EQ(d["aggregated"], json(stats->aggregated));
}

TEST(ReportAggregation, TraceTextCannotEndTheScriptOrInjectMarkup) {
  std::string dir = fresh_dir("escaping");
  std::string jsonl = dir + "/hostile.jsonl";
  std::string evil = "x</script><script>alert(1)</script><!-- \u2028\u2029 & <b>";
  {
    std::ofstream out(jsonl);
    out << process_line(78, evil);
    out << R"({"type":"call","api":"cudaMalloc","ret":0,"ts_ns":1000000000,"dur_ns":1000,"pid":78,"tid":78,"device":0,"ptr":"0x7f0000000000","size":1048576})"
        << "\n";
    out << R"({"type":"call","api":"cudaMalloc","ret":2,"ts_ns":1000100000,"dur_ns":1000,"pid":78,"tid":78,"device":0,"ptr":"0x0","size":1099511627776})"
        << "\n";
  }
  std::string out = dir + "/report.html";
  auto stats = report_of(jsonl, out);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  std::string html = slurp(out);
  EXPECT_EQ(count(html, "<script"), 2u) << "only the page's own two script elements";
  EXPECT_EQ(count(html, "</script>"), 2u);
  EXPECT_EQ(html.find("alert(1)</script>"), std::string::npos);
  EXPECT_EQ(html.find("\u2028"), std::string::npos);
  EXPECT_EQ(html.find("\u2029"), std::string::npos);
  json d = embedded(html);
  ASSERT_EQ(d["processes"].size(), 1u);
  EXPECT_EQ(d["processes"][0]["command"], "python3 " + evil) << "the text survives, escaped";
  ASSERT_EQ(d["memory"].size(), 1u);
  ASSERT_EQ(d["memory"][0]["ooms"].size(), 1u);
  EXPECT_EQ(d["memory"][0]["ooms"][0]["size"], 1099511627776ull);
  EXPECT_EQ(d["memory"][0]["ooms"][0]["live"], 1048576);
  EXPECT_TRUE(d["aggregated"].empty()) << "nothing to aggregate in three calls";
}

}  // namespace
}  // namespace cuprobe::test
