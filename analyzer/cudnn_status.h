// cuDNN status codes by name, for text people read: every value of cudnnStatus_t in cuDNN 9's
// cudnn_graph.h (9.19, through common/error_names.h), so that no cuDNN header is needed to print one.
#pragma once

#include <string>

#include <fmt/format.h>

#include "error_names.h"

namespace cuprobe {

// "CUDNN_STATUS_NOT_SUPPORTED" for 3000; nullptr for a value cudnn_graph.h does not define. From
// common/error_names.h (generated from the header): the first name of a value, so a deprecated
// alias gives way to the name it aliases; 2001 (CUDNN_STATUS_INVALID_VALUE) has no other name.
inline const char* cudnn_status_name(int status) {
  for (const auto& e : errors::kCudnnStatuses) {
    if (e.code == status) return e.name;
  }
  return nullptr;
}

// For text: "CUDNN_STATUS_NOT_SUPPORTED (3000)", or just the number when it has no name.
inline std::string cudnn_status_text(int status) {
  const char* name = cudnn_status_name(status);
  return name ? fmt::format("{} ({})", name, status) : std::to_string(status);
}

}  // namespace cuprobe
