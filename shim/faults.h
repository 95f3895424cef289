// Fault mode in the shim: the plan from CUPROBE_FAULTS and the memory cap from CUPROBE_MEM_CAP
// (common/fault_plan.h), decided for each faultable call before the real function would run.
//
// Decisions depend only on the plan, the call's own properties (API, size, problem, engine,
// device) and a counter per rule (per process, or per thread with scope=thread); probabilities
// are a hash of (seed, rule, match number), never a shared random stream or the clock — so a
// program that makes the same calls gets the same faults. The hot path of a faultable call
// pays one load and a predicted branch while no plan is loaded.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "cuprobe/problem.h"
#include "recorder.h"

namespace cuprobe::shim {

extern bool g_faults_on;  // a plan with live rules, or a memory cap, is in force
extern bool g_cap_on;     // a memory cap is in force
extern bool g_sticky_on;  // a sticky rule fired: a device's context is (as if) corrupted

// What a faultable call is, as far as a rule can ask.
struct FaultCtx {
  uint64_t size = 0;          // bytes requested (allocations)
  uint32_t problem_id = 0;    // interned problem (problem_table.h), 0 unknown
  uint64_t problem_hash = 0;  // 0 unknown
  int64_t engine = -1;        // backend engine global index or legacy algorithm, -1 unknown
  int device = -1;
  bool cap_checked = false;   // an allocation the memory cap weighs
  int comm_size = -1;         // an NCCL set-up's number of ranks, -1 unknown
  uint64_t comm = 0;          // an NCCL call's communicator (its size asked only if a rule needs it)
};

struct FaultHit {
  int rule = -1;
  uint64_t k = 0;      // match number of the call for that rule
  int32_t code = 0;    // the error the caller gets
  int cap_device = -1; // the memory cap reserved `size` bytes on this device for the call
  uint64_t delay_ns = 0;  // the call waits this long first (delay=); with code 0 it then runs
};

// The number of ranks of an NCCL communicator, from the real library (ncclCommCount); -1 when
// it cannot be asked (shim/nccl_wrappers.cpp).
int nccl_comm_size(const void* comm);

// Waits hit.delay_ns (a rule's delay=), sleeping through signals.
void fault_delay(const FaultHit& hit);

// The name of rule `rule` of the plan ("mem-cap" for the memory cap), for messages.
const char* fault_rule_name(int rule);

// Reads the plan and the cap (once per process, at configuration).
void faults_configure();
// Writes the FaultRule records into a new trace file.
void write_fault_records();
// The process's rank became known from an NCCL communicator (process_info.cpp): rules aimed at a
// rank (rank=N, rank=random) that now hold here become live, and their records are written.
void faults_rank_known();
// Learns which problem-text rules a newly interned problem matches: each distinct problem's text
// (common/problem_text.h) is made and matched once, the answer kept per problem id; a problem~
// regex costs time linear in the text times its states (common/safe_regex.h), never backtracking.
void faults_on_new_problem(uint32_t id, const trace::ProblemDesc& d);

// Decides a faultable call; true when it must be replaced by hit->code. When the memory cap
// weighed an allocation and let it through, hit->cap_device says where its bytes were
// reserved: the caller reports the outcome with cap_settle.
bool fault_decide(ApiId api, trace::Library lib, const FaultCtx& c, FaultHit* hit);
// The runtime error a sticky rule left on `device` (its context corrupted), 0 when none: what
// cudaGetLastError and cudaPeekAtLastError report from then on.
int32_t sticky_error(int device);
void cap_settle(const FaultHit& hit, uint64_t size, bool ok, const void* ptr);
void cap_note_free(const void* ptr);
void cap_adjust_meminfo(int device, size_t* free_bytes, size_t* total);

// The fault word of a call record (trace_format.h kCallInjected).
inline uint64_t fault_word(const FaultHit& h) { return uint64_t(uint16_t(h.rule)) | (h.k << 16); }

}  // namespace cuprobe::shim
