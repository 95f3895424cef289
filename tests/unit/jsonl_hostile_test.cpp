// The JSON Lines reader on input it must not trust (docs/trace-format.md, "JSON Lines input"):
// regressions for what issue 11 found (a new key per call line was quadratic, pids of 1e300,
// 2^64 and -5 were taken, a 10 MB number was quoted whole in the error), the limits on lines,
// nesting, fields and processes, and 200 hostile files from tests/hostile/gen_jsonl.py, each
// read in a child process that must neither crash, hang nor grow out of proportion.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/run.h"
#include "trace/reader.h"

namespace cuprobe {
namespace {

namespace fs = std::filesystem;
using reader::Trace;

const std::string kRules = CUPROBE_TEST_RULES_DIR;
const std::string kGenerator = kRules + "/../tests/hostile/gen_jsonl.py";

using Traces = std::vector<std::unique_ptr<Trace>>;

Traces read_ok(const std::string& text) {
  auto r = reader::read_jsonl_text(text, "test.jsonl");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  return std::move(*r);
}

std::string all_notes(const Traces& traces) {
  std::string s;
  for (const auto& t : traces) {
    for (const auto& d : t->diagnostics()) s += d + "\n";
  }
  return s;
}

size_t longest_note(const Traces& traces) {
  size_t n = 0;
  for (const auto& t : traces) {
    for (const auto& d : t->diagnostics()) n = std::max(n, d.size());
  }
  return n;
}

size_t events(const Trace& t) {
  size_t n = 0;
  t.for_each_event([&](const reader::Event&) { ++n; });
  return n;
}

const std::string kProcess = R"({"type":"process","pid":1,"host":"h"})";

std::string call_line(uint64_t ts, const std::string& extra = "") {
  return R"({"type":"call","api":"cudaMalloc","ret":0,"ts_ns":)" + std::to_string(ts) +
         R"(,"dur_ns":10,"pid":1,"tid":1,"device":0,"ptr":"0x10","size":8)" + extra + "}";
}

// Issue 11: 20k call lines that each add a key took 16.6 s and 2.1 GB (every call kept a slot
// for every key any earlier call had). An API keeps at most 64 fields, a call only its own.
TEST(JsonlHostile, NewKeyPerLineKeepsBoundedFields) {
  std::string text = kProcess + "\n";
  for (int i = 0; i < 20000; ++i) text += call_line(1000 + i, ",\"k" + std::to_string(i) + "\":" + std::to_string(i)) + "\n";
  Traces t = read_ok(text);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]->call_records(), 20000u);
  const reader::Api* api = nullptr;
  for (uint16_t id = 0; id < t[0]->apis().size(); ++id) {
    if (t[0]->api_name(id) == "cudaMalloc") api = t[0]->api(id);
  }
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->fields.size(), 64u);  // k0, ptr, size (the first line's keys in order), k1..k61
  EXPECT_EQ(api->field_index("k61"), 63);
  EXPECT_EQ(api->field_index("k62"), -1);
  const int ptr = api->field_index("ptr"), size = api->field_index("size"), k5 = api->field_index("k5");
  ASSERT_TRUE(ptr >= 0 && size >= 0 && k5 >= 0);
  size_t n = 0;
  uint64_t k5_value = 0;
  size_t with_k5 = 0;
  t[0]->for_each_event([&](const reader::Event& e) {
    EXPECT_LE(e.nargs, 64);
    EXPECT_EQ(e.args[ptr], 0x10u);  // every call has its ptr and size
    EXPECT_EQ(e.args[size], 8u);
    if (k5 < e.nargs && e.args[k5]) {  // only the line that carried k5 has it
      k5_value = e.args[k5];
      ++with_k5;
    }
    ++n;
  });
  EXPECT_EQ(n, 20000u);
  EXPECT_EQ(k5_value, 5u);
  EXPECT_EQ(with_k5, 1u);
  std::string notes = all_notes(t);
  EXPECT_NE(notes.find("19938 of 20001 lines kept in part: 19938 too many fields (first at line 64)"), std::string::npos) << notes;
}

