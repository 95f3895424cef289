// Every rule in rules/ against its fixtures, found on disk (no list to edit): the traces under
// rules/fixtures/<id>/fire must produce a finding of that rule, those under quiet must not.
// Also the rule data handling: loading, overriding, --set, message templates.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "analysis/engine.h"
#include "analysis/facts.h"
#include "support/run.h"

namespace cuprobe::analysis {
namespace {

namespace fs = std::filesystem;

const std::string kRules = CUPROBE_TEST_RULES_DIR;

std::vector<std::string> jsonl_in(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".jsonl") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Finding> run(const std::vector<std::string>& paths, const std::string& only) {
  AnalyzeOptions o;
  o.paths = paths;
  o.rule_dirs = {kRules};
  o.only_rules = {only};
  auto r = analyze(o);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? r->findings : std::vector<Finding>{};
}

TEST(Rules, EveryRuleHasFixturesThatFireAndFixturesThatDoNot) {
  auto rules = load_rules({kRules});
  ASSERT_TRUE(rules) << rules.error().message;
  EXPECT_GE(rules->size(), 8u);
  for (const auto& [id, spec] : *rules) {
    SCOPED_TRACE(id);
    auto fire = jsonl_in(fs::path(kRules) / "fixtures" / id / "fire");
    auto quiet = jsonl_in(fs::path(kRules) / "fixtures" / id / "quiet");
    ASSERT_FALSE(fire.empty()) << "rules/fixtures/" << id << "/fire has no *.jsonl";
    ASSERT_FALSE(quiet.empty()) << "rules/fixtures/" << id << "/quiet has no *.jsonl";
    auto fired = run(fire, id);
    EXPECT_FALSE(fired.empty()) << "rule did not fire on its fire fixtures";
    for (const auto& f : fired) {
      EXPECT_EQ(f.rule, id);
      EXPECT_FALSE(f.message.empty());
      EXPECT_EQ(f.message.find("{"), std::string::npos) << "unexpanded placeholder: " << f.message;
    }
    // Quiet fixtures are checked one by one: each must be clean on its own.
    for (const auto& q : quiet) EXPECT_TRUE(run({q}, id).empty()) << q;
  }
}

TEST(Rules, SetChangesAThresholdAndNamesWhatIsWrong) {
  auto rules = load_rules({kRules});
  ASSERT_TRUE(rules);
  EXPECT_TRUE(apply_setting(*rules, "research-storm.min_late_searches=1000"));
  EXPECT_EQ(rules->at("research-storm").param("min_late_searches"), 1000);
  auto bad_rule = apply_setting(*rules, "no-such-rule.x=1");
  ASSERT_FALSE(bad_rule);
  EXPECT_NE(bad_rule.error().message.find("no rule 'no-such-rule'"), std::string::npos);
  auto bad_param = apply_setting(*rules, "research-storm.nope=1");
  ASSERT_FALSE(bad_param);
  EXPECT_NE(bad_param.error().message.find("min_late_searches"), std::string::npos) << bad_param.error().message;
  auto bad_value = apply_setting(*rules, "research-storm.min_late_searches=lots");
  ASSERT_FALSE(bad_value);
  EXPECT_NE(bad_value.error().message.find("not a number"), std::string::npos);
  EXPECT_FALSE(apply_setting(*rules, "research-storm"));

  // A threshold raised above what the fixture shows silences the rule.
  AnalyzeOptions o;
  o.paths = jsonl_in(fs::path(kRules) / "fixtures" / "research-storm" / "fire");
  o.rule_dirs = {kRules};
  o.settings = {"research-storm.min_late_searches=1000"};
  auto r = analyze(o);
  ASSERT_TRUE(r);
  for (const auto& f : r->findings) EXPECT_NE(f.rule, "research-storm");
}

TEST(Rules, AnOverridingDirectoryReplacesARuleById) {
  std::string dir = test::fresh_dir("rules-override");
  std::ifstream in(kRules + "/sync-stall.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = text.find("\"value\": 0.3");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 12, "\"value\": 0.99");
  std::ofstream(dir + "/sync-stall.json") << text;
  auto rules = load_rules({kRules, dir});
  ASSERT_TRUE(rules);
  EXPECT_EQ(rules->at("sync-stall").param("min_share"), 0.99);
  EXPECT_EQ(rules->at("sync-stall").file, dir + "/sync-stall.json");
}

TEST(Rules, BrokenRuleFilesAreRefusedWithTheirName) {
  std::string dir = test::fresh_dir("rules-broken");
  std::ofstream(dir + "/sync-stall.json") << "{ not json";
  auto r = load_rules({dir});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("sync-stall.json: not valid JSON"), std::string::npos) << r.error().message;
  std::string dir2 = test::fresh_dir("rules-misnamed");
  std::ofstream(dir2 + "/other.json") << R"({"id": "sync-stall", "title": "t", "severity": "info", "message": "m"})";
  auto r2 = load_rules({dir2});
  ASSERT_FALSE(r2);
  EXPECT_NE(r2.error().message.find("named after the rule's id"), std::string::npos) << r2.error().message;
  std::string dir3 = test::fresh_dir("rules-unknown");
  std::ofstream(dir3 + "/made-up.json") << R"({"id": "made-up", "title": "t", "severity": "info", "message": "m"})";
  auto r3 = load_rules({dir3});
  ASSERT_FALSE(r3);
  EXPECT_NE(r3.error().message.find("no matching logic for rule 'made-up'"), std::string::npos);
}

TEST(Rules, MessageTemplatesFormatTheirValues) {
  nlohmann::json v = {{"n", 412}, {"share", 0.382}, {"bytes", 3ull << 30}, {"name", "conv_fwd"}, {"t", 1.5}};
  EXPECT_EQ(render("{n} searches for {name}; {share:pct} in search, {bytes:bytes}, {t:s}, {missing}", v),
            "412 searches for conv_fwd; 38.2% in search, 3.00 GiB, 1.50 s, {missing}");
}

}  // namespace
}  // namespace cuprobe::analysis


namespace cuprobe::analysis {
namespace {

TEST(Rules, RepeatedSearchesAtOtherAlignmentsNameTheCause) {
  auto findings = run({kRules + "/fixtures/research-repeat/fire/alignment.jsonl"}, "research-repeat");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].evidence["alignment_differs"], 1);
  EXPECT_NE(findings[0].message.find("pointer alignments"), std::string::npos) << findings[0].message;
  // Evictions at one alignment are told apart from it.
  auto evicted = run({kRules + "/fixtures/research-repeat/fire/evicted.jsonl"}, "research-repeat");
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].evidence["alignment_differs"], 0);
  EXPECT_NE(evicted[0].message.find("lost the entry"), std::string::npos) << evicted[0].message;
}

}  // namespace
}  // namespace cuprobe::analysis
