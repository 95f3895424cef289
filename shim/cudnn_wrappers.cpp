// The exported cuDNN wrappers and their argument-field table, expanded from cudnn_hooks.h. Each
// wrapper's type is checked against cuDNN 9's headers here.
#include <cudnn.h>

#include <type_traits>

#include "capture_cudnn.h"
#include "hook.h"

namespace cuprobe::shim {

#define CUPROBE_CUDNN_WRAPPER(ret, name, sig, params, args, flags)                                    \
  static_assert(std::is_same_v<decltype(&::sig), ret(*) params>,                                      \
                "cudnn_hooks.h: " #name " does not match the declaration of " #sig " in cuDNN 9"); \
  CUPROBE_EXPORT ret name params CUPROBE_WRAPPER_BODY(name, sig, args)
CUPROBE_CUDNN_HOOKS(CUPROBE_CUDNN_WRAPPER)
#undef CUPROBE_CUDNN_WRAPPER

#define CUPROBE_CUDNN_FIELDS(ret, name, sig, params, args, flags) \
  g_api_fields[int(ApiId::name)] = Capture<ApiId::sig>::kFields;
void register_cudnn_fields() { CUPROBE_CUDNN_HOOKS(CUPROBE_CUDNN_FIELDS) }
#undef CUPROBE_CUDNN_FIELDS

}  // namespace cuprobe::shim
