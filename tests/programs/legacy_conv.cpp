// The legacy (descriptor + find) cuDNN path PyTorch takes with TORCH_CUDNN_V8_API_DISABLED=1,
// plus the other legacy families a model touches: a 3x3 convolution in all three directions
// (heuristic pick, workspace size, FindEx over a 64 MiB workspace, then the run with the found
// algorithm), batch norm training/backward/inference, max pooling, one LSTM forward, CTC loss
// and a spatial transformer. Prints "legacy <direction> heuristic_first=<algo>" (the heuristic
// query's first answer) and "legacy <direction> algo=<algo> workspace=<bytes>" per convolution
// direction, and "legacy done" at the end. --batches N,M,...: the convolution part runs once per
// batch size (default 8; at most 8), as a job whose batch changes does.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void ck(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "legacy_conv: %s failed: %d (%s)\n", what, int(s), cudnnGetErrorString(s));
    std::exit(1);
  }
}
void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "legacy_conv: %s failed: %d\n", what, int(e));
    std::exit(1);
  }
}

#define CK(call) ck(call, #call)

constexpr size_t kFindWorkspace = size_t(64) << 20;

void* dev_alloc(size_t bytes) {
  void* p = nullptr;
  CK(cudaMalloc(&p, bytes));
  return p;
}

void set_tensor(cudnnTensorDescriptor_t d, std::vector<int> dims) {
  std::vector<int> strides(dims.size());
  int s = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = s;
    s *= dims[i];
  }
  CK(cudnnSetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, int(dims.size()), dims.data(), strides.data()));
}

cudnnTensorDescriptor_t tensor(std::vector<int> dims) {
  cudnnTensorDescriptor_t d = nullptr;
  CK(cudnnCreateTensorDescriptor(&d));
  set_tensor(d, std::move(dims));
  return d;
}

void report(const char* direction, int algo, size_t workspace) {
  std::printf("legacy %s algo=%d workspace=%zu\n", direction, algo, workspace);
  std::fflush(stdout);
}