// Issue 11: "pid":1e300, 2^64 and -5 were taken (cast to whatever the conversion gave).
TEST(JsonlHostile, PidOutOfRangeIsRefusedWithTheLineNumber) {
  for (const std::string pid : {"1e300", "18446744073709551616", "-5", "4294967296", "1.0", "\"7\""}) {
    std::string text = kProcess + "\n" + call_line(5, "") + "\n" +
                       R"({"type":"call","api":"cudaFree","pid":)" + pid + R"(,"tid":1,"ts_ns":9})" + "\n";
    Traces t = read_ok(text);
    ASSERT_EQ(t.size(), 1u) << pid;
    EXPECT_EQ(t[0]->pid(), 1u);
    EXPECT_EQ(events(*t[0]), 1u) << pid;
    std::string notes = all_notes(t);
    EXPECT_NE(notes.find("line 3: \"pid\": "), std::string::npos) << notes;
    EXPECT_NE(notes.find("is not an unsigned 32-bit integer (skipped)"), std::string::npos) << notes;
    EXPECT_NE(notes.find("1 of 3 lines skipped: 1 invalid values (first at line 3)"), std::string::npos) << notes;
  }
  // The largest pid, tid and timestamp are taken.
  Traces t = read_ok(R"({"type":"call","api":"cudaFree","pid":4294967295,"tid":4294967295,"ts_ns":18446744073709551615})");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]->pid(), 4294967295u);
  t[0]->for_each_event([](const reader::Event& e) {
    EXPECT_EQ(e.tid, 4294967295u);
    EXPECT_EQ(e.ts_ns, UINT64_MAX);
  });
}

TEST(JsonlHostile, IntegerFieldsAreChecked) {
  struct Case {
    std::string line;
    std::string note;
  };
  const Case cases[] = {
      {R"({"type":"call","api":"a","pid":1,"tid":-1})", "\"tid\": -1 is not an unsigned 32-bit integer"},
      {R"({"type":"call","api":"a","pid":1,"ts_ns":1e300})", "\"ts_ns\": 1e+300 is not an unsigned 64-bit integer"},
      {R"({"type":"call","api":"a","pid":1,"ts_ns":18446744073709551616})", "\"ts_ns\": 1.8446744073709552e+19 is not"},
      {R"({"type":"call","api":"a","pid":1,"dur_ns":2.5})", "\"dur_ns\": 2.5 is not"},
      {R"({"type":"call","api":"a","pid":1,"ts_ns":18446744073709551615,"dur_ns":1})", "\"ts_ns\" + \"dur_ns\" (18446744073709551615 + 1) is past 2^64"},
      {R"({"type":"call","api":"a","pid":1,"device":32768})", "\"device\": 32768 is not an integer from -1 to 32767"},
      {R"({"type":"call","api":"a","pid":1,"device":-2})", "\"device\": -2 is not an integer from -1 to 32767"},
      {R"({"type":"call","api":"a","pid":1,"ret":2147483648})", "\"ret\": 2147483648 is not a 32-bit integer"},
      {R"({"type":"call","api":"a","pid":1,"stream":"0xZZ"})", "\"stream\": \"0xZZ\" is not a hex string"},
      {R"({"type":"call","api":"a","pid":1,"stream":"0x10000000000000000"})", "\"stream\": \"0x10000000000000000\" is not a hex string"},
      {R"({"type":"call","api":"a","pid":1,"stack":-1})", "\"stack\": -1 is not"},
      {R"({"type":"call","api":"a","pid":1,"sample":1})", "\"sample\": 1 is not true or false"},
      {R"({"type":"call","api":"a","pid":1,"ptr":[1]})", "\"ptr\": an array is not a number, string or boolean"},
      {R"({"type":"call","api":"","pid":1})", "a call without \"api\""},
      {R"({"type":"call","api":7,"pid":1})", "\"api\": 7 is not a string"},
      {R"({"type":"process","pid":1,"devices":[{"index":0,"cc":"x.y"}]})", "\"cc\": \"x.y\" is not a compute capability"},
      {R"({"type":"process","pid":1,"devices":[{"index":0,"total_mem":-1}]})", "\"total_mem\": -1 is not"},
      {R"({"type":"process","pid":1,"stats":{"dropped_events":1e300}})", "\"dropped_events\": 1e+300 is not"},
      {R"({"type":"process","pid":1,"cmdline":"python"})", "\"cmdline\": \"python\" is not an array"},
      {R"({"type":"process","pid":1,"ppid":-5})", "\"ppid\": -5 is not"},
      {R"({"type":"stack","pid":1,"id":1,"native":[{"pc":"zz"}]})", "\"pc\": \"zz\" is not a hex string"},
      {R"({"type":"stack","pid":1,"id":1,"python":[3]})", "\"python\": 3 is not an object"},
      {R"({"type":"count","pid":1,"api":"a","calls":-1})", "\"calls\": -1 is not"},
      {R"({"type":"api","pid":1,"name":"a","fields":"x:z"})", "\"fields\": \"x:z\" is not name:type"},
      {R"({"type":"api","pid":1,"name":"a","flags":-1})", "\"flags\": -1 is not"},
      {R"({"type":"crash","pid":1,"signal":"SEGV"})", "\"signal\": \"SEGV\" is not a 32-bit integer"},
      {R"({"type":7,"pid":1})", "\"type\": 7 is not a string"},
      {R"({"pid":1})", "no \"type\""},
      {R"([1,2])", "an array is not a JSON object"},
  };
  for (const Case& c : cases) {
    Traces t = read_ok(kProcess + "\n" + c.line + "\n");
    ASSERT_EQ(t.size(), 1u) << c.line;
    std::string notes = all_notes(t);
    EXPECT_NE(notes.find("line 2: " + c.note), std::string::npos) << c.line << "\n" << notes;
    EXPECT_NE(notes.find("(skipped)"), std::string::npos) << notes;
    EXPECT_EQ(events(*t[0]), 0u) << c.line;
  }
}

