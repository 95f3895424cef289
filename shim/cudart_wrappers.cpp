// The exported CUDA runtime wrappers and their argument-field table, expanded from
// cudart_hooks.h. Each wrapper's type is checked against cuda_runtime_api.h here.
#include <cuda_runtime_api.h>

#include <type_traits>

#include "capture_cudart.h"
#include "hook.h"

namespace cuprobe::shim {

#define CUPROBE_CUDART_WRAPPER(ret, name, sig, params, args, flags)                                        \
  static_assert(std::is_same_v<decltype(&::sig), ret(*) params>,                                           \
                "cudart_hooks.h: " #name " does not match the declaration of " #sig " in cuda_runtime_api.h"); \
  CUPROBE_EXPORT ret name params CUPROBE_WRAPPER_BODY(name, sig, args)
CUPROBE_CUDART_HOOKS(CUPROBE_CUDART_WRAPPER)
#undef CUPROBE_CUDART_WRAPPER

#define CUPROBE_CUDART_FIELDS(ret, name, sig, params, args, flags) \
  g_api_fields[int(ApiId::name)] = Capture<ApiId::sig>::kFields;
void register_cudart_fields() { CUPROBE_CUDART_HOOKS(CUPROBE_CUDART_FIELDS) }
#undef CUPROBE_CUDART_FIELDS

}  // namespace cuprobe::shim
