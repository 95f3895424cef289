// The one place a typed cuDNN problem (schema/cuprobe/problem.h) becomes readable text, for the
// analyzer's findings, `cuprobe dump`, and the shim's fault rules that match problems by text.
//
//   conv_fwd x[16,64,32,32]f32 nchw w[64,64,3,3]f32 nchw pad[1,1] str[1,1] dil[1,1] g1 acc:f32
//            -> y[16,64,32,32]f32 nchw
//
// No allocation and no library calls beyond memcpy: the shim calls it on a new problem.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuprobe/problem.h"

namespace cuprobe {

// Writes the problem's text into buf (always NUL-terminated when cap > 0, cut at cap - 1 bytes)
// and returns the length of the whole text (which may exceed cap - 1).
size_t render_problem(const trace::ProblemDesc& p, char* buf, size_t cap);

// A 1-D convolution as PyTorch hands it to cuDNN (aten/src/ATen/native/Convolution.cpp views
// x[N,C,L] as x[N,C,1,L]): a 2-D convolution whose x, w and y all have height 1, with no padding,
// stride 1 and dilation 1 in that dimension. Its text leaves that height out (x[16,64,2600],
// pad[p] str[s] dil[d], layout ncw/nwc), and so must a fault rule's problem pattern. A genuine
// 2-D convolution on height-1 inputs with a kx1 filter keeps both dimensions (its filter height
// is not 1).
bool conv_dummy_height(const trace::ProblemDesc& p);

// Names as the text uses them: "f32", "conv_fwd", "x"; "t?" / "op?" / "?" for unknown values.
const char* dtype_text(int cudnn_dtype);
const char* problem_op_text(trace::ProblemOp op);
const char* tensor_role_text(trace::TensorRole role);

// "split_k", "tile_size", ... (cudnnBackendKnobType_t, lower case without the prefix), nullptr
// for a type without a name.
const char* knob_text(int knob_type);
// "split_k=2,tile_size=8": knobs in the order given (records hold them sorted by type).
size_t render_knobs(const trace::Knob* knobs, int n, char* buf, size_t cap);

}  // namespace cuprobe
