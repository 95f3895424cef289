// The command line of every `cuprobe` subcommand (issue 12, item 5): one parser (cli.h
// OptionParser, on CLI11) that takes "--opt VALUE" and "--opt=VALUE", names a bad option and
// points at --help, and leaves the traced command's own arguments to it; and cuDNN status codes
// printed by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli.h"
#include "cudnn_status.h"
#include "support/run.h"

namespace cuprobe::test {
namespace {

namespace fs = std::filesystem;
using cli::OptionParser;
using cli::UsageError;

const std::string kFixtures = std::string(CUPROBE_TEST_RULES_DIR) + "/fixtures";

// The message of the UsageError `parse` throws, "" when it throws none.
std::string usage_error(OptionParser& p, const cli::Args& args) {
  std::vector<std::string> operands;
  try {
    p.parse(args, &operands);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// ---- The parser itself -----------------------------------------------------------------------

TEST(CliOptions, ValueAfterEqualsOrAsTheNextArgument) {
  for (const cli::Args& args : std::vector<cli::Args>{{"--max-mb=12", "a"}, {"--max-mb", "12", "a"},
                                                      {"a", "--max-mb=12"}, {"-m12", "a"}, {"-m", "12", "a"}}) {
    std::string got = "unset";
    OptionParser p("help\n");
    p.value("-m,--max-mb", [&](const std::string& v) { got = v; });
    std::vector<std::string> operands;
    ASSERT_TRUE(p.parse(args, &operands));
    EXPECT_EQ(got, "12") << args[0];
    EXPECT_EQ(operands, std::vector<std::string>{"a"}) << args[0];
  }
}

TEST(CliOptions, ValuesAreTakenAsTheyAre) {
  std::vector<std::string> got;
  OptionParser p("help\n");
  p.value("--set", [&](const std::string& v) { got.push_back(v); });
  p.value("-o,--output", [&](const std::string& v) { got.push_back("o:" + v); });
  std::vector<std::string> operands;
  // After '=' everything is the value, '=' included; a value may start with '-'; "--opt=" is
  // the empty value and does not take the next argument; brackets and commas are not split.
  ASSERT_TRUE(p.parse({"--set=research-storm.min_late_searches=20", "--set", "-1", "--set=", "next", "-o", "--",
                       "--set", "[a,b]"},
                      &operands));
  EXPECT_EQ(got, (std::vector<std::string>{"research-storm.min_late_searches=20", "-1", "", "o:--", "[a,b]"}));
  EXPECT_EQ(operands, std::vector<std::string>{"next"});
}

TEST(CliOptions, ActionsRunInCommandLineOrder) {
  std::string order;
  OptionParser p("help\n");
  p.flag("--color", [&] { order += "C"; });
  p.flag("--no-color", [&] { order += "N"; });
  p.value("--rule", [&](const std::string& v) { order += v; });
  std::vector<std::string> operands;
  ASSERT_TRUE(p.parse({"--no-color", "--rule=1", "x", "--color", "--rule", "2", "--no-color"}, &operands));
  EXPECT_EQ(order, "N1C2N");
  EXPECT_EQ(operands, std::vector<std::string>{"x"});
}

TEST(CliOptions, UnknownOptionsAndMissingValuesAreNamed) {
  OptionParser p("help\n");
  p.flag("--json", [] {});
  p.value("--max-mb", [](const std::string&) {});
  EXPECT_EQ(usage_error(p, {"a", "--jsn"}), "unknown option '--jsn' (did you mean --json?)");
  OptionParser q("help\n");
  q.flag("--json", [] {});
  q.value("--max-mb", [](const std::string&) {});
  EXPECT_EQ(usage_error(q, {"--frobnicate=3", "a"}), "unknown option '--frobnicate'");
  OptionParser r("help\n");
  r.value("--max-mb", [](const std::string&) {});
  EXPECT_EQ(usage_error(r, {"a", "--max-mb"}), "--max-mb needs a value");
  OptionParser s("help\n");
  s.value("--max-mb", [](const std::string&) {});
  EXPECT_EQ(usage_error(s, {"-x"}), "unknown option '-x'");
  // "-" is an operand (standard input), as is everything after "--".
  OptionParser t("help\n");
  bool json = false;
  t.flag("--json", [&] { json = true; });
  std::vector<std::string> operands;
  ASSERT_TRUE(t.parse({"-", "--", "--json", "-x", "--"}, &operands));
  EXPECT_FALSE(json);
  EXPECT_EQ(operands, (std::vector<std::string>{"-", "--json", "-x", "--"}));
}

TEST(CliOptions, ErrorsOfAnActionStopTheParse) {
  OptionParser p("help\n");
  int later = 0;
  p.value("--threads", [](const std::string& v) { cli::parse_count("--threads", v); });
  p.flag("--json", [&] { ++later; });
  EXPECT_EQ(usage_error(p, {"--threads=many", "--json"}), "--threads expects a non-negative whole number, got 'many'");
  EXPECT_EQ(later, 0);
}

TEST(CliOptions, OptionsStopAtTheFirstOperandWhenAsked) {
  std::string out;
  int quiet = 0;
  OptionParser p("help\n");
  p.stop_at_first_operand();
  p.value("-o,--output", [&](const std::string& v) { out += v; });
  p.flag("-q,--quiet", [&] { ++quiet; });
  std::vector<std::string> command;
  const cli::Args tail = {"train.py", "--lr", "1", "-o", "x", "-q", "--", "--help", "-h", "", "[1,2]", "--output="};
  cli::Args args = {"-q", "-o", "dir", "python"};
  args.insert(args.end(), tail.begin(), tail.end());
  ASSERT_TRUE(p.parse(args, &command));
  std::vector<std::string> expected = {"python"};
  expected.insert(expected.end(), tail.begin(), tail.end());
  EXPECT_EQ(command, expected);
  EXPECT_EQ(out, "dir");
  EXPECT_EQ(quiet, 1);
  // After "--" the command may start with '-'; before it, such an argument is an unknown option.
  ASSERT_TRUE(p.parse({"--output=d2", "--", "-weird", "-q"}, &command));
  EXPECT_EQ(command, (std::vector<std::string>{"-weird", "-q"}));
  EXPECT_EQ(out, "dird2");
  OptionParser q("help\n");
  q.stop_at_first_operand();
  q.flag("-q,--quiet", [] {});
  EXPECT_EQ(usage_error(q, {"--quite", "python"}), "unknown option '--quite' (did you mean --quiet?)");
}

TEST(CliOptions, HelpPrintsTheTextGivenAsItIs) {
  const std::string text = "Usage: cuprobe test [options]\n  --json   reviewed wording\n";
  for (const char* flag : {"-h", "--help"}) {
    OptionParser p(text);
    p.flag("--json", [] {});
    std::vector<std::string> operands;
    testing::internal::CaptureStdout();
    bool go_on = p.parse({"x", flag, "--json"}, &operands);
    EXPECT_EQ(testing::internal::GetCapturedStdout(), text);
    EXPECT_FALSE(go_on) << flag;
  }
}

// ---- Each subcommand, as users run it ----------------------------------------------------------

TEST(CliOptions, EverySubcommandTakesOptEqualsValue) {
  // analyze: --fail-on=error lets a warning pass.
  std::string warning = kFixtures + "/allocation-churn/fire/empty_cache_in_loop.jsonl";
  EXPECT_EQ(run({cuprobe_bin(), "analyze", warning}).status, 1);
  RunResult a = run({cuprobe_bin(), "analyze", "--fail-on=error", "--rule=allocation-churn", warning});
  EXPECT_EQ(a.status, 0) << a.err;
  EXPECT_NE(a.out.find("allocation-churn"), std::string::npos) << a.out;

  // dump: --api=NAME keeps only that API's calls.
  RunResult d = run({cuprobe_bin(), "dump", "--api=cudaFree", warning});
  ASSERT_EQ(d.status, 0) << d.err;
  size_t calls = 0;
  std::istringstream lines(d.out);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] != "call") continue;
    ++calls;
    EXPECT_EQ(j["api"], "cudaFree") << line;
  }
  EXPECT_GT(calls, 0u);

