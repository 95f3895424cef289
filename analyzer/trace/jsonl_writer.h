// Writing the JSON Lines of docs/trace-format.md ("JSON Lines (`cuprobe dump`)") from typed values:
// the one writer that `cuprobe dump` and the rule fixture generator (tests/tools/make_fixtures.cpp)
// share, so that fixtures are written exactly as a dump writes them, not by a second rendition of
// the format.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuprobe/problem.h"
#include "json_line.h"

namespace cuprobe::jsonl {

// One "type":"problem" line: the process, the problem's hash and text, and, when desc is not null,
// the typed problem ("desc": cuDNN's own enum values, the fields problem.h names).
void write_problem_line(JsonLine& j, uint32_t pid, uint64_t hash, const std::string& text,
                        const trace::ProblemDesc* desc, std::FILE* out);

// One "type":"module" line: a file the process had mapped (reader::Module), for offline
// symbolization and for telling which copies of a library were loaded.
void write_module_line(JsonLine& j, uint32_t pid, const std::string& path, uint64_t start, uint64_t end, uint64_t bias,
                       const std::string& build_id, std::FILE* out);

// One "type":"pin" line: what plan pinning did for one plan selection (reader::PinEvent), with
// the problem's text and the pinned knob text ("" when the selection did not end on it).
struct PinLine {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t ts_ns = 0;
  std::string outcome;  // trace::kPinOutcomeNames
  std::string problem;
  uint64_t hash = 0;
  int64_t engine = -1;
  std::string knobs;
  bool legacy = false;
  bool answered = false;
  double pinned_ms = -1;  // -1: not written
  double search_ms = -1;
  double replaced_ms = -1;  // searched-later: the budgeted plan's time per run
  bool moved = false;       // searched-later: another plan replaced the budgeted one
  bool no_fallback = false;  // budgeted: cuDNN's fallback list was answered empty
};
void write_pin_line(JsonLine& j, const PinLine& p, std::FILE* out);

// The value of one argument field of a call, typed as the binary trace types fields (api_table.h):
// integer 'i', unsigned 'u', hex 'p'/'x' ("0x..."), float 'f', text 's', problem 'q' (written as the
// problem's text; its "problem" line holds the rest), and a boolean.
struct CallValue {
  enum class Kind : uint8_t { kInt, kUnsigned, kHex, kFloat, kText, kProblem, kBool };
  Kind kind = Kind::kInt;
  uint64_t bits = 0;  // kInt: the int64_t's bits; kUnsigned, kHex: the value; kBool: 0 or 1
  double real = 0;    // kFloat
  std::string text;   // kText; kProblem: the problem's text
};

// One "type":"call" line: the keys every call has, then the API's fields in the order given.
struct CallLine {
  std::string api;
  int32_t ret = 0;
  uint64_t ts_ns = 0;
  uint64_t dur_ns = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  int32_t device = 0;
  std::optional<uint64_t> stream;  // the call's stream, when it has one
  std::vector<std::pair<std::string, CallValue>> fields;

  CallLine& i(std::string name, int64_t v) { return add(std::move(name), CallValue::Kind::kInt, uint64_t(v)); }
  CallLine& u(std::string name, uint64_t v) { return add(std::move(name), CallValue::Kind::kUnsigned, v); }
  CallLine& hex(std::string name, uint64_t v) { return add(std::move(name), CallValue::Kind::kHex, v); }
  CallLine& boolean(std::string name, bool v) { return add(std::move(name), CallValue::Kind::kBool, v ? 1 : 0); }
  CallLine& f(std::string name, double v) {
    CallValue x;
    x.kind = CallValue::Kind::kFloat;
    x.real = v;
    fields.emplace_back(std::move(name), std::move(x));
    return *this;
  }
  CallLine& text(std::string name, std::string v) { return add_text(std::move(name), CallValue::Kind::kText, std::move(v)); }
  CallLine& problem(std::string name, std::string problem_text) {
    return add_text(std::move(name), CallValue::Kind::kProblem, std::move(problem_text));
  }

 private:
  CallLine& add(std::string name, CallValue::Kind kind, uint64_t bits) {
    CallValue x;
    x.kind = kind;
    x.bits = bits;
    fields.emplace_back(std::move(name), std::move(x));
    return *this;
  }
  CallLine& add_text(std::string name, CallValue::Kind kind, std::string v) {
    CallValue x;
    x.kind = kind;
    x.text = std::move(v);
    fields.emplace_back(std::move(name), std::move(x));
    return *this;
  }
};

// Writes the call. A float is written so that it reads back as a float ("1.0", not "1"): JSON Lines
// without "api" lines type a field by the first value they see.
void write_call_line(JsonLine& j, const CallLine& c, std::FILE* out);

}  // namespace cuprobe::jsonl