// Issue 11: a 10 MB number was quoted whole in the error message.
TEST(JsonlHostile, HugeNumberIsQuotedShort) {
  std::string digits(10 << 20, '9');
  Traces t = read_ok(kProcess + "\n" + R"({"type":"call","api":"a","pid":)" + digits + "}\n" + call_line(1) + "\n");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(events(*t[0]), 1u);
  std::string notes = all_notes(t);
  EXPECT_NE(notes.find("line 2: not JSON (number overflow parsing '9999"), std::string::npos) << notes.substr(0, 500);
  EXPECT_LT(longest_note(t), 300u) << notes.substr(0, 500);
  // A huge string value, and a huge key, are cut short too.
  std::string big(1 << 20, 'x');
  t = read_ok(kProcess + "\n" + R"({"type":"call","api":"a","pid":1,"tid":")" + big + "\"}\n" +
              R"({"type":"call","api":"a","pid":1,")" + big + "\":[]}\n");
  EXPECT_LT(longest_note(t), 300u);
  EXPECT_NE(all_notes(t).find("… (1048576 bytes)"), std::string::npos) << all_notes(t).substr(0, 500);
}

TEST(JsonlHostile, InvalidUtf8LineIsSkipped) {
  std::string text = kProcess + "\n" + R"({"type":"call","api":"cuda)" + std::string("\xff\xfe") + R"(","pid":1})" + "\n" +
                     R"({"type":"call","api":"a","pid":1,"x":"\ud800"})" + "\n" + call_line(1) + "\n";
  Traces t = read_ok(text);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(events(*t[0]), 1u);
  std::string notes = all_notes(t);
  EXPECT_NE(notes.find("line 2: not JSON"), std::string::npos) << notes;
  EXPECT_NE(notes.find("\\xff"), std::string::npos) << notes;  // the bytes escaped: messages are valid UTF-8
  EXPECT_NE(notes.find("line 3: not JSON"), std::string::npos) << notes;
  EXPECT_NE(notes.find("2 of 4 lines skipped: 2 not JSON (first at line 2)"), std::string::npos) << notes;
  for (const auto& d : t[0]->diagnostics()) {
    for (char c : d) EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20) << d;
  }
}

