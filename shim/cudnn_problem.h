// Typed cuDNN problems (schema/cuprobe/problem.h) built from the mirrored descriptor state: the
// same problem gives the same ProblemDesc whether it came through the backend (graph) API or the
// legacy API. Pointer alignment and the legacy math type are not part of the problem (alignment is
// recorded beside it, the math type in the record but outside the hash). No text is made here:
// common/problem_text.h renders problems for people.
#pragma once

#include <stdint.h>

#include "cudnn_mirror.h"
#include "cuprobe/problem.h"

namespace cuprobe::shim {

// One tensor of a problem. Its layout is named when its strides are a packed channels-first or
// channels-last order (or, for a legacy filter without strides, by its format).
void problem_tensor(trace::ProblemTensor& out, trace::TensorRole role, const TensorState& t);

// A convolution: op is conv_fwd (x w -> y), conv_dgrad (dy w -> dx) or conv_wgrad (x dy -> dw);
// the two inputs and the output in that order. `d` must be value-initialized.
void conv_problem(trace::ProblemDesc& d, trace::ProblemOp op, const TensorState& in0, const TensorState& in1,
                  const ConvState& conv, const TensorState& out);

// The problem of a backend operation graph, from the mirrored states of its operations and their
// tensors; false when the graph's operations are not known.
bool graph_problem(trace::ProblemDesc& d, const GraphState& g, int64_t* min_alignment);
// The same from the graph's operation descriptors (at most kMaxGraphOpsAll): a graph of more
// operations than GraphState keeps (attention) gets its problem when its operations are set.
bool graph_problem_of_ops(trace::ProblemDesc& d, void* const* op_descs, int n, int64_t* min_alignment);

}  // namespace cuprobe::shim
