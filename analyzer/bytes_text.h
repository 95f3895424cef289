// Byte counts as cuprobe prints them everywhere ("3.1 MiB", "80.00 GiB", "512 B").
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace cuprobe {

inline std::string human_bytes(uint64_t n) {
  if (n >= (1ull << 30)) return fmt::format("{:.2f} GiB", double(n) / double(1ull << 30));
  if (n >= (1ull << 20)) return fmt::format("{:.1f} MiB", double(n) / double(1ull << 20));
  if (n >= (1ull << 10)) return fmt::format("{:.1f} KiB", double(n) / double(1ull << 10));
  return fmt::format("{} B", n);
}

}  // namespace cuprobe