TEST(JsonlHostile, LineOverTheLimitIsSkippedWithoutKeepingIt) {
  std::string big = R"({"type":"call","api":"a","pid":1,"x":")" + std::string((16 << 20) + 10, 'y') + "\"}";
  Traces t = read_ok(kProcess + "\n" + big + "\n" + call_line(1) + "\n");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(events(*t[0]), 1u);
  const std::string length = std::to_string(big.size());
  EXPECT_NE(all_notes(t).find("line 2: " + length + " bytes long; lines longer than 16 MiB are not read (skipped)"),
            std::string::npos)
      << all_notes(t);
  // The same through a file, read in blocks, and with no newline at the end.
  std::string path = test::fresh_dir("jsonl-long") + "/long.jsonl";
  std::ofstream(path) << kProcess << "\n" << call_line(1) << "\n" << big;
  auto r = reader::open_traces(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(events(*(*r)[0]), 1u);
  EXPECT_NE(all_notes(*r).find("line 3: " + length + " bytes long"), std::string::npos) << all_notes(*r);
}

TEST(JsonlHostile, DeepNestingIsRefused) {
  for (int depth : {65, 100000}) {
    std::string nested = std::string(size_t(depth), '[') + std::string(size_t(depth), ']');
    Traces t = read_ok(kProcess + "\n" + R"({"type":"call","api":"a","pid":1,"x":)" + nested + "}\n" + nested + "\n" +
                       call_line(1) + "\n");
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(events(*t[0]), 1u);
    EXPECT_NE(all_notes(t).find("line 2: arrays and objects nested deeper than 64 (skipped)"), std::string::npos)
        << all_notes(t);
    EXPECT_NE(all_notes(t).find("2 nested too deeply (first at line 2)"), std::string::npos) << all_notes(t);
  }
  // 63 levels inside the line's object are fine.
  std::string ok = std::string(63, '[') + std::string(63, ']');
  Traces t = read_ok(kProcess + "\n" + R"({"type":"count","pid":1,"api":"a","x":)" + ok + "}\n");
  EXPECT_TRUE(all_notes(t).empty()) << all_notes(t);
}

TEST(JsonlHostile, TooManyValuesInALineAreRefused) {
  std::string arr = "[";
  for (int i = 0; i < (1 << 20) + 1; ++i) arr += i ? ",0" : "0";
  arr += "]";
  Traces t = read_ok(kProcess + "\n" + R"({"type":"stack","pid":1,"id":3,"native":)" + arr + "}\n");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_TRUE(t[0]->stacks().empty());
  EXPECT_NE(all_notes(t).find("line 2: more than 1048576 values in one line (skipped)"), std::string::npos)
      << all_notes(t);
}

// Issue 11: 50k process lines took 478 MB. The processes of one input are capped.
TEST(JsonlHostile, ProcessesAreCapped) {
  std::string text;
  for (uint32_t pid = 1; pid <= 65536 + 10; ++pid) text += R"({"type":"process","pid":)" + std::to_string(pid) + "}\n";
  Traces t = read_ok(text);
  EXPECT_EQ(t.size(), 65536u);
  EXPECT_NE(all_notes(t).find("10 of 65546 lines skipped: 10 too many processes (first at line 65537)"),
            std::string::npos)
      << all_notes(t).substr(0, 2000);
}

TEST(JsonlHostile, ApisAndFaultRulesAreCapped) {
  std::string text = kProcess + "\n";
  for (int i = 0; i < 5000; ++i) text += R"({"type":"call","pid":1,"api":"api)" + std::to_string(i) + "\"}\n";
  for (int i = 0; i < 40; ++i) text += R"({"type":"call","pid":1,"api":"api0","injected":"r)" + std::to_string(i) + "\"}\n";
  Traces t = read_ok(text);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]->apis().size(), 4096u);
  EXPECT_EQ(t[0]->fault_rules().size(), 32u);  // the slots of a plan; the last is the memory cap's
  for (const auto& r : t[0]->fault_rules()) EXPECT_FALSE(r.is_mem_cap()) << r.name;
  std::string notes = all_notes(t);
  EXPECT_NE(notes.find("904 too many APIs (first at line 4098)"), std::string::npos) << notes;
  EXPECT_NE(notes.find("8 too many fault rules (first at line 5034)"), std::string::npos) << notes;
  size_t injected = 0;
  t[0]->for_each_event([&](const reader::Event& e) {
    if (e.injected()) {
      ++injected;
      EXPECT_NE(t[0]->fault_rule(e.fault_rule), nullptr);
    }
  });
  EXPECT_EQ(injected, 32u);
}

