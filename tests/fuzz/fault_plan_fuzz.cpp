// libFuzzer target: the fault plan parser that the shim runs on CUPROBE_FAULTS and CUPROBE_MEM_CAP
// (common/fault_plan.cpp), and its regular expressions (common/safe_regex.cpp), on arbitrary text.
// The input is read as a plan, as a memory cap, as a byte count and as a problem~ pattern; every
// compiled pattern is searched in a problem signature and in the input. A crash, a sanitizer
// report, a search that does not finish, a refused plan that keeps rules or a refusal without a
// message is a finding.
//
//   clang++ -std=c++20 -fsanitize=fuzzer,address,undefined -Icommon -Ishim -Ischema \
//     -isystem /usr/local/cuda/include common/fault_plan.cpp common/safe_regex.cpp \
//     tests/fuzz/fault_plan_fuzz.cpp -o fault_plan_fuzz
//   ./fault_plan_fuzz -max_total_time=180 tests/fuzz/corpus/fault_plan_fuzz
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fault_plan.h"
#include "safe_regex.h"

namespace {

const char kProblem[] =
    "conv_fwd x[16,64,32,32]f32 nchw w[64,64,3,3]f32 nchw pad[1,1] str[1,1] dil[1,1] g1 acc:f32 -> "
    "y[16,64,32,32]f32 nchw";

// Searches are bounded by text x states; a long input is cut so that each run stays quick.
constexpr size_t kMaxSearched = 1024;

uint64_t total_memory(int, void*) { return 80ull << 30; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cuprobe;
  char* text = static_cast<char*>(malloc(size + 1));
  if (text == nullptr) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  size_t searched = size < kMaxSearched ? size : kMaxSearched;
  volatile uint64_t sink = 0;
  char err[768];

  static faults::Plan plan;  // about 80 KiB: not on the stack
  err[0] = 0;
  if (faults::parse_plan(text, &plan, err, sizeof err)) {
    for (int i = 0; i < plan.n; ++i) {
      const faults::Rule& r = plan.rules[i];
      if ((r.problem_kind == faults::kProblemRegex) != (r.problem_re != nullptr)) abort();
      if (r.problem_re != nullptr) {
        sink = sink + safe_regex::search(r.problem_re, kProblem, sizeof kProblem - 1);
        sink = sink + safe_regex::search(r.problem_re, text, searched);
      }
      if (r.probability > 1 || (r.probability < 0 && r.probability != -1)) abort();
      if (r.until_ns != 0 && r.until_ns <= r.from_ns) abort();
      for (uint64_t k = 1; k <= 4; ++k) sink = sink + faults::triggers_fire(r, i, k);
    }
    faults::free_plan(&plan);
  } else if (plan.n != 0 || err[0] == 0 || memchr(err, 0, sizeof err) == nullptr) {
    abort();
  }

  faults::MemCap cap;
  err[0] = 0;
  if (faults::parse_mem_cap(text, &cap, err, sizeof err)) {
    for (int d = 0; d <= faults::kCapDevices; ++d) {
      if (!(cap.fraction[d] >= 0 && cap.fraction[d] <= 1)) abort();
      sink = sink + faults::cap_bytes(cap, d, total_memory, nullptr);
    }
  } else if (err[0] == 0) {
    abort();
  }

  uint64_t bytes;
  sink = sink + faults::parse_bytes(reinterpret_cast<const char*>(data), size, &bytes);

  // The whole input as a problem~ pattern.
  err[0] = 0;
  if (safe_regex::Regex* re = safe_regex::compile(text, err, sizeof err)) {
    if (safe_regex::state_count(re) > safe_regex::kMaxStates) abort();
    sink = sink + safe_regex::search(re, kProblem, sizeof kProblem - 1);
    sink = sink + safe_regex::search(re, text, searched);
    sink = sink + safe_regex::search(re, "", 0);
    safe_regex::release(re);
  } else if (err[0] == 0) {
    abort();
  }
  (void)sink;
  free(text);
  return 0;
}
