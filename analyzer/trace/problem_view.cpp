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

uint64_t layer_key(const Problem& p) { return p.typed ? trace::layer_hash(p.desc) : p.hash | 1; }

}  // namespace cuprobe::reader