TEST(JsonlHostile, DamageIsCountedAndOnlyTheFirstLinesNamed) {
  std::string text = kProcess + "\n";
  for (int i = 0; i < 1000; ++i) text += (i % 2 ? "not json\n" : R"({"type":"call","api":"a","pid":1,"tid":-1})" "\n");
  text += R"({"type":"bogus","pid":1})" "\n" R"({"type":"search","pid":1})" "\n" + call_line(3) + "\n";
  Traces t = read_ok(text);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(events(*t[0]), 1u);
  const auto& d = t[0]->diagnostics();
  ASSERT_EQ(d.size(), 12u) << all_notes(t);  // 10 named, the sum, the unknown type
  EXPECT_EQ(d[0], "line 2: \"tid\": -1 is not an unsigned 32-bit integer (skipped)");
  EXPECT_EQ(d[1].rfind("line 3: not JSON (column ", 0), 0u) << d[1];
  EXPECT_NE(d[1].find("syntax error"), std::string::npos) << d[1];
  EXPECT_EQ(d[10], "1000 of 1004 lines skipped: 500 invalid values (first at line 2), 500 not JSON (first at line 3)");
  EXPECT_EQ(t[0]->damaged_records(), 1000u);
  EXPECT_EQ(d[11], "1 line of a type this reader does not know skipped (first: line 1002, \"bogus\")");
}

TEST(JsonlHostile, NothingReadableIsAnErrorNamingTheLine) {
  auto r = reader::read_jsonl_text("{\"type\":\"process\",\"pid\":-5}\nnot json\n", "x.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("x.jsonl: no process or call lines; line 1: \"pid\": -5 is not"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("2 of 2 lines skipped"), std::string::npos) << r.error().message;
}

TEST(JsonlHostile, ByteOrderMarkAndCrlfAreRead) {
  std::string path = test::fresh_dir("jsonl-bom") + "/bom.jsonl";
  std::ofstream(path) << "\xEF\xBB\xBF" << kProcess << "\r\n\r\n" << call_line(1) << "\r\n";
  auto r = reader::open_traces(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_TRUE((*r)[0]->has_process());
  EXPECT_EQ(events(*(*r)[0]), 1u);
  EXPECT_TRUE(all_notes(*r).empty()) << all_notes(*r);
}

TEST(JsonlHostile, FifoIsReadOnceAsJsonLines) {
  std::string path = test::fresh_dir("jsonl-fifo") + "/pipe";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  std::string text = kProcess + "\n";
  for (int i = 0; i < 50000; ++i) text += call_line(uint64_t(i)) + "\n";  // several pipe buffers
  std::thread writer([&] { std::ofstream(path) << text; });
  auto r = reader::open_traces(path);
  writer.join();
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_TRUE((*r)[0]->has_process());  // the first line was not eaten by a look at the format
  EXPECT_EQ(events(*(*r)[0]), 50000u);
}

// A character device is looked at like a file, not read as an endless stream.
TEST(JsonlHostile, EndlessDeviceIsNotReadForever) {
  if (access("/dev/zero", R_OK) != 0) GTEST_SKIP() << "no /dev/zero";
  auto r = reader::open_traces("/dev/zero");
  EXPECT_FALSE(r.ok());
}

TEST(JsonlHostile, MissingFieldsReadAsZeroAndDuplicateKeysKeepTheLast) {
  Traces t = read_ok(kProcess + "\n" + R"({"type":"api","pid":1,"name":"x","fields":"a:u,b:s,c:p"})" "\n" +
                     R"({"type":"call","pid":1,"api":"x","ts_ns":1,"c":"0x5","b":"s1"})" "\n" +
                     R"({"type":"call","pid":1,"api":"x","ts_ns":2,"a":1,"a":2})" "\n");
  ASSERT_EQ(t.size(), 1u);
  std::vector<std::vector<uint64_t>> args;
  t[0]->for_each_event([&](const reader::Event& e) { args.emplace_back(e.args, e.args + e.nargs); });
  ASSERT_EQ(args.size(), 2u);
  ASSERT_EQ(args[0].size(), 3u);
  EXPECT_EQ(args[0][0], 0u);
  EXPECT_EQ(t[0]->string(reader::StringId(uint32_t(args[0][1]))), "s1");
  EXPECT_EQ(args[0][2], 5u);
  EXPECT_EQ(args[1], (std::vector<uint64_t>{2, 0, 0}));

  // A float field written as an integer (dump writes 2.0 as 2) is still a float.
  t = read_ok(kProcess + "\n" + R"({"type":"api","pid":1,"name":"z","fields":"t:f"})" "\n" +
              R"({"type":"call","pid":1,"api":"z","t":2})" "\n");
  ASSERT_EQ(t.size(), 1u);
  t[0]->for_each_event([](const reader::Event& e) {
    ASSERT_EQ(e.nargs, 1);
    double d;
    std::memcpy(&d, &e.args[0], sizeof d);
    EXPECT_EQ(d, 2.0);
  });

  // A key that holds ':' survives dump's "name:type" field list.
  t = read_ok(kProcess + "\n" + R"({"type":"api","pid":1,"name":"y","fields":"a:b:u,:s,,"})" "\n");
  ASSERT_EQ(t.size(), 1u);
  ASSERT_EQ(t[0]->apis().size(), 1u);
  const auto& fields = t[0]->apis()[0].fields;
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields[0].name, "a:b");
  EXPECT_EQ(fields[0].type, 'u');
  EXPECT_EQ(fields[1].name, "");
  EXPECT_EQ(fields[1].type, 's');
}

