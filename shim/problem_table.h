// Interning of typed cuDNN problems and knob sets (schema/cuprobe/problem.h): each distinct one
// gets an id and is written once into the trace, as a record of the thread that saw it first, so
// call records refer to it by id.
//
// Lock-free: a finalize or an execute on any thread never takes a mutex. Entries are identified
// by content (the whole record compared), the hash only finds the slot, so two problems whose
// hashes collide get two ids. A thread that finds a slot another thread is still filling waits
// for it (the other thread is copying a few hundred bytes). Storage is mapped once, at the first
// problem; when it is full, problems are still recorded (as id 0, unknown) and counted.
#pragma once

#include <stdint.h>

#include "cuprobe/problem.h"
#include "recorder.h"

namespace cuprobe::shim {

// `d` must be zeroed beyond what it describes (build it from a value-initialized ProblemDesc).
// Returns the problem's id (0 when it could not be interned); *hash gets problem_hash(d).
uint32_t intern_problem(ThreadState& t, const trace::ProblemDesc& d, uint64_t* hash);
// The hash of an interned problem, 0 for an unknown id.
uint64_t problem_hash_of(uint32_t id);

// Knob sets, sorted by type by the caller. 0 for an empty set.
uint32_t intern_knobs(ThreadState& t, const trace::Knob* knobs, int n);

// Called with each new problem (fault rules that match problems by text learn it here).
using NewProblemHook = void (*)(uint32_t id, const trace::ProblemDesc& d);
void set_new_problem_hook(NewProblemHook hook);

}  // namespace cuprobe::shim
