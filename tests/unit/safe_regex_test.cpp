// The fault plans' regular expressions (common/safe_regex.h): the same answers as POSIX regexec
// on ordinary patterns, bounded time on pathological ones, refusals with reasons.
#include <gtest/gtest.h>
#include <regex.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "safe_regex.h"

namespace cuprobe::safe_regex {
namespace {

struct Compiled {
  Regex* re = nullptr;
  std::string err;
  explicit Compiled(const std::string& pattern) {
    char buf[512] = {};
    re = compile(pattern.c_str(), buf, sizeof buf);
    err = buf;
  }
  ~Compiled() { release(re); }
  bool matches(const std::string& text) const { return search(re, text.data(), text.size()); }
};

// glibc's answer, as the fault plan asked it before (REG_EXTENDED | REG_NOSUB).
bool posix_matches(const std::string& pattern, const std::string& text) {
  regex_t re;
  EXPECT_EQ(regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_NOSUB), 0) << pattern;
  bool hit = regexec(&re, text.c_str(), 0, nullptr, 0) == 0;
  regfree(&re);
  return hit;
}

TEST(SafeRegex, AgreesWithPosixOnOrdinaryPatterns) {
  const char* patterns[] = {
      "abc", "^abc", "abc$", "^abc$", "a.c", "a*", "ab*c", "ab+c", "ab?c", "a{2}", "a{2,}", "a{2,3}", "^a{2,3}$",
      "^a{0,2}$", "(ab)+", "^(ab)+$", "(a|b)*c", "^(fwd|dgrad)", "conv_(fwd|dgrad) x\\[64", "[a-c]+", "^[a-c]+$",
      "[^a-c]", "[]a]", "[a-]", "[-a]", "[^]a]", "[[:digit:]]+", "^[[:alpha:]_]+$", "[[:space:]]", "[[:upper:]]",
      "x\\[[0-9]+,", "\\.", "a|b|c", "^(a|)b", "f(32|16)$", "\\w+", "^\\w+$", "\\s", "\\S", "\\W", "a\\+b", "[.]",
      "^$", "", "(((a)))", "^a{0,2}b", "(ab){1,2}c", "^[0-9]{2,4}$", ".*f32.*nchw", "^conv_fwd x\\[8,", "(^a|b$)",
      "a^", "$a", "^conv_(fwd|dgrad) x\\[64,3,8,8\\]f(16|32)", "nchw|nhwc", "g1 acc:f32 -> y", "[[:xdigit:]]{4}",
      "\\(", "a\\{2\\}", "]", "}", "a{1}{2}", "(a*)*b", "(a|a)*c", "(|a)+", "x[^,]*,", "\\$", "[\\]",
  };
  const char* texts[] = {
      "",   "a",   "abc", "xabcx", "aa", "aaa",  "aaaa", "ac",  "abbc", "b", "ab", "ababc", "abab", "c",
      "conv_fwd x[64,3,8,8]f32 nchw w[64,3,3,3]f32 nchw pad[1,1] str[1,1] dil[1,1] g1 acc:f32 -> y[64,64,8,8]f32 nchw",
      "conv_dgrad x[64,3,8,8]f16", "conv_wgrad x[8,16]", "conv_fwd x[8,16,4,4]f32 nhwc", "a+b", "a.b", "]", "-",
      "hello world", "12345", "12", "f16", "f32", "_under_score", "(", "a{2}", "}", "$", "\\", "x[1,2", "beef",
      "aab", "aaac", "\tx", "AbC",
  };
  int checked = 0;
  for (const char* p : patterns) {
    Compiled c(p);
    ASSERT_NE(c.re, nullptr) << p << ": " << c.err;
    for (const char* t : texts) {
      EXPECT_EQ(c.matches(t), posix_matches(p, t)) << "pattern '" << p << "' text '" << t << "'";
      ++checked;
    }
  }
  EXPECT_GT(checked, 2500);
}

TEST(SafeRegex, ExtrasBeyondGlibc) {
  // \d is a digit here (glibc reads it as 'd').
  Compiled d("x\\[\\d+,\\d+\\]");
  ASSERT_NE(d.re, nullptr) << d.err;
  EXPECT_TRUE(d.matches("conv x[64,3]"));
  EXPECT_FALSE(d.matches("conv x[d,d]"));
  Compiled nd("^\\D+$");
  EXPECT_TRUE(nd.matches("abc"));
  EXPECT_FALSE(nd.matches("a1c"));
  // Bytes, not characters; a text may hold any byte.
  Compiled any("a.c");
  EXPECT_TRUE(search(any.re, "a\0c", 3));
  EXPECT_TRUE(any.matches("a\xff" "c"));
  Compiled high("\xc3\xa9+");
  EXPECT_TRUE(high.matches("caf\xc3\xa9"));
}

TEST(SafeRegex, BackReferencesAreRefused) {
  Compiled c("^(.*)(.*)(.*)(.*)(.*)(.*)\\6\\5\\4\\3\\2\\1$");
  EXPECT_EQ(c.re, nullptr);
  EXPECT_NE(c.err.find("back-references (\\6) are not supported"), std::string::npos) << c.err;
  for (const char* p : {"(a)\\1", "\\9"}) {
    Compiled b(p);
    EXPECT_EQ(b.re, nullptr) << p;
    EXPECT_NE(b.err.find("back-references"), std::string::npos) << c.err;
  }
}

TEST(SafeRegex, ExpansionIsBounded) {
  Compiled huge("(a{1000}){1000}");
  EXPECT_EQ(huge.re, nullptr);
  EXPECT_NE(huge.err.find("more than 4096 states"), std::string::npos) << huge.err;
  Compiled deep("((((a{10}){10}){10}){10}){10}");
  EXPECT_EQ(deep.re, nullptr);
  EXPECT_NE(deep.err.find("too large"), std::string::npos) << deep.err;
  // At the bound: 40 x 100 states, the anchors and the match state fit, 41 x 100 do not.
  Compiled fits("^(a{100}){40}$");
  ASSERT_NE(fits.re, nullptr) << fits.err;
  EXPECT_EQ(state_count(fits.re), 4003);
  EXPECT_TRUE(fits.matches(std::string(4000, 'a')));
  EXPECT_FALSE(fits.matches(std::string(3999, 'a')));
  EXPECT_EQ(Compiled("(a{100}){41}").re, nullptr);
  Compiled count("a{1001}");
  EXPECT_EQ(count.re, nullptr);
  EXPECT_NE(count.err.find("larger than 1000"), std::string::npos) << count.err;
  EXPECT_EQ(Compiled("a{99999999999999999999}").re, nullptr);
  // Nothing repeated costs nothing, however often.
  Compiled empty("(){1000}(){1000}(()){1000}{1000}x");
  ASSERT_NE(empty.re, nullptr) << empty.err;
  EXPECT_EQ(state_count(empty.re), 2);
  EXPECT_TRUE(empty.matches("x"));
}

TEST(SafeRegex, PathologicalPatternsRunInLinearTime) {
  std::string as(10000, 'a');
  for (const char* p : {"(a*)*b", "(a|a)*c", "(a|aa)+$b", "(.*)*x", "(a?){30}a{30}b", "^(a+)+$x", "(a*)*(a*)*(a*)*b",
                        "(x+x+)+y", ".*.*.*.*.*.*.*.*=", "(a|a|a|a|a|a|a|a)*d"}) {
    Compiled c(p);
    ASSERT_NE(c.re, nullptr) << p << ": " << c.err;
    EXPECT_FALSE(c.matches(as)) << p;
  }
  Compiled c("(a|aa)+$");
  EXPECT_TRUE(c.matches(as));
  Compiled q("^(a?){30}a{30}$");
  EXPECT_TRUE(q.matches(std::string(30, 'a')));
  EXPECT_TRUE(q.matches(std::string(60, 'a')));
  EXPECT_FALSE(q.matches(std::string(61, 'a')));
}

TEST(SafeRegex, MalformedPatternsSayWhy) {
  struct Case {
    const char* pattern;
    const char* says;
  } cases[] = {
      {"conv[", "missing ']'"},
      {"(ab", "missing ')'"},
      {"ab)", "unmatched ')'"},
      {"*a", "nothing to repeat"},
      {"a|+", "nothing to repeat"},
      {"a{2,1}", "maximum below its minimum"},
      {"a{x}", "'{' starts a repetition"},
      {"a{2", "'{' starts a repetition"},
      {"[z-a]", "reversed"},
      {"[[.a.]]", "not supported"},
      {"[[:letters:]]", "unknown character class"},
      {"[[:alpha:]-z]", "range cannot start"},
      {"abc\\", "lone backslash"},
      {"\\bword", "not supported"},
      {"\\n", "unknown escape"},
  };
  for (const auto& c : cases) {
    Compiled r(c.pattern);
    EXPECT_EQ(r.re, nullptr) << c.pattern;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.pattern << " -> " << r.err;
  }
  std::string nested;
  for (int i = 0; i < kMaxNesting + 1; ++i) nested += "(";
  nested += "a";
  for (int i = 0; i < kMaxNesting + 1; ++i) nested += ")";
  Compiled n(nested);
  EXPECT_EQ(n.re, nullptr);
  EXPECT_NE(n.err.find("nested"), std::string::npos) << n.err;
  EXPECT_EQ(Compiled("a************************************************************************").re, nullptr);
  EXPECT_EQ(Compiled(std::string(kMaxPattern + 1, 'a')).re, nullptr);
  EXPECT_NE(Compiled(std::string(kMaxPattern, 'a')).re, nullptr);
  char err[8];
  EXPECT_EQ(compile(nullptr, err, sizeof err), nullptr);
  EXPECT_EQ(compile("(", nullptr, 0), nullptr);  // no room for a message: still refused
  EXPECT_FALSE(search(nullptr, "a", 1));
}

TEST(SafeRegex, ConcurrentSearchesOfOnePattern) {
  Compiled small("^conv_(fwd|dgrad) x\\[(64|8),");
  Compiled big("(a|b){100}c");  // too many states for the stack buffer of a concurrent search
  ASSERT_NE(small.re, nullptr);
  ASSERT_NE(big.re, nullptr) << big.err;
  std::string yes = "conv_dgrad x[64,3,8,8]f32", no = "conv_wgrad x[64,3,8,8]f32";
  std::string big_yes = std::string(100, 'a') + "c", big_no = std::string(99, 'b') + "c";
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        if (!small.matches(yes) || small.matches(no)) ++wrong;
        if (!big.matches(big_yes) || big.matches(big_no)) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace cuprobe::safe_regex
