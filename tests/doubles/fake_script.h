// What the CUDA test doubles share: the scripted failures of FAKECUDA_FAIL, parsed against the
// shim's API table so that a script names calls exactly as traces do.
//
//   FAKECUDA_FAIL=API:CODE[:NTH[:TIMES]],...
//       the NTH call (1-based, default 1) of API and the TIMES-1 calls after it (default 1)
//       return CODE without doing anything; an API another double defines is ignored here.
// Header-only: each double is its own shared object and keeps its own copy.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "api.h"

namespace fake {

struct Script {
  int code;
  uint64_t nth;
  uint64_t times;
};

inline int api_by_name(const std::string& name) {
  for (int i = 0; i < cuprobe::kApiCount; ++i) {
    if (name == cuprobe::kApis[i].name) return i;
  }
  return -1;
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// FAKECUDA_FAIL's scripts, one list per API of the shim's table.
inline void parse_fail_scripts(const char* text, std::vector<Script>* fail) {
  if (text == nullptr) return;
  for (const auto& item : split(text, ',')) {
    auto parts = split(item, ':');
    int id = parts.size() >= 2 ? api_by_name(parts[0]) : -1;
    if (id < 0) continue;
    fail[id].push_back(Script{std::atoi(parts[1].c_str()),
                              parts.size() > 2 ? std::strtoull(parts[2].c_str(), nullptr, 10) : 1,
                              parts.size() > 3 ? std::strtoull(parts[3].c_str(), nullptr, 10) : 1});
  }
}

// The scripted code for the `n`-th call (1-based) of an API, 0 when it behaves normally.
inline int scripted_code(const std::vector<Script>& scripts, uint64_t n) {
  for (const Script& sc : scripts) {
    if (n >= sc.nth && n < sc.nth + sc.times) return sc.code;
  }
  return 0;
}

}  // namespace fake
