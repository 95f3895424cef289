// Which Python source files belong to installed packages or the standard library rather than to
// the application: the shim stops reading a stack's Python frames at the first application
// frame, and the report shows library paths from their package root. One definition for both.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace cuprobe {

inline constexpr size_t kNotLibrary = SIZE_MAX;

// Where the package-relative part of a library file's path starts ("torch/nn/functional.py" in
// ".../site-packages/torch/nn/functional.py" and in "/src/pytorch/torch/nn/functional.py");
// kNotLibrary for an application file.
inline size_t python_library_root(const char* file) {
  static const char* const kMarkers[] = {"/site-packages/", "/dist-packages/"};
  for (const char* marker : kMarkers) {
    if (const char* at = strstr(file, marker)) return size_t(at - file) + strlen(marker);
  }
  if (const char* lib = strstr(file, "/lib/python3")) {
    const char* slash = strchr(lib + 12, '/');
    return slash ? size_t(slash + 1 - file) : size_t(lib - file);
  }
  if (file[0] == '<') return 0;  // <frozen ...>, <string>
  // PyTorch from a source checkout (pip install -e, setup.py develop) is a library too: the
  // line a user can change is further out.
  if (strncmp(file, "torch/", 6) == 0) return 0;
  if (const char* torch = strstr(file, "/torch/")) return size_t(torch + 1 - file);
  return kNotLibrary;
}

}  // namespace cuprobe