template <typename Perf>
const Perf& best_found(const Perf* perf, int n, const char* what) {
  for (int i = 0; i < n; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i];
  std::fprintf(stderr, "legacy_conv: %s found no usable algorithm\n", what);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> batches;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) != "--batches") continue;
    for (const char* p = argv[i + 1]; *p;) {
      char* end = nullptr;
      long b = std::strtol(p, &end, 10);
      if (end == p || b < 1 || b > 8) {
        std::fprintf(stderr, "legacy_conv: --batches takes sizes from 1 to 8, separated by commas\n");
        return 2;
      }
      batches.push_back(int(b));
      p = *end == ',' ? end + 1 : end;
    }
  }
  if (batches.empty()) batches.push_back(8);
  cudnnHandle_t handle = nullptr;
  CK(cudnnCreate(&handle));
  cudaStream_t stream = nullptr;
  CK(cudaStreamCreate(&stream));
  CK(cudnnSetStream(handle, stream));
  const float one = 1.0f, zero = 0.0f;

  // ---- convolution, [8,64,16,16] * [64,64,3,3], pad 1 ----
  cudnnTensorDescriptor_t x_desc = tensor({8, 64, 16, 16});
  cudnnTensorDescriptor_t y_desc = tensor({8, 64, 16, 16});
  cudnnFilterDescriptor_t w_desc = nullptr;
  CK(cudnnCreateFilterDescriptor(&w_desc));
  const int wdims[4] = {64, 64, 3, 3};
  CK(cudnnSetFilterNdDescriptor(w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, wdims));
  cudnnConvolutionDescriptor_t conv = nullptr;
  CK(cudnnCreateConvolutionDescriptor(&conv));
  const int pad[2] = {1, 1}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  CK(cudnnSetConvolutionNdDescriptor(conv, 2, pad, stride, dilation, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CK(cudnnSetConvolutionGroupCount(conv, 1));
  CK(cudnnSetConvolutionMathType(conv, CUDNN_DEFAULT_MATH));

  const size_t act_bytes = size_t(8) * 64 * 16 * 16 * sizeof(float);
  const size_t w_bytes = size_t(64) * 64 * 3 * 3 * sizeof(float);
  void* x = dev_alloc(act_bytes);
  void* y = dev_alloc(act_bytes);
  void* w = dev_alloc(w_bytes);
  void* dx = dev_alloc(act_bytes);
  void* dy = dev_alloc(act_bytes);
  void* dw = dev_alloc(w_bytes);
  void* find_ws = dev_alloc(kFindWorkspace);

  for (int batch : batches) {
    set_tensor(x_desc, {batch, 64, 16, 16});
    set_tensor(y_desc, {batch, 64, 16, 16});
    {  // forward
      cudnnConvolutionFwdAlgoPerf_t perf[8];
      int n = 0;
      CK(cudnnGetConvolutionForwardAlgorithm_v7(handle, x_desc, w_desc, conv, y_desc, 8, &n, perf));
      std::printf("legacy fwd heuristic_first=%d\n", int(perf[0].algo));
      if (n < 1) ck(CUDNN_STATUS_NOT_SUPPORTED, "cudnnGetConvolutionForwardAlgorithm_v7 (no result)");
      size_t ws_size = 0;
      CK(cudnnGetConvolutionForwardWorkspaceSize(handle, x_desc, w_desc, conv, y_desc, perf[0].algo, &ws_size));
      void* ws = ws_size > 0 ? dev_alloc(ws_size) : nullptr;
      CK(cudnnFindConvolutionForwardAlgorithmEx(handle, x_desc, x, w_desc, w, conv, y_desc, y, 8, &n, perf, find_ws,
                                                kFindWorkspace));
      const auto& best = best_found(perf, n, "forward");
      CK(cudnnConvolutionForward(handle, &one, x_desc, x, w_desc, w, conv, best.algo, find_ws, best.memory, &zero,
                                 y_desc, y));
      report("fwd", int(best.algo), best.memory);
      if (ws != nullptr) CK(cudaFree(ws));
    }
    {  // backward data
      cudnnConvolutionBwdDataAlgoPerf_t perf[8];
      int n = 0;
      CK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, w_desc, y_desc, conv, x_desc, 8, &n, perf));
      std::printf("legacy bwd_data heuristic_first=%d\n", int(perf[0].algo));
      if (n < 1) ck(CUDNN_STATUS_NOT_SUPPORTED, "cudnnGetConvolutionBackwardDataAlgorithm_v7 (no result)");
      size_t ws_size = 0;
      CK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, w_desc, y_desc, conv, x_desc, perf[0].algo, &ws_size));
      void* ws = ws_size > 0 ? dev_alloc(ws_size) : nullptr;
      CK(cudnnFindConvolutionBackwardDataAlgorithmEx(handle, w_desc, w, y_desc, dy, conv, x_desc, dx, 8, &n, perf,
                                                     find_ws, kFindWorkspace));
      const auto& best = best_found(perf, n, "backward data");
      CK(cudnnConvolutionBackwardData(handle, &one, w_desc, w, y_desc, dy, conv, best.algo, find_ws, best.memory, &zero,
                                      x_desc, dx));
      report("bwd_data", int(best.algo), best.memory);
      if (ws != nullptr) CK(cudaFree(ws));
    }
    {  // backward filter
      cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
      int n = 0;
      CK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, x_desc, y_desc, conv, w_desc, 8, &n, perf));
      std::printf("legacy bwd_filter heuristic_first=%d\n", int(perf[0].algo));
      if (n < 1) ck(CUDNN_STATUS_NOT_SUPPORTED, "cudnnGetConvolutionBackwardFilterAlgorithm_v7 (no result)");
      size_t ws_size = 0;
      CK(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, x_desc, y_desc, conv, w_desc, perf[0].algo, &ws_size));
      void* ws = ws_size > 0 ? dev_alloc(ws_size) : nullptr;
      CK(cudnnFindConvolutionBackwardFilterAlgorithmEx(handle, x_desc, x, y_desc, dy, conv, w_desc, dw, 8, &n, perf,
                                                       find_ws, kFindWorkspace));
      const auto& best = best_found(perf, n, "backward filter");
      CK(cudnnConvolutionBackwardFilter(handle, &one, x_desc, x, y_desc, dy, conv, best.algo, find_ws, best.memory,
                                        &zero, w_desc, dw));
      report("bwd_filter", int(best.algo), best.memory);
      if (ws != nullptr) CK(cudaFree(ws));
    }
  }

  // ---- batch norm over x, per-channel parameters [1,64,1,1] ----
  cudnnTensorDescriptor_t bn_desc = tensor({1, 64, 1, 1});
  const size_t ch_bytes = 64 * sizeof(float);
  void* scale = dev_alloc(ch_bytes);
  void* bias = dev_alloc(ch_bytes);
  void* run_mean = dev_alloc(ch_bytes);
  void* run_var = dev_alloc(ch_bytes);
  void* save_mean = dev_alloc(ch_bytes);
  void* save_inv_var = dev_alloc(ch_bytes);
  void* dscale = dev_alloc(ch_bytes);
  void* dbias = dev_alloc(ch_bytes);
  const double eps = 1e-5;
  const cudnnBatchNormMode_t bn_mode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  const cudnnBatchNormOps_t bn_ops = CUDNN_BATCHNORM_OPS_BN;
  size_t bn_ws_size = 0, bn_reserve_size = 0;
  CK(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(handle, bn_mode, bn_ops, x_desc, nullptr, y_desc,
                                                              bn_desc, nullptr, &bn_ws_size));
  CK(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(handle, bn_mode, bn_ops, nullptr, x_desc,
                                                          &bn_reserve_size));
  void* bn_ws = bn_ws_size > 0 ? dev_alloc(bn_ws_size) : nullptr;
  void* bn_reserve = bn_reserve_size > 0 ? dev_alloc(bn_reserve_size) : nullptr;
  CK(cudnnBatchNormalizationForwardTrainingEx(handle, bn_mode, bn_ops, &one, &zero, x_desc, x, nullptr, nullptr,
                                              y_desc, y, bn_desc, scale, bias, 0.1, run_mean, run_var, eps,
                                              save_mean, save_inv_var, nullptr, bn_ws, bn_ws_size, bn_reserve,
                                              bn_reserve_size));
  size_t bn_bwd_ws_size = 0;
  CK(cudnnGetBatchNormalizationBackwardExWorkspaceSize(handle, bn_mode, bn_ops, x_desc, y_desc, y_desc, nullptr,
                                                       x_desc, bn_desc, nullptr, &bn_bwd_ws_size));
  void* bn_bwd_ws = bn_bwd_ws_size > 0 ? dev_alloc(bn_bwd_ws_size) : nullptr;
  CK(cudnnBatchNormalizationBackwardEx(handle, bn_mode, bn_ops, &one, &zero, &one, &zero, x_desc, x, y_desc, y, y_desc,
                                       dy, nullptr, nullptr, x_desc, dx, bn_desc, scale, bias, dscale, dbias, eps,
                                       save_mean, save_inv_var, nullptr, bn_bwd_ws, bn_bwd_ws_size, bn_reserve,
                                       bn_reserve_size));
  CK(cudnnBatchNormalizationForwardInference(handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_desc, x, y_desc, y,
                                             bn_desc, scale, bias, run_mean, run_var, eps));

  // ---- max pooling 2x2 stride 2 ----
  cudnnPoolingDescriptor_t pool = nullptr;
  CK(cudnnCreatePoolingDescriptor(&pool));
  CK(cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2));
  cudnnTensorDescriptor_t pooled_desc = tensor({8, 64, 8, 8});
  void* pooled = dev_alloc(size_t(8) * 64 * 8 * 8 * sizeof(float));
  CK(cudnnPoolingForward(handle, pool, &one, x_desc, x, &zero, pooled_desc, pooled));

  // ---- LSTM: input 64, hidden 128, one layer, seq 10, batch 4 ----
  const int seq = 10, batch = 4, in_size = 64, hidden = 128;
  cudnnDropoutDescriptor_t dropout = nullptr;
  CK(cudnnCreateDropoutDescriptor(&dropout));
  size_t states_size = 0;
  CK(cudnnDropoutGetStatesSize(handle, &states_size));
  void* states = states_size > 0 ? dev_alloc(states_size) : nullptr;
  CK(cudnnSetDropoutDescriptor(dropout, handle, 0.0f, states, states_size, 0));
  cudnnRNNDescriptor_t rnn = nullptr;
  CK(cudnnCreateRNNDescriptor(&rnn));
  CK(cudnnSetRNNDescriptor_v8(rnn, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS, CUDNN_UNIDIRECTIONAL,
                              CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, in_size,
                              hidden, hidden, 1, dropout, CUDNN_RNN_PADDED_IO_ENABLED));
  std::vector<int> seq_lengths(size_t(batch), seq);
  float padding = 0.0f;
  cudnnRNNDataDescriptor_t rx_desc = nullptr, ry_desc = nullptr;
  CK(cudnnCreateRNNDataDescriptor(&rx_desc));
  CK(cudnnCreateRNNDataDescriptor(&ry_desc));
  CK(cudnnSetRNNDataDescriptor(rx_desc, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, seq, batch,
                               in_size, seq_lengths.data(), &padding));
  CK(cudnnSetRNNDataDescriptor(ry_desc, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, seq, batch,
                               hidden, seq_lengths.data(), &padding));
  cudnnTensorDescriptor_t h_desc = tensor({1, batch, hidden});
  cudnnTensorDescriptor_t c_desc = tensor({1, batch, hidden});
  size_t weight_size = 0, rnn_ws_size = 0, rnn_reserve_size = 0;
  CK(cudnnGetRNNWeightSpaceSize(handle, rnn, &weight_size));
  CK(cudnnGetRNNTempSpaceSizes(handle, rnn, CUDNN_FWD_MODE_TRAINING, rx_desc, &rnn_ws_size, &rnn_reserve_size));
  void* weights = weight_size > 0 ? dev_alloc(weight_size) : nullptr;
  void* rnn_ws = rnn_ws_size > 0 ? dev_alloc(rnn_ws_size) : nullptr;
  void* rnn_reserve = rnn_reserve_size > 0 ? dev_alloc(rnn_reserve_size) : nullptr;
  const size_t state_bytes = size_t(batch) * hidden * sizeof(float);
  void* rx = dev_alloc(size_t(seq) * batch * in_size * sizeof(float));
  void* ry = dev_alloc(size_t(seq) * batch * hidden * sizeof(float));
  void* hx = dev_alloc(state_bytes);
  void* hy = dev_alloc(state_bytes);
  void* cx = dev_alloc(state_bytes);
  void* cy = dev_alloc(state_bytes);
  auto* dev_seq = static_cast<int32_t*>(dev_alloc(size_t(batch) * sizeof(int32_t)));
  CK(cudaMemcpy(dev_seq, seq_lengths.data(), size_t(batch) * sizeof(int32_t), cudaMemcpyHostToDevice));
  CK(cudnnRNNForward(handle, rnn, CUDNN_FWD_MODE_TRAINING, dev_seq, rx_desc, rx, ry_desc, ry, h_desc, hx, hy, c_desc,
                     cx, cy, weight_size, weights, rnn_ws_size, rnn_ws, rnn_reserve_size, rnn_reserve));

  // ---- CTC loss: T=20, N=2, C=10, labels of length 5 in device memory ----
  const int T = 20, N = 2, C = 10, label_len = 5;
  cudnnTensorDescriptor_t probs_desc = tensor({T, N, C});
  cudnnTensorDescriptor_t grads_desc = tensor({T, N, C});
  cudnnCTCLossDescriptor_t ctc = nullptr;
  CK(cudnnCreateCTCLossDescriptor(&ctc));
  CK(cudnnSetCTCLossDescriptor_v9(ctc, CUDNN_DATA_FLOAT, CUDNN_LOSS_NORMALIZATION_SOFTMAX,
                                  CUDNN_CTC_ZERO_OOB_GRADIENTS, label_len));
  size_t ctc_ws_size = 0;
  CK(cudnnGetCTCLossWorkspaceSize_v8(handle, CUDNN_CTC_LOSS_ALGO_DETERMINISTIC, ctc, probs_desc, grads_desc,
                                     &ctc_ws_size));
  void* ctc_ws = ctc_ws_size > 0 ? dev_alloc(ctc_ws_size) : nullptr;
  const std::vector<int> labels = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1};
  const std::vector<int> label_lengths = {label_len, label_len};
  const std::vector<int> input_lengths = {T, T};
  auto* dev_labels = static_cast<int*>(dev_alloc(labels.size() * sizeof(int)));
  auto* dev_label_lengths = static_cast<int*>(dev_alloc(label_lengths.size() * sizeof(int)));
  auto* dev_input_lengths = static_cast<int*>(dev_alloc(input_lengths.size() * sizeof(int)));
  CK(cudaMemcpy(dev_labels, labels.data(), labels.size() * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dev_label_lengths, label_lengths.data(), label_lengths.size() * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dev_input_lengths, input_lengths.data(), input_lengths.size() * sizeof(int), cudaMemcpyHostToDevice));
  const size_t probs_bytes = size_t(T) * N * C * sizeof(float);
  void* probs = dev_alloc(probs_bytes);
  void* grads = dev_alloc(probs_bytes);
  void* costs = dev_alloc(size_t(N) * sizeof(float));
  CK(cudnnCTCLoss_v8(handle, CUDNN_CTC_LOSS_ALGO_DETERMINISTIC, ctc, probs_desc, probs, dev_labels, dev_label_lengths,
                     dev_input_lengths, costs, grads_desc, grads, ctc_ws_size, ctc_ws));

  // ---- spatial transformer, bilinear, [2,3,8,8] ----
  const int st_dims[4] = {2, 3, 8, 8};
  cudnnSpatialTransformerDescriptor_t st = nullptr;
  CK(cudnnCreateSpatialTransformerDescriptor(&st));
  CK(cudnnSetSpatialTransformerNdDescriptor(st, CUDNN_SAMPLER_BILINEAR, CUDNN_DATA_FLOAT, 4, st_dims));
  cudnnTensorDescriptor_t st_x_desc = tensor({2, 3, 8, 8});
  cudnnTensorDescriptor_t st_y_desc = tensor({2, 3, 8, 8});
  void* theta = dev_alloc(size_t(2) * 2 * 3 * sizeof(float));
  void* grid = dev_alloc(size_t(2) * 8 * 8 * 2 * sizeof(float));
  void* st_x = dev_alloc(size_t(2) * 3 * 8 * 8 * sizeof(float));
  void* st_y = dev_alloc(size_t(2) * 3 * 8 * 8 * sizeof(float));
  CK(cudnnSpatialTfGridGeneratorForward(handle, st, theta, grid));
  CK(cudnnSpatialTfSamplerForward(handle, st, &one, st_x_desc, st_x, grid, &zero, st_y_desc, st_y));

  CK(cudaDeviceSynchronize());

  // ---- teardown ----
  CK(cudnnDestroySpatialTransformerDescriptor(st));
  CK(cudnnDestroyTensorDescriptor(st_x_desc));
  CK(cudnnDestroyTensorDescriptor(st_y_desc));
  CK(cudnnDestroyCTCLossDescriptor(ctc));
  CK(cudnnDestroyTensorDescriptor(probs_desc));
  CK(cudnnDestroyTensorDescriptor(grads_desc));
  CK(cudnnDestroyRNNDataDescriptor(rx_desc));
  CK(cudnnDestroyRNNDataDescriptor(ry_desc));
  CK(cudnnDestroyTensorDescriptor(h_desc));
  CK(cudnnDestroyTensorDescriptor(c_desc));
  CK(cudnnDestroyRNNDescriptor(rnn));
  CK(cudnnDestroyDropoutDescriptor(dropout));
  CK(cudnnDestroyPoolingDescriptor(pool));
  CK(cudnnDestroyTensorDescriptor(pooled_desc));
  CK(cudnnDestroyTensorDescriptor(bn_desc));
  CK(cudnnDestroyConvolutionDescriptor(conv));
  CK(cudnnDestroyFilterDescriptor(w_desc));
  CK(cudnnDestroyTensorDescriptor(x_desc));
  CK(cudnnDestroyTensorDescriptor(y_desc));
  for (void* p : {x, y, w, dx, dy, dw, find_ws, scale, bias, run_mean, run_var, save_mean, save_inv_var, dscale, dbias,
                  pooled, rx, ry, hx, hy, cx, cy, static_cast<void*>(dev_seq), probs, grads, costs,
                  static_cast<void*>(dev_labels), static_cast<void*>(dev_label_lengths),
                  static_cast<void*>(dev_input_lengths), theta, grid, st_x, st_y})
    CK(cudaFree(p));
  for (void* p : {bn_ws, bn_reserve, bn_bwd_ws, states, weights, rnn_ws, rnn_reserve, ctc_ws})
    if (p != nullptr) CK(cudaFree(p));
  CK(cudnnDestroy(handle));
  CK(cudaStreamDestroy(stream));
  std::printf("legacy done\n");
  return 0;
}