// --- 200 hostile files -----------------------------------------------------------------------

struct ChildResult {
  int status = -1;     // exit code; 128 + signal; -2 when killed for taking too long
  long max_rss_kb = 0;
  double seconds = 0;
};

// Reads `path` in a child process as `cuprobe analyze` does (open_traces, every event), so that
// a crash, a hang or the memory one file takes is seen per file. Exit 0: read; 1: an error
// (Result); 3: an exception escaped.
ChildResult read_in_child(const std::string& path, int timeout_s) {
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    try {
      auto r = reader::open_traces(path);
      if (!r) {
        code = r.error().message.size() < 2000 ? 1 : 4;
      } else {
        for (const auto& t : *r) {
          size_t n = 0;
          t->for_each_event([&](const reader::Event& e) {
            n += size_t(e.nargs);
            (void)t->api_name(e.api);
            (void)t->stack(e.stack);
            (void)t->fault_rule(e.fault_rule);
          });
          for (const auto& d : t->diagnostics()) {
            if (d.size() > 2000) code = 4;
          }
          t->release_events();
        }
      }
    } catch (...) {
      code = 3;
    }
    _exit(code);
  }
  ChildResult res;
  int status = 0;
  rusage ru{};
  for (;;) {
    pid_t w = wait4(pid, &status, WNOHANG, &ru);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(timeout_s)) {
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &ru);
      res.status = -2;
      res.max_rss_kb = ru.ru_maxrss;
      return res;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  res.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  res.max_rss_kb = ru.ru_maxrss;
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

