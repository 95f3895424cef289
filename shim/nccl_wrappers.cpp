// The exported NCCL wrappers and their argument-field table, expanded from nccl_hooks.h (each
// wrapper's type checked against nccl.h where it is installed, see nccl_abi.h), and the queries a
// split's capture and a comm-size fault rule make of the real library.
#include <type_traits>

#include "capture_nccl.h"
#include "hook.h"
#include "nccl_abi.h"

namespace cuprobe::shim {

#define CUPROBE_NCCL_WRAPPER(ret, name, sig, params, args, flags)                                 \
  static_assert(std::is_same_v<decltype(&::sig), ret(*) params>,                                  \
                "nccl_hooks.h: " #name " does not match the declaration of " #sig " in nccl.h"); \
  CUPROBE_EXPORT ret name params CUPROBE_WRAPPER_BODY(name, sig, args)
CUPROBE_NCCL_HOOKS(CUPROBE_NCCL_WRAPPER)
#undef CUPROBE_NCCL_WRAPPER

#define CUPROBE_NCCL_FIELDS(ret, name, sig, params, args, flags) \
  g_api_fields[int(ApiId::name)] = Capture<ApiId::sig>::kFields;
void register_nccl_fields() { CUPROBE_NCCL_HOOKS(CUPROBE_NCCL_FIELDS) }
#undef CUPROBE_NCCL_FIELDS

void split_result(ncclComm_t comm, int* nranks, int* rank) {
  using QueryFn = ncclResult_t (*)(const ncclComm_t, int*);
  static_assert(std::is_same_v<decltype(&::ncclCommCount), QueryFn>);
  static_assert(std::is_same_v<decltype(&::ncclCommUserRank), QueryFn>);
  // Never our own exports: the library's, from the copy the split went to (rare: no caching).
  auto count = reinterpret_cast<QueryFn>(resolve_in_library(trace::Library::kNccl, "ncclCommCount"));
  auto user_rank = reinterpret_cast<QueryFn>(resolve_in_library(trace::Library::kNccl, "ncclCommUserRank"));
  int n = -1, r = -1;
  if (count == nullptr || user_rank == nullptr) return;
  if (count(comm, &n) != ncclSuccess || user_rank(comm, &r) != ncclSuccess) return;
  *nranks = n;
  *rank = r;
}

int nccl_comm_size(const void* comm) {
  using CountFn = ncclResult_t (*)(const ncclComm_t, int*);
  static_assert(std::is_same_v<decltype(&::ncclCommCount), CountFn>);
  auto count = reinterpret_cast<CountFn>(resolve_in_library(trace::Library::kNccl, "ncclCommCount"));
  int n = -1;
  if (comm == nullptr || count == nullptr) return -1;
  if (count(static_cast<ncclComm_t>(const_cast<void*>(comm)), &n) != ncclSuccess) return -1;
  return n;
}

}  // namespace cuprobe::shim
