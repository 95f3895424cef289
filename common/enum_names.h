// One table of names per enum (a rule's causes, a search's API and mode, ...): the name is what
// outputs, evidence and rules/<id>.json carry; the enum is what the code compares. Nothing else
// spells the names.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>

namespace cuprobe {

template <typename E, size_t N>
constexpr const char* name_in(const std::pair<E, const char*> (&table)[N], E value) {
  for (const auto& entry : table) {
    if (entry.first == value) return entry.second;
  }
  return "";
}

// The value named `name`, or false when the table has no such name.
template <typename E, size_t N>
constexpr bool value_in(const std::pair<E, const char*> (&table)[N], std::string_view name, E* value) {
  for (const auto& entry : table) {
    if (name == entry.second) {
      *value = entry.first;
      return true;
    }
  }
  return false;
}

// Tables that spell each value more than one way (entries {value, name, another name, ...}, as
// reader.h's kFileStateNames): `spelling` picks the member.
template <typename Entry, size_t N, typename E>
constexpr const char* name_in(const Entry (&table)[N], E value, const char* Entry::*spelling) {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.*spelling;
  }
  return "";
}

template <typename Entry, size_t N, typename E>
constexpr bool value_in(const Entry (&table)[N], std::string_view name, const char* Entry::*spelling, E* value) {
  for (const auto& entry : table) {
    if (name == entry.*spelling) {
      *value = entry.value;
      return true;
    }
  }
  return false;
}

}  // namespace cuprobe
