// One table of names per enum (a rule's causes, ...): the name is what the evidence carries and what
// rules/<id>.json keys its fixes by; the enum is what the code compares.
#pragma once

#include <cstddef>
#include <utility>

namespace cuprobe::analysis {

template <typename E, size_t N>
const char* name_in(const std::pair<E, const char*> (&table)[N], E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "";
}

}  // namespace cuprobe::analysis
