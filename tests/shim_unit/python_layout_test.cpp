// The pieces of the shim's Python frame reader that need no interpreter: line tables of every
// format (3.10's PEP 626 table and the 3.11+ location table, against what each CPython's own
// co_lines() says for the same code), the fixed layouts, and the layouts read from
// _Py_DebugOffsets (a table recorded from CPython 3.13.0, one written from 3.14's header with a
// 3.14.6 build's values), including every way a table is refused. The live reads are
// tests/shim/stack_test.cpp's, on every interpreter this machine has.
#include <gtest/gtest.h>

#include <string.h>

#include <string>
#include <vector>

#include "python_layout.h"
#include "python_lines.h"

namespace cuprobe::shim {
namespace {

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(uint8_t(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// A function's co_linetable and, for each instruction (2 bytes), the line co_lines() gives it
// (0: none); written by each interpreter from the same source: lines 2 to 15 with blank lines, a
// loop (negative deltas), a comprehension, and `far`, whose second statement is 301 lines down.
struct LineVector {
  const char* name;
  int first_line;
  const char* table;
  std::vector<int> lines;
};

const LineVector kVectors[] = {
#include "python_line_vectors.inc"
};

TEST(PythonLines, EveryInstructionGetsTheLineItsOwnInterpreterGives) {
  for (const LineVector& v : kVectors) {
    std::vector<uint8_t> t = from_hex(v.table);
    bool v310 = strncmp(v.name, "3.10 ", 5) == 0;
    for (size_t i = 0; i < v.lines.size(); ++i) {
      int got = v310 ? line_from_linetable_310(t.data(), t.size(), v.first_line, int64_t(i) * 2)
                     : line_from_locations(t.data(), t.size(), v.first_line, int64_t(i));
      EXPECT_EQ(got, v.lines[i]) << v.name << ", instruction " << i;
    }
  }
}

TEST(PythonLines, OutsideTheTableOrInADamagedOneThereIsNoLine) {
  const LineVector& s311 = kVectors[2];
  ASSERT_STREQ(s311.name, "3.11 sample");
  std::vector<uint8_t> t = from_hex(s311.table);
  EXPECT_EQ(line_from_locations(t.data(), t.size(), 2, 100000), 0) << "past the last entry";
  EXPECT_EQ(line_from_locations(t.data(), 0, 2, 0), 0) << "an empty table";
  // Cut inside an entry: the varint reader stops at the end, never past it.
  for (size_t cut = 0; cut < t.size(); ++cut) {
    std::vector<uint8_t> part(t.begin(), t.begin() + long(cut));
    (void)line_from_locations(part.data(), part.size(), 2, 1000);
  }
  uint8_t garbage[] = {0x7f, 0x80, 0x81};
  EXPECT_EQ(line_from_locations(garbage, sizeof garbage, 2, 0), 0) << "not the start of an entry";
  std::vector<uint8_t> t310 = from_hex(kVectors[0].table);
  EXPECT_EQ(line_from_linetable_310(t310.data(), t310.size(), 2, 100000), 0);
  EXPECT_EQ(line_from_linetable_310(t310.data(), t310.size(), 2, -2), 2) << "a frame not started: its first line";
  uint8_t no_line[] = {4, 0x80};  // -128: bytecode without a line
  EXPECT_EQ(line_from_linetable_310(no_line, sizeof no_line, 7, 2), 0);
}

TEST(PythonLayout, VersionsFromTheirText) {
  EXPECT_EQ(parse_py_version("3.12.3 (main, Apr 10 2024)"), 0x030c0300u);
  EXPECT_EQ(parse_py_version("3.10.13"), 0x030a0d00u);
  EXPECT_EQ(parse_py_version("3.14"), 0x030e0000u);
  EXPECT_EQ(parse_py_version("3.13.0 experimental free-threading build"), 0x030d0000u);
  EXPECT_EQ(parse_py_version("three"), 0u);
  EXPECT_EQ(parse_py_version("3"), 0u);
  EXPECT_EQ(parse_py_version(""), 0u);
}

TEST(PythonLayout, FixedTablesUpTo312Only) {
  const PyLayout* l310 = fixed_py_layout(0x030a0df0);
  ASSERT_NE(l310, nullptr);
  EXPECT_EQ(l310->chain, FrameChain::kHeapFrames);
  EXPECT_EQ(l310->lines, LineFormat::kLineTable310);
  EXPECT_EQ(l310->ts_frame, 24);
  EXPECT_EQ(l310->f_instr, 96) << "PyFrameObject.f_lasti";
  const PyLayout* l311 = fixed_py_layout(0x030b07f0);
  ASSERT_NE(l311, nullptr);
  EXPECT_EQ(l311->chain, FrameChain::kCFrame);
  EXPECT_EQ(l311->co_code_adaptive, 184);
  EXPECT_EQ(l311->str_ascii_data, 48) << "3.11's PyASCIIObject still has wstr";
  const PyLayout* l312 = fixed_py_layout(0x030c01f0);
  ASSERT_NE(l312, nullptr);
  EXPECT_EQ(l312->f_owner, 70);
  EXPECT_EQ(l312->str_ascii_data, 40);
  for (const PyLayout* l : {l310, l311, l312}) {
    EXPECT_FALSE(l->from_debug_offsets);
    EXPECT_LE(l->frame_read, kMaxFrameRead);
    EXPECT_LE(l->code_read, kMaxCodeRead);
    EXPECT_LE(l->co_linetable + 8u, l->code_read);
    EXPECT_LE(l->f_previous + 8u, l->frame_read);
    EXPECT_LE(l->f_instr + 4u, l->frame_read);
  }
  EXPECT_EQ(fixed_py_layout(0x030d00f0), nullptr) << "3.13 comes from _Py_DebugOffsets";
  EXPECT_EQ(fixed_py_layout(0x030909f0), nullptr);
  EXPECT_EQ(fixed_py_layout(0x030f0000), nullptr);
}

// The first bytes of _PyRuntime, from a cookie, a version, free_threaded and the offsets that follow.
std::vector<uint8_t> table(uint64_t version, uint64_t free_threaded, const std::vector<uint64_t>& offsets) {
  std::vector<uint8_t> blob(24 + 8 * offsets.size());
  memcpy(blob.data(), "xdebugpy", 8);
  memcpy(blob.data() + 8, &version, 8);
  memcpy(blob.data() + 16, &free_threaded, 8);
  memcpy(blob.data() + 24, offsets.data(), 8 * offsets.size());
  return blob;
}

// Recorded from CPython 3.13.0 (pyenv build, x86-64): runtime, interpreter, thread, frame, code,
// object, type, tuple, list, dict, float, int, bytes and str groups.
const std::vector<uint64_t> k313 = {
    283320, 608, 632, 194968, 7272, 7264, 7344, 7400, 7656, 7640, 7648, 16, 7752, 0, 7768, 7760, 304, 0, 8, 16, 72,
    152, 160, 232, 32, 80, 8, 0, 56, 72, 70, 208, 112, 120, 128, 136, 68, 52, 96, 104, 200, 16, 8, 416, 24, 88, 168,
    32, 24, 16, 40, 24, 16, 48, 32, 40, 24, 16, 32, 16, 24, 40, 16, 32, 64, 32, 16, 40};

// 3.14's groups in the order of its header (Include/internal/pycore_debug_offsets.h, v3.14.0), with
// the values of a 3.14.6 build: the frame's owner moved to 74, the code object grew.
const std::vector<uint64_t> k314 = {
    315600, 784, 808,                                                              // runtime
    225672, 7280, 7272, 7336, 7352, 7400, 7680, 7664, 7672, 16, 7768, 0, 7784, 7776, 7824, 0,  // interpreter
    824, 0, 8, 16, 72, 152, 156, 224, 32,                                          // thread
    88, 8, 0, 56, 80, 74, 64, 0,                                                   // frame
    216, 112, 120, 128, 136, 68, 52, 96, 104, 208, 0,                              // code
    16, 8,                                                                         // object
    416, 24, 88, 168,                                                              // type
    40, 32, 16,                                                                    // tuple
    40, 24, 16,                                                                    // list
    200, 24, 40, 32,                                                               // set
    48, 32, 40,                                                                    // dict
    24, 16,                                                                        // float
    32, 16, 24,                                                                    // int
    40, 16, 32,                                                                    // bytes
    64, 32, 16, 40};                                                               // str

TEST(PythonLayout, From313DebugOffsets) {
  ASSERT_EQ(k313.size(), 68u);
  std::vector<uint8_t> blob = table(0x030d00f0, 0, k313);
  ASSERT_EQ(debug_offsets_size(0x030d00f0), blob.size());
  PyLayout l{};
  ASSERT_EQ(layout_from_debug_offsets(blob.data(), blob.size(), 0x030d00f0, &l), LayoutStatus::kOk);
  EXPECT_TRUE(l.from_debug_offsets);
  EXPECT_EQ(l.chain, FrameChain::kCurrentFrame);
  EXPECT_EQ(l.lines, LineFormat::kLocations);
  EXPECT_EQ(l.ts_frame, 72);
  EXPECT_EQ(l.f_code, 0);
  EXPECT_EQ(l.f_previous, 8);
  EXPECT_EQ(l.f_instr, 56);
  EXPECT_EQ(l.f_owner, 70);
  EXPECT_EQ(l.code_mask, ~uintptr_t(0)) << "3.13's f_executable is a plain pointer";
  EXPECT_EQ(l.co_filename, 112);
  EXPECT_EQ(l.co_name, 120);
  EXPECT_EQ(l.co_linetable, 136);
  EXPECT_EQ(l.co_firstlineno, 68);
  EXPECT_EQ(l.co_code_adaptive, 200);
  EXPECT_EQ(l.code_read, 200);
  EXPECT_EQ(l.ob_type, 8);
  EXPECT_EQ(l.bytes_size, 16);
  EXPECT_EQ(l.bytes_data, 32);
  EXPECT_EQ(l.str_state, 32);
  EXPECT_EQ(l.str_length, 16);
  EXPECT_EQ(l.str_ascii_data, 40);
  // Py_GetVersion() alone gives no release level: major.minor.micro must still match.
  EXPECT_EQ(layout_from_debug_offsets(blob.data(), blob.size(), 0x030d0000, &l), LayoutStatus::kOk);
}

TEST(PythonLayout, From314DebugOffsets) {
  ASSERT_EQ(k314.size(), 78u);
  std::vector<uint8_t> blob = table(0x030e06f0, 0, k314);
  ASSERT_EQ(debug_offsets_size(0x030e06f0), blob.size());
  PyLayout l{};
  ASSERT_EQ(layout_from_debug_offsets(blob.data(), blob.size(), 0x030e06f0, &l), LayoutStatus::kOk);
  EXPECT_EQ(l.ts_frame, 72);
  EXPECT_EQ(l.f_owner, 74);
  EXPECT_EQ(l.f_instr, 56);
  EXPECT_EQ(l.co_code_adaptive, 208);
  EXPECT_EQ(l.co_linetable, 136);
  EXPECT_EQ(l.str_ascii_data, 40);
  EXPECT_EQ(l.bytes_data, 32);
  EXPECT_EQ(l.code_mask, ~uintptr_t(3)) << "3.14's f_executable is a tagged _PyStackRef";
  // Read with 3.13's table, the same bytes put the wrong numbers in every group from the
  // interpreter's on: that must not pass the bounds checks.
  EXPECT_NE(layout_from_debug_offsets(table(0x030d00f0, 0, std::vector<uint64_t>(k314.begin(), k314.begin() + 68)).data(),
                                      24 + 8 * 68, 0x030d00f0, &l),
            LayoutStatus::kOk);
}

TEST(PythonLayout, DebugOffsetsRefusedWhenTheyCannotBeTrusted) {
  PyLayout l{};
  l.ts_frame = 12345;
  auto status = [&](const std::vector<uint8_t>& b, uint32_t running) {
    return layout_from_debug_offsets(b.data(), b.size(), running, &l);
  };
  std::vector<uint8_t> good = table(0x030d00f0, 0, k313);
  std::vector<uint8_t> cookie = good;
  cookie[0] = 'X';
  EXPECT_EQ(status(cookie, 0x030d00f0), LayoutStatus::kNoDebugOffsets);
  EXPECT_EQ(status(std::vector<uint8_t>(good.begin(), good.end() - 8), 0x030d00f0), LayoutStatus::kNoDebugOffsets)
      << "a short read";
  EXPECT_EQ(status(good, 0x030d01f0), LayoutStatus::kVersionMismatch) << "declares 3.13.0, 3.13.1 runs";
  EXPECT_EQ(status(good, 0x030d0100), LayoutStatus::kVersionMismatch);
  EXPECT_EQ(status(table(0x030d00f0, 1, k313), 0x030d00f0), LayoutStatus::kFreeThreaded);
  EXPECT_EQ(status(good, 0x030f0000), LayoutStatus::kUnknownVersion) << "3.15: no table known";
  EXPECT_EQ(status(good, 0x030c00f0), LayoutStatus::kUnknownVersion);
  // Each offset the reader uses, pushed outside its structure (or misaligned), is refused.
  // Indices into k313: thread current_frame 20, frame previous 26, executable 27, instr_ptr 28,
  // owner 30, code filename 32, name 33, linetable 35, firstlineno 36, co_code_adaptive 40,
  // ob_type 42, bytes ob_size 62, ob_sval 63, str state 65, length 66, ascii size 67.
  for (size_t i : {20, 26, 27, 28, 30, 32, 33, 35, 36, 40, 42, 62, 63, 65, 66, 67}) {
    for (uint64_t bad : {uint64_t(1) << 20, uint64_t(4096), k313[i] + 3}) {
      if (i == 30 && bad == k313[i] + 3) continue;  // the owner is one byte: any offset inside the frame is fine
      std::vector<uint64_t> o = k313;
      o[i] = bad;
      EXPECT_EQ(status(table(0x030d00f0, 0, o), 0x030d00f0), LayoutStatus::kBadOffsets)
          << "field " << i << " = " << bad;
    }
  }
  EXPECT_EQ(l.ts_frame, 12345) << "nothing written unless the table is accepted";
  EXPECT_EQ(status(good, 0x030d00f0), LayoutStatus::kOk);
}

}  // namespace
}  // namespace cuprobe::shim
