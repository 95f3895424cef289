// Problem signatures: a stable, readable description of a cuDNN problem and its 64-bit hash,
// identical for the same problem across processes, ranks and hosts, and the same whether the
// problem came through the backend (graph) API or the legacy API. Format (docs/trace-format.md):
//
//   conv_fwd x[16,64,32,32]f32 nchw w[64,64,3,3]f32 nchw pad[1,1] str[1,1] dil[1,1] g1 acc:f32
//            -> y[16,64,32,32]f32 nchw
//
// Pointer alignment and the legacy math type are not part of the problem (they are recorded
// beside it). Built in a fixed buffer without allocation; the hash (FNV-1a) covers the whole
// text even where the readable form is cut at kMaxSignature characters.
#pragma once

#include <stdint.h>

#include "cudnn_mirror.h"

namespace cuprobe::shim {

inline constexpr uint32_t kMaxSignature = 480;

class SigBuilder {
 public:
  void text(const char* s);
  void ch(char c);
  void num(int64_t v);
  void list(const int64_t* v, int n);  // "[a,b,c]"
  void list(const int32_t* v, int n);
  // "x[16,64,32,32]f32 nchw"
  void tensor(const char* role, const TensorState& t);
  // "pad[1,1] str[1,1] dil[1,1] g1 acc:f32" (and " flip" for true convolution)
  void conv_params(const ConvState& c, int groups);

  const char* str();
  uint64_t hash() const { return hash_; }
  bool empty() const { return len_ == 0; }

 private:
  char buf_[kMaxSignature + 1];
  uint32_t len_ = 0;
  uint64_t hash_ = 1469598103934665603ull;
};

const char* dtype_name(int dtype);

// Convolution problems: kind is "conv_fwd", "conv_dgrad" or "conv_wgrad"; the two inputs and
// the output in the signature's role order (x w -> y, dy w -> dx, x dy -> dw).
void conv_signature(SigBuilder& b, const char* kind, const char* in0_role, const TensorState& in0,
                    const char* in1_role, const TensorState& in1, const ConvState& conv, const char* out_role,
                    const TensorState& out);

// The problem of a backend operation graph, from the mirrored states of its operations and
// their tensors; false when the graph's operations are not known.
bool graph_signature(SigBuilder& b, const GraphState& g, int64_t* min_alignment);

}  // namespace cuprobe::shim
