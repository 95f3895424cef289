// The fault plan: which intercepted calls fail on purpose, with which error, and when.
//
// One parser, used by the shim (CUPROBE_FAULTS, CUPROBE_MEM_CAP) and by `cuprobe record`
// (which checks a plan before the job starts), so both read a plan the same way. Plain C++
// over fixed-size structures: the shim links no C++ runtime. docs/faults.md has the syntax.
//
//   RULE  := CALLS ':' ERROR { ',' KEY OP VALUE }          rules separated by ';' or newlines
//   CALLS := NAME { '|' NAME }       a group (alloc, cudnn-execute, ...) or an API name
//   ERROR := a name (NOT_SUPPORTED, OOM, cudaErrorIllegalAddress, ...), a number, or DELAY (with
//            delay=TIME: the call waits, then runs)
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cuprobe/api_table.h"
#include "safe_regex.h"

namespace cuprobe::faults {

inline constexpr int kMaxRules = 32;
inline constexpr int kMemCapRule = kMaxRules;  // the rule index of allocations the memory cap refused
inline constexpr int kRuleSlots = kMaxRules + 1;
inline constexpr int kMaxAt = 64;
inline constexpr int kApiWords = (kApiCount + 63) / 64;
inline constexpr int kCapDevices = 32;  // devices a memory cap can name; the last slot: every device

inline constexpr int32_t kRankRandom = -2;  // rank=random

enum ProblemMatch : uint8_t { kProblemAny = 0, kProblemSubstring, kProblemRegex, kProblemHash };
enum Scope : uint8_t { kScopeProcess = 0, kScopeThread = 1 };

struct Rule {
  char name[48];
  char text[512];  // the rule as written (trimmed), for the trace and for replays
  uint64_t apis[kApiWords];
  int32_t cudart_code;  // what a CUDA runtime call returns (0: the rule names no such call)
  int32_t driver_code;  // what a driver call returns
  int32_t cudnn_code;   // what a cuDNN call returns
  int32_t nccl_code;    // what an NCCL call returns
  // Filters: a call that fails one is not counted by this rule.
  uint64_t min_size;  // bytes; 0 = any
  uint8_t problem_kind;
  char problem[256];
  uint64_t problem_hash;
  safe_regex::Regex* problem_re;  // problem~: compiled once (common/safe_regex.h), freed by free_plan
  int64_t engine;  // -1 = any (legacy calls: the algorithm)
  int32_t device;  // -1 = any
  int32_t rank;    // -1 = any; kRankRandom: the rank random_rank(seed, the job's size) picks
  int64_t pid;     // -1 = any
  char comm[64];   // "" = any
  int32_t comm_size;           // 0 = any: NCCL calls on (set-ups of) a communicator of this many ranks
  uint64_t from_ns, until_ns;  // since the process started; until_ns 0 = no end
  // Triggers over k, the 1-based count of calls this rule matched (per process or per thread).
  uint64_t nth, every, first, after;  // 0 = not given
  uint64_t at[kMaxAt];
  int n_at;
  double probability;  // < 0: not given
  uint64_t seed;
  bool seed_given;  // seed= was written (rank=random without one: cuprobe record picks one)
  uint64_t max;  // 0 = no limit
  uint8_t scope;
  bool sticky;  // once it fires, the process's later faultable calls on that device fail too
  uint64_t delay_ns;  // a fired rule first makes the call wait this long (0: no wait)
  bool delay_only;    // ERROR was DELAY: after the wait the call runs as usual
};

struct MemCap {
  bool any;
  uint64_t bytes[kCapDevices + 1];  // 0 = no cap on that device
  double fraction[kCapDevices + 1]; // 0 = none; of the device's total memory
};

struct Plan {
  int n;
  Rule rules[kMaxRules];
  bool uses_problem_text;  // some rule matches problems by substring or regex
};

// Parses a whole plan. On failure returns false and writes a message naming the rule and the
// part that is wrong into err; *plan is then empty (and needs no free_plan).
bool parse_plan(const char* text, Plan* plan, char* err, size_t err_cap);
void free_plan(Plan* plan);

// "8GiB", "50%", "0=8GiB,1=20GiB" (device=limit), "all=8GiB".
bool parse_mem_cap(const char* text, MemCap* cap, char* err, size_t err_cap);

// The cap on device `device` in bytes, 0 when none: its own entry, else the one for every device;
// a percentage asks `total(device)` for the device's memory (called only then).
uint64_t cap_bytes(const MemCap& cap, int device, uint64_t (*total)(int device, void* ctx), void* ctx);

// "1024", "64MiB", "1.5GiB", "2GB" (powers of 1000), "1G" (GiB).
bool parse_bytes(const char* s, size_t len, uint64_t* out);

// Does the call with the k-th match of rule r fire (probability part only; deterministic)?
bool draw(const Rule& r, int rule_index, uint64_t k);

// Triggers other than max: does the k-th matched call fire?
bool triggers_fire(const Rule& r, int rule_index, uint64_t k);

// Named error codes: "NOT_SUPPORTED" -> 3000 for cuDNN; *ok false when the name has no value
// for that library. Exposed for tests and for `cuprobe record --help`.
bool error_code(const char* name, trace::Library lib, int32_t* code);
// The vendor name of a library's status code ("ncclSystemError", "cudaErrorIllegalAddress"), the
// first of its enum with that value; nullptr when it has none.
const char* error_name(trace::Library lib, int32_t code);
// The rank rank=random aims at in a job of world_size ranks: the same on every rank (and in the
// analysis) for one seed; -1 when the size is not known.
int random_rank(uint64_t seed, int world_size);

// Names of the call groups, for messages and help: "alloc, host-alloc, ...".
const char* group_names();

}  // namespace cuprobe::faults