  // rules and explain: --rules=DIR loads a rule that overrides the bundled one.
  std::string dir = fresh_dir("cli-rules");
  std::ifstream in(std::string(CUPROBE_TEST_RULES_DIR) + "/sync-stall.json");
  auto rule = nlohmann::json::parse(in);
  rule["title"] = "overridden through --rules=DIR";
  std::ofstream(dir + "/sync-stall.json") << rule.dump(2);
  RunResult r = run({cuprobe_bin(), "rules", "--rules=" + dir});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("overridden through --rules=DIR"), std::string::npos) << r.out;
  RunResult e = run({cuprobe_bin(), "explain", "--rules=" + dir, "sync-stall"});
  EXPECT_EQ(e.status, 0) << e.err;
  EXPECT_NE(e.out.find("overridden through --rules=DIR"), std::string::npos) << e.out;

  // record: --output=DIR and --max-mb=N reach the command.
  std::string run_dir = fresh_dir("cli-record") + "/run";
  RunResult rec = run({cuprobe_bin(), "record", "--output=" + run_dir, "--max-mb=64", "--quiet", "--", "sh", "-c",
                       "echo \"$CUPROBE_OUT $CUPROBE_MAX_MB\"; exit 3"},
                      shim_env());
  EXPECT_EQ(rec.status, 3) << rec.err;
  EXPECT_EQ(rec.out, run_dir + " 64\n");
}

