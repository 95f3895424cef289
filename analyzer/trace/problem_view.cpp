// Problem shapes and layer keys; see problem_view.h.
#include "trace/problem_view.h"

#include "problem_text.h"

namespace cuprobe::reader {

ProblemShape problem_shape(const Problem* p) {
  ProblemShape s;
  if (p == nullptr || !p->typed) return s;
  const trace::ProblemDesc& d = p->desc;
  s.op = problem_op_text(trace::ProblemOp(d.op));
  if (d.n_tensors > 0) {
    const trace::ProblemTensor& t = d.tensors[0];
    int n = t.nbdims <= trace::kProblemMaxDims ? t.nbdims : trace::kProblemMaxDims;
    s.dims.assign(t.dims, t.dims + n);
    if (conv_dummy_height(d)) s.dims.erase(s.dims.begin() + 2);  // a 1-D convolution, as its text shows it
    s.dtype = dtype_text(t.dtype);
  }
  return s;
}

std::vector<int64_t> shape_class(const Problem* p) {
  std::vector<int64_t> out;
  if (p == nullptr || !p->typed) return out;
  const trace::ProblemDesc& d = p->desc;
  int nt = d.n_tensors <= trace::kProblemMaxTensors ? d.n_tensors : trace::kProblemMaxTensors;
  for (int i = 0; i < nt; ++i) {
    const trace::ProblemTensor& t = d.tensors[i];
    auto role = trace::TensorRole(t.role);
    if (role == trace::TensorRole::kW || role == trace::TensorRole::kDw) continue;
    if (!out.empty()) out.push_back(-1);
    int n = t.nbdims <= trace::kProblemMaxDims ? t.nbdims : trace::kProblemMaxDims;
    out.insert(out.end(), t.dims, t.dims + n);
  }
  return out;
}

uint64_t layer_key(const Problem& p) {
  if (!p.typed) return p.hash | 1;
  const trace::ProblemDesc& d = p.desc;
  trace::ProblemHasher h;
  h.add(d.op);
  h.add(d.flags);
  int nt = d.n_tensors <= trace::kProblemMaxTensors ? d.n_tensors : trace::kProblemMaxTensors;
  for (int i = 0; i < nt; ++i) {
    const trace::ProblemTensor& t = d.tensors[i];
    auto role = trace::TensorRole(t.role);
    h.add(t.role);
    h.add(t.dtype);
    h.add(t.layout);
    h.add(t.nbdims);
    if (role == trace::TensorRole::kW || role == trace::TensorRole::kDw) {
      for (int k = 0; k < t.nbdims && k < trace::kProblemMaxDims; ++k) h.add(t.dims[k]);
    } else if (t.nbdims >= 2) {
      h.add(t.dims[1]);  // batch and spatial sizes change with the input; the channel count is the layer's
    }
  }
  if (d.flags & trace::kProblemHasConv) {
    const trace::ProblemConv& c = d.conv;
    h.add(c.mode);
    h.add(c.compute);
    h.add(c.spatial);
    h.add(c.groups);
    for (int k = 0; k < 3; ++k) {
      h.add(c.pre[k]);
      h.add(c.post[k]);
      h.add(c.stride[k]);
      h.add(c.dilation[k]);
    }
  }
  for (int i = 0; i < d.n_fused && i < trace::kProblemMaxFused; ++i) {
    h.add(d.fused[i].op);
    h.add(d.fused[i].mode);
  }
  bool rnn = d.op >= uint16_t(trace::ProblemOp::kRnn) && d.op <= uint16_t(trace::ProblemOp::kRnnBwdWeights);
  for (int i = 0; i < d.n_params && i < trace::kProblemMaxParams; ++i) {
    if (rnn && (i == 7 || i == 8)) continue;  // sequence length and batch
    h.add(d.params[i]);
  }
  return h.h | 1;
}

}  // namespace cuprobe::reader
