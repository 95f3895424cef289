// Interning tells strings and stacks apart by content, not by a hash alone: in a process whose
// intern tables hash everything to one value (tests/programs/intern_collision), different texts
// and stacks still get different ids, the same ones get the same id, also across threads, and the
// trace holds each under its own id.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/run.h"
#include "trace/reader.h"

namespace cuprobe::test {
namespace {

// "word n n n ..." lines of the program's output, by word.
std::map<std::string, std::vector<uint32_t>> parse(const std::string& out) {
  std::map<std::string, std::vector<uint32_t>> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string word;
    words >> word;
    if (word == "thread-string") {
      uint32_t i = 0, id = 0;
      words >> i >> id;
      lines["thread-string"].push_back(id);
      continue;
    }
    uint32_t n = 0;
    while (words >> n) lines[word].push_back(n);
  }
  return lines;
}

TEST(Interning, CollidingStringsAndStacksKeepTheirOwnIds) {
  std::string dir = fresh_dir("intern");
  RunResult r = run({program("intern_collision")}, {{"CUPROBE_OUT", dir}});
  ASSERT_EQ(r.status, 0) << r.err;
  auto ids = parse(r.out);
  ASSERT_EQ(ids["strings"].size(), 4u) << r.out;
  ASSERT_EQ(ids["stacks"].size(), 4u) << r.out;
  ASSERT_EQ(ids["threads"].size(), 2u) << r.out;
  ASSERT_EQ(ids["thread-string"].size(), 200u) << r.out;

  uint32_t alpha = ids["strings"][0], beta = ids["strings"][1];
  EXPECT_NE(alpha, 0u);
  EXPECT_NE(beta, 0u);
  EXPECT_NE(alpha, beta) << "two texts with the same hash share an id";
  EXPECT_EQ(ids["strings"][2], alpha) << "the same text interned again gets its first id";
  EXPECT_EQ(ids["strings"][3], beta);

  const auto& s = ids["stacks"];
  EXPECT_NE(s[0], 0u);
  EXPECT_NE(s[0], s[1]) << "stacks that differ in one native frame share an id";
  EXPECT_NE(s[0], s[2]) << "stacks that differ in their Python frames share an id";
  EXPECT_NE(s[1], s[2]);
  EXPECT_EQ(s[3], s[0]) << "the same stack interned again gets its first id";

  EXPECT_EQ(ids["threads"][0], 0u) << "threads saw different ids for the same text";
  EXPECT_EQ(ids["threads"][1], 200u) << "200 texts, interned at once by 4 threads, need 200 ids";

  auto files = reader::find_trace_files(dir);
  ASSERT_TRUE(files) << files.error().message;
  ASSERT_EQ(files->size(), 1u);
  auto t = reader::TraceFile::open((*files)[0]);
  ASSERT_TRUE(t) << t.error().message;
  const reader::Trace& trace = **t;
  EXPECT_EQ(trace.string(reader::StringId(alpha)), "collision-alpha");
  EXPECT_EQ(trace.string(reader::StringId(beta)), "collision-beta");
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(trace.string(reader::StringId(ids["thread-string"][i])), "collision-thread-" + std::to_string(i));
  }

  const reader::Stack* one = trace.stack(reader::StackId(s[0]));
  const reader::Stack* two = trace.stack(reader::StackId(s[1]));
  const reader::Stack* three = trace.stack(reader::StackId(s[2]));
  ASSERT_TRUE(one && two && three);
  EXPECT_EQ(one->pcs, (std::vector<uint64_t>{0x1000, 0x2000, 0x3000}));
  EXPECT_EQ(two->pcs, (std::vector<uint64_t>{0x1000, 0x2000, 0x3004}));
  EXPECT_EQ(three->pcs, one->pcs);
  ASSERT_EQ(one->python.size(), 1u);
  EXPECT_EQ(one->python[0].file, "collision-alpha");
  EXPECT_EQ(one->python[0].function, "collision-beta");
  EXPECT_EQ(one->python[0].line, 42);
  EXPECT_TRUE(three->python.empty());
  EXPECT_EQ(trace.stat(trace::kStatStacksUntracked), 0u);
}

}  // namespace
}  // namespace cuprobe::test