TEST(CliOptions, UnknownOptionsAreNamedWithWhereToLook) {
  std::string marker = fresh_dir("cli-unknown") + "/ran";
  std::string fixture = kFixtures + "/allocation-churn/fire/empty_cache_in_loop.jsonl";
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"analyze", "--jsn", fixture},
           {"dump", fixture, "--no-event"},
           {"rules", "--rule", "x"},
           {"explain", "--rulez=x", "sync-stall"},
           {"record", "--max-mbb", "5", "sh", "-c", "touch " + marker}}) {
    std::string cmd = args[0];
    std::string option = args[1].substr(0, args[1].find('='));
    if (cmd == "dump") option = args[2];
    args.insert(args.begin(), cuprobe_bin());
    RunResult r = run(args, shim_env());
    EXPECT_EQ(r.status, 2) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("cuprobe " + cmd + ": unknown option '" + option + "'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("; see cuprobe " + cmd + " --help"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  EXPECT_FALSE(fs::exists(marker)) << "record must not start the command after a bad option";
  RunResult missing = run({cuprobe_bin(), "analyze", fixture, "--threads"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("cuprobe analyze: --threads needs a value; see cuprobe analyze --help"), std::string::npos)
      << missing.err;
  RunResult command = run({cuprobe_bin(), "analyse", fixture});
  EXPECT_EQ(command.status, 2);
  EXPECT_NE(command.err.find("unknown command 'analyse'; see cuprobe --help"), std::string::npos) << command.err;
}

TEST(CliOptions, RecordPassesTheCommandsArgumentsThrough) {
  // Without "--": options end at the first operand, COMMAND; what follows is its own.
  std::string base = fresh_dir("cli-passthrough");
  const std::vector<std::string> own = {"--lr", "1", "-o", base + "/elsewhere", "--help", "-h", "--", "--quiet", "",
                                        "[1,2]", "--max-mb="};
  std::string expected;
  for (const auto& a : own) expected += "<" + a + ">\n";
  std::vector<std::string> cmd = {cuprobe_bin(), "record", "-q", "-o", base + "/a", "sh", "-c",
                                  "for a in \"$@\"; do printf '<%s>\\n' \"$a\"; done", "sh"};
  cmd.insert(cmd.end(), own.begin(), own.end());
  RunResult r = run(cmd, shim_env());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, expected);
  EXPECT_TRUE(fs::is_directory(base + "/a")) << "-o before COMMAND is record's";
  EXPECT_FALSE(fs::exists(base + "/elsewhere")) << "-o after COMMAND is COMMAND's";
  // With "--", the same.
  cmd = {cuprobe_bin(), "record", "--quiet", "--output", base + "/b", "--", "sh", "-c",
         "for a in \"$@\"; do printf '<%s>\\n' \"$a\"; done", "sh"};
  cmd.insert(cmd.end(), own.begin(), own.end());
  r = run(cmd, shim_env());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, expected);
}

