// Who asked for device memory: owner_of and owners_text (facts.h).
#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "analysis/facts.h"

namespace cuprobe::analysis {

namespace {

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Modules whose frames are the CUDA libraries or cuprobe itself, never an owner.
bool plumbing(const std::string& base) {
  return base.rfind("libcuprobe", 0) == 0 || base.rfind("libcudart", 0) == 0 || base.rfind("libcuda.so", 0) == 0;
}

std::string owner_from_module(const std::string& base, const reader::Api& api) {
  if (base.rfind("libc10_cuda", 0) == 0) {
    if (api.flags & (trace::kApiPhysical | trace::kApiVaReserve)) return "PyTorch caching allocator (expandable segments)";
    // A stream-ordered pool's allocation: PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync.
    if (api.flags & trace::kApiPooled) return "PyTorch (cudaMallocAsync backend)";
    return "PyTorch caching allocator";
  }
  if (base.rfind("libnccl", 0) == 0) return "NCCL";
  if (base.rfind("libcublas", 0) == 0) return "cuBLAS";
  if (base.rfind("libcudnn", 0) == 0) return "cuDNN";
  if (base.rfind("libtorch", 0) == 0) return "PyTorch";
  return base;
}

}  // namespace

std::string owners_text(const std::map<std::string, uint64_t>& bytes_by_owner) {
  std::vector<std::pair<uint64_t, std::string>> owners;
  for (const auto& [owner, bytes] : bytes_by_owner) {
    if (bytes != 0) owners.emplace_back(bytes, owner);
  }
  std::sort(owners.rbegin(), owners.rend());
  std::string text;
  for (const auto& [bytes, owner] : owners) text += fmt::format("{}{} {}", text.empty() ? "" : ", ", owner, human_bytes(bytes));
  return text;
}

std::string owner_of(const reader::Trace& trace, const reader::Api& api, uint64_t caller, reader::StackId stack) {
  if (caller != 0) {
    if (const reader::Module* m = trace.module_of(caller)) {
      std::string base = base_name(m->path);
      if (!plumbing(base)) return owner_from_module(base, api);
    }
  }
  if (const reader::Stack* st = stack ? trace.stack(stack) : nullptr) {
    for (uint64_t pc : st->pcs) {
      const reader::Module* m = trace.module_of(pc);
      if (m == nullptr) continue;
      std::string base = base_name(m->path);
      if (!plumbing(base)) return owner_from_module(base, api);
    }
  }
  return "unknown";
}

}  // namespace cuprobe::analysis
