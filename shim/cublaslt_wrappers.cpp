// The exported cuBLASLt wrappers and their argument-field table, expanded from cublaslt_hooks.h
// (each wrapper's type checked against cublasLt.h, see cublaslt_abi.h).
#include <type_traits>

#include "capture_cublaslt.h"
#include "cublaslt_abi.h"
#include "hook.h"

namespace cuprobe::shim {

#define CUPROBE_CUBLASLT_WRAPPER(ret, name, sig, params, args, flags)                                \
  static_assert(std::is_same_v<decltype(&::sig), ret(*) params>,                                     \
                "cublaslt_hooks.h: " #name " does not match the declaration of " #sig " in cublasLt.h"); \
  CUPROBE_EXPORT ret name params CUPROBE_WRAPPER_BODY(name, sig, args)
CUPROBE_CUBLASLT_HOOKS(CUPROBE_CUBLASLT_WRAPPER)
#undef CUPROBE_CUBLASLT_WRAPPER

#define CUPROBE_CUBLASLT_FIELDS(ret, name, sig, params, args, flags) \
  g_api_fields[int(ApiId::name)] = Capture<ApiId::sig>::kFields;
void register_cublaslt_fields() { CUPROBE_CUBLASLT_HOOKS(CUPROBE_CUBLASLT_FIELDS) }
#undef CUPROBE_CUBLASLT_FIELDS

}  // namespace cuprobe::shim
