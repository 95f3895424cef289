// cuDNN status codes by name, for text people read: every value of cudnnStatus_t in cuDNN 9's
// cudnn_graph.h (9.19), so that no cuDNN header is needed to print one.
#pragma once

#include <string>

#include <fmt/format.h>

namespace cuprobe {

// "CUDNN_STATUS_NOT_SUPPORTED" for 3000; nullptr for a value cudnn_graph.h does not define.
// Deprecated aliases share their value with the name they alias, which is the one given here;
// 2001 (CUDNN_STATUS_INVALID_VALUE) has no other name.
inline const char* cudnn_status_name(int status) {
  switch (status) {
    case 0: return "CUDNN_STATUS_SUCCESS";
    case 1001: return "CUDNN_STATUS_NOT_INITIALIZED";
    case 1002: return "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH";
    case 1003: return "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH";
    case 1004: return "CUDNN_STATUS_DEPRECATED";
    case 1005: return "CUDNN_STATUS_LICENSE_ERROR";
    case 1006: return "CUDNN_STATUS_RUNTIME_IN_PROGRESS";
    case 1007: return "CUDNN_STATUS_RUNTIME_FP_OVERFLOW";
    case 1008: return "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED";
    case 2000: return "CUDNN_STATUS_BAD_PARAM";
    case 2001: return "CUDNN_STATUS_INVALID_VALUE";
    case 2002: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case 2003: return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case 2004: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case 2005: return "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND";
    case 2006: return "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT";
    case 2007: return "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH";
    case 2008: return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
    case 2009: return "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES";
    case 2010: return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
    case 2011: return "CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH";
    case 2012: return "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE";
    case 3000: return "CUDNN_STATUS_NOT_SUPPORTED";
    case 3001: return "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN";
    case 3002: return "CUDNN_STATUS_NOT_SUPPORTED_SHAPE";
    case 3003: return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
    case 3004: return "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT";
    case 3005: return "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER";
    case 3006: return "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART";
    case 3007: return "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH";
    case 3008: return "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING";
    case 3009: return "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE";
    case 3010: return "CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT";
    case 3011: return "CUDNN_STATUS_NOT_SUPPORTED_PADDING";
    case 3012: return "CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM";
    case 3013: return "CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API";
    case 3014: return "CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE";
    case 4000: return "CUDNN_STATUS_INTERNAL_ERROR";
    case 4001: return "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED";
    case 4002: return "CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE";
    case 4003: return "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED";
    case 4004: return "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED";
    case 4005: return "CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM";
    case 4006: return "CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED";
    case 5000: return "CUDNN_STATUS_EXECUTION_FAILED";
    case 5001: return "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER";
    case 5002: return "CUDNN_STATUS_EXECUTION_FAILED_CUBLAS";
    case 5003: return "CUDNN_STATUS_EXECUTION_FAILED_CUDART";
    case 5004: return "CUDNN_STATUS_EXECUTION_FAILED_CURAND";
    default: return nullptr;
  }
}

// For text: "CUDNN_STATUS_NOT_SUPPORTED (3000)", or just the number when it has no name.
inline std::string cudnn_status_text(int status) {
  const char* name = cudnn_status_name(status);
  return name ? fmt::format("{} ({})", name, status) : std::to_string(status);
}

}  // namespace cuprobe
