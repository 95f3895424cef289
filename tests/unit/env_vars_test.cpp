// The table of CUPROBE_* variables (common/env_vars.h): its grammar of each kind, which the shim
// and `cuprobe record` share, and docs/commands/record.md's variables table, which must be the C++
// table row by row.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "env_vars.h"

namespace cuprobe::test {
namespace {

using env::Id;

// The row of docs/commands/record.md's variables table for `v`.
std::string doc_row(const env::Var& v) {
  std::string def = *v.def_text ? v.def_text : std::to_string(v.def);
  std::string option = *v.option ? std::string("`") + v.option + "`" : "—";
  return std::string("| `") + v.name + "` | " + v.expected + " | " + def + " | " + option + " | " + v.help + " |";
}

TEST(EnvVars, DocsTableIsTheCppTable) {
  std::ifstream in(std::string(CUPROBE_TEST_RULES_DIR) + "/../docs/commands/record.md");
  ASSERT_TRUE(in) << "docs/commands/record.md";
  std::string line, have;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("<!-- env_vars:", 0) == 0)
      inside = true;
    else if (line == "<!-- end env_vars -->")
      inside = false;
    else if (inside && line.rfind("| `", 0) == 0)
      have += line + "\n";
  }
  std::string want;
  for (const env::Var& v : env::kVars) want += doc_row(v) + "\n";
  EXPECT_EQ(have, want) << "docs/commands/record.md's variables table (between <!-- env_vars: and <!-- end "
                           "env_vars -->) should hold exactly these rows:\n"
                        << want;
}

TEST(EnvVars, EveryEntryHasItsWords) {
  for (const env::Var& v : env::kVars) {
    EXPECT_EQ(std::string(v.name).rfind("CUPROBE_", 0), 0u) << v.name;
    EXPECT_NE(*v.expected, 0) << v.name;
    EXPECT_NE(*v.help, 0) << v.name;
    if (v.kind != env::Kind::kText) {
      EXPECT_NE(*v.fallback, 0) << v.name << ": the shim says what it uses instead";
    }
    std::string fallback = v.fallback;
    if (v.kind == env::Kind::kNumber && fallback.rfind("using the default ", 0) == 0) {
      EXPECT_EQ(fallback, "using the default " + std::to_string(v.def)) << v.name;
    }
    if (v.kind == env::Kind::kWord) {
      EXPECT_NE(*v.words, 0) << v.name;
    }
  }
}

TEST(EnvVars, NumbersAreDigitsWithinTheRange) {
  const env::Var& depth = env::var(Id::kStackDepth);
  EXPECT_TRUE(env::value_ok(depth, "1"));
  EXPECT_TRUE(env::value_ok(depth, "064"));
  EXPECT_FALSE(env::value_ok(depth, "0"));
  EXPECT_FALSE(env::value_ok(depth, "65"));
  const env::Var& max_mb = env::var(Id::kMaxMb);
  EXPECT_TRUE(env::value_ok(max_mb, "18446744073709551615"));
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1MiB", "0x10", "18446744073709551616", "abc"}) {
    EXPECT_FALSE(env::value_ok(max_mb, bad)) << "'" << bad << "'";
  }
  EXPECT_FALSE(env::value_ok(env::var(Id::kDurationS), "0")) << "from 1";
  EXPECT_TRUE(env::value_ok(env::var(Id::kDelayS), "0"));
  EXPECT_FALSE(env::value_ok(env::var(Id::kDelayS), "3153600001"));
  EXPECT_FALSE(env::value_ok(env::var(Id::kAlertsStormS), "-1")) << "strtoull would have taken it";
  // Seconds the shim multiplies by 1e9: bounded like the capture window, so that it cannot overflow.
  EXPECT_TRUE(env::value_ok(env::var(Id::kAlertsStormS), "3153600000"));
  EXPECT_FALSE(env::value_ok(env::var(Id::kAlertsStormS), "18446744074")) << "* 1e9 would wrap";
}

TEST(EnvVars, FlagsWordsKeepAndAlerts) {
  const env::Var& quiet = env::var(Id::kQuiet);
  bool on = false;
  for (const char* t : {"1", "true", "YES", "On"}) {
    EXPECT_TRUE(env::parse_flag(t, &on) && on) << t;
  }
  for (const char* f : {"0", "False", "no", "OFF"}) {
    EXPECT_TRUE(env::parse_flag(f, &on) && !on) << f;
  }
  EXPECT_FALSE(env::value_ok(quiet, "loud"));
  EXPECT_FALSE(env::value_ok(quiet, "truee"));
  const env::Var& stacks = env::var(Id::kStacks);
  EXPECT_EQ(env::word_index(stacks, "off"), 0);
  EXPECT_EQ(env::word_index(stacks, "all"), 3);
  EXPECT_EQ(env::word_index(stacks, "al"), -1);
  EXPECT_EQ(env::word_index(stacks, "alloc|all"), -1);
  EXPECT_TRUE(env::value_ok(env::var(Id::kClock), "counter")) << "the shim's other name for tsc";
  EXPECT_FALSE(env::value_ok(env::var(Id::kClock), "Auto"));
  const env::Var& keep = env::var(Id::kKeep);
  EXPECT_TRUE(env::value_ok(keep, "last:512MiB"));
  EXPECT_FALSE(env::value_ok(keep, "last:1KiB"));
  const env::Var& alerts = env::var(Id::kAlerts);
  for (const char* good : {"on", "off", "1", "0", "stderr", "file:/x"})
    EXPECT_TRUE(env::value_ok(alerts, good)) << good;
  for (const char* bad : {"file:", "loud", "ON"}) EXPECT_FALSE(env::value_ok(alerts, bad)) << bad;
  EXPECT_TRUE(env::value_ok(env::var(Id::kWindowNvtx), "any text at all"));
}

}  // namespace
}  // namespace cuprobe::test
