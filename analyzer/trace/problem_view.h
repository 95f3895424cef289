// What analyses ask of a typed cuDNN problem (reader::Problem): the shape rules show, and the
// layer a problem belongs to whatever its input size. Both read the typed values; nothing here
// looks at the problem's text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/reader.h"

namespace cuprobe::reader {

// The problem's operation and first tensor: "conv_fwd", {16,64,32,32}, "f32". Empty dims for a
// problem known only by its text (JSON Lines of trace format 1) or one without tensors. A 1-D
// convolution that reached cuDNN as 2-D with a dummy height (conv_dummy_height) has 1-D dims:
// {16,64,2600}, not {16,64,1,2600}.
struct ProblemShape {
  std::string op;
  std::vector<int64_t> dims;
  std::string dtype;
};
ProblemShape problem_shape(const Problem* p);

// A problem's shape class: the dims of every data tensor (weights left out: they are the
// layer's), one after the other with -1 between them; empty for a problem known by its text
// only. Two problems of a layer with equal classes differ in nothing a search depends on but
// strides, alignment and settings.
std::vector<int64_t> shape_class(const Problem* p);

// Identifies a problem's layer whatever its input size: the operation, every tensor's role, data
// type, layout and channel count (a filter's dims whole), the convolution, fused operations and
// the operation's parameters (an RNN's sequence length and batch left out). Never 0. A problem
// known only by its text is a layer of its own (its hash).
uint64_t layer_key(const Problem& p);

}  // namespace cuprobe::reader