TEST(CliOptions, HelpTextsAreTheSubcommandsOwn) {
  for (const char* cmd : {"record", "dump", "analyze", "rules", "explain"}) {
    for (const char* flag : {"-h", "--help"}) {
      RunResult r = run({cuprobe_bin(), cmd, flag});
      EXPECT_EQ(r.status, 0) << cmd << " " << flag << ": " << r.err;
      EXPECT_EQ(r.out.rfind(std::string("Usage: cuprobe ") + cmd, 0), 0u) << r.out;
    }
  }
  RunResult analyze = run({cuprobe_bin(), "analyze", "--help"});
  EXPECT_NE(analyze.out.find("  --fail-on SEVERITY   exit 1 when a finding is at least SEVERITY"), std::string::npos);
  RunResult record = run({cuprobe_bin(), "record", "--help"});
  EXPECT_NE(record.out.find("  -o, --output DIR    run directory"), std::string::npos);
}

// ---- cuDNN status codes by name ------------------------------------------------------------

TEST(CudnnStatus, NamesAndNumbers) {
  EXPECT_STREQ(cudnn_status_name(0), "CUDNN_STATUS_SUCCESS");
  EXPECT_STREQ(cudnn_status_name(3000), "CUDNN_STATUS_NOT_SUPPORTED");
  EXPECT_STREQ(cudnn_status_name(3002), "CUDNN_STATUS_NOT_SUPPORTED_SHAPE");
  EXPECT_STREQ(cudnn_status_name(2001), "CUDNN_STATUS_INVALID_VALUE");
  EXPECT_STREQ(cudnn_status_name(5004), "CUDNN_STATUS_EXECUTION_FAILED_CURAND");
  EXPECT_EQ(cudnn_status_name(3999), nullptr);
  EXPECT_EQ(cudnn_status_name(-1), nullptr);
  EXPECT_EQ(cudnn_status_text(5000), "CUDNN_STATUS_EXECUTION_FAILED (5000)");
  EXPECT_EQ(cudnn_status_text(3999), "3999");
}

// Every value of cudnnStatus_t in the cuDNN headers the build uses has its own name: a newer cuDNN
// that adds codes fails here until the table has them.
TEST(CudnnStatus, EveryValueOfTheHeaderHasItsName) {
  std::ifstream in(CUPROBE_TEST_CUDNN_GRAPH_H);
  ASSERT_TRUE(in) << CUPROBE_TEST_CUDNN_GRAPH_H;
  std::stringstream text;
  text << in.rdbuf();
  std::string header = text.str();
  std::regex entry(R"((CUDNN_STATUS_\w+)(\s+CUDNN_DEPRECATED_ENUM)?\s*=\s*(\d+))");
  int checked = 0;
  for (auto it = std::sregex_iterator(header.begin(), header.end(), entry); it != std::sregex_iterator(); ++it) {
    int value = std::stoi((*it)[3]);
    const char* name = cudnn_status_name(value);
    ASSERT_NE(name, nullptr) << (*it)[1] << " = " << value;
    EXPECT_EQ(std::string(name), (*it)[1].str()) << value;
    ++checked;
  }
  EXPECT_GE(checked, 40) << "cudnn_graph.h of cuDNN 9 defines about fifty status codes";
}

// The unsupported-config finding names the status; its JSON keeps the number beside the name.
TEST(CudnnStatus, UnsupportedConfigNamesTheStatus) {
  std::string fixture = kFixtures + "/unsupported-config/fire/no_engine.jsonl";
  RunResult r = run({cuprobe_bin(), "analyze", "--json", fixture});
  ASSERT_EQ(r.status, 1) << r.err;
  auto report = nlohmann::json::parse(r.out);
  const nlohmann::json* finding = nullptr;
  for (const auto& f : report["findings"]) {
    if (f["rule"] == "unsupported-config") finding = &f;
  }
  ASSERT_NE(finding, nullptr) << r.out;
  const auto& items = (*finding)["evidence"]["items"];
  ASSERT_FALSE(items.empty());
  for (const auto& item : items) {
    int status = item["status"].get<int>();
    ASSERT_NE(cudnn_status_name(status), nullptr) << item;
    EXPECT_EQ(item["status_name"], cudnn_status_name(status));
  }
  ASSERT_FALSE((*finding)["problems"].empty());
  std::string problem = (*finding)["problems"][0];
  std::string shown = cudnn_status_text(items[0]["status"].get<int>());
  EXPECT_NE(problem.find(" " + shown + " "), std::string::npos) << problem;
}

}  // namespace
}  // namespace cuprobe::test