TEST(JsonlHostile, TwoHundredHostileFiles) {
  if (test::run({"/bin/sh", "-c", "command -v python3"}).status != 0) GTEST_SKIP() << "python3 is not installed";
  std::string dir = test::fresh_dir("jsonl-hostile");
  // A real dump as the seed: the dump of fixtures with searches, an OOM and driver calls.
  std::string seed = dir + "/seed.jsonl";
  {
    test::RunResult d = test::run({test::cuprobe_bin(), "dump", kRules + "/fixtures/research-storm/fire",
                                   kRules + "/fixtures/oom-postmortem/fire"});
    ASSERT_EQ(d.status, 0) << d.err;
    ASSERT_GT(d.out.size(), 1000u);
    std::ofstream(seed) << d.out;
  }
  bool sanitized = CUPROBE_SANITIZED;
  std::vector<std::string> gen = {"python3", kGenerator, seed, dir + "/out", "--count", "200", "--seed", "11"};
  if (sanitized) gen.push_back("--small");
  test::RunResult g = test::run(gen);
  ASSERT_EQ(g.status, 0) << g.err;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir + "/out")) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 200u);

  const int timeout_s = sanitized ? 120 : 30;
  size_t read = 0, refused = 0;
  std::pair<long, std::string> most_memory{0, ""};
  std::pair<double, std::string> slowest{0, ""};
  for (const auto& f : files) {
    uintmax_t size = fs::file_size(f);
    ChildResult r = read_in_child(f, timeout_s);
    EXPECT_NE(r.status, -2) << f << ": still reading after " << timeout_s << " s";
    EXPECT_TRUE(r.status == 0 || r.status == 1) << f << ": exit " << r.status
                                                << " (3: an exception escaped, 4: a message over 2000 bytes, "
                                                   "128+n: signal n)";
    // Memory in proportion to the input: the reader's own bound is a few tens of bytes per input
    // byte (nodes of one line); sanitizers add their shadow and quarantine.
    long bound_kb = long((sanitized ? 768 : 128) << 10) + long(size / 1024) * (sanitized ? 64 : 32);
    EXPECT_LT(r.max_rss_kb, bound_kb) << f << ": " << size << " bytes took " << r.max_rss_kb << " kB";
    (r.status == 0 ? read : refused)++;
    most_memory = std::max(most_memory, {r.max_rss_kb, fs::path(f).filename().string()});
    slowest = std::max(slowest, {r.seconds, fs::path(f).filename().string()});
  }
  std::printf("%zu hostile files read, %zu refused; most memory %ld kB (%s), slowest %.2f s (%s)\n", read, refused,
              most_memory.first, most_memory.second.c_str(), slowest.first, slowest.second.c_str());
  EXPECT_GT(read, 150u);  // most hostile files still hold readable lines

  // The whole of `cuprobe analyze --json` on every tenth: findings (0, 1) or nothing readable (2).
  for (size_t i = 0; i < files.size(); i += 10) {
    test::RunResult a = test::run({test::cuprobe_bin(), "analyze", "--json", files[i]});
    EXPECT_TRUE(a.status == 0 || a.status == 1 || a.status == 2) << files[i] << ": exit " << a.status << "\n"
                                                                 << a.err.substr(0, 2000);
    if (a.status != 2) {
      EXPECT_TRUE(nlohmann::json::accept(a.out)) << files[i] << ": the report is not JSON";
    }
  }
}

}  // namespace

// One call at an impossible time (a damaged line) must not stretch the run and hide every rate:
// it is left out and counted, as the binary reader does; a process that never ended loses only
// a far tail after a long quiet gap.
TEST(JsonlHostile, CallsAtImpossibleTimesAreLeftOutAndCounted) {
  std::string base =
      "{\"type\":\"process\",\"pid\":7,\"start_ns\":1000000000,\"end_ns\":2000000000,\"state\":\"exited\"}\n";
  std::string calls;
  for (int i = 0; i < 20; ++i) {
    calls += fmt::format("{{\"type\":\"call\",\"api\":\"cudaStreamSynchronize\",\"pid\":7,\"tid\":7,"
                         "\"ts_ns\":{},\"dur_ns\":1000}}\n",
                         1000000000 + i * 10000000);
  }
  std::string absurd =
      "{\"type\":\"call\",\"api\":\"cudaStreamSynchronize\",\"pid\":7,\"tid\":7,\"ts_ns\":9223372036854775808}\n";
  for (bool ended : {true, false}) {
    std::string head = ended ? base : "{\"type\":\"process\",\"pid\":7,\"start_ns\":1000000000,\"state\":\"incomplete\"}\n";
    auto traces = reader::read_jsonl_text(head + calls + absurd, "absurd.jsonl");
    ASSERT_TRUE(traces) << traces.error().message;
    const reader::Trace& t = *(*traces)[0];
    int n = 0;
    t.for_each_event([&](const reader::Event&) { ++n; });
    EXPECT_EQ(n, 20) << "ended " << ended;
    EXPECT_EQ(t.ignored_events(), 1u);
    EXPECT_EQ(t.last_event_ns(), 1000000000u + 19 * 10000000 + 1000);
    bool named = false;
    for (const auto& d : t.diagnostics()) named = named || d.find("1 call at a time outside the process's run") != std::string::npos;
    EXPECT_TRUE(named);
  }
}

}  // namespace cuprobe
