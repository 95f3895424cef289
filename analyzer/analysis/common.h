// Helpers the rules share: naming processes and problems, shares and time units.
#pragma once

#include <string>

#include <fmt/format.h>

#include "analysis/facts.h"

namespace cuprobe::analysis {

inline std::string process_label(const ProcessFacts& p) {
  std::string s = fmt::format("pid {}", p.pid);
  if (p.rank >= 0) s += fmt::format(" rank {}", p.rank);
  if (!p.host.empty()) s += " on " + p.host;
  return s;
}

inline double span_s(const ProcessFacts& p) { return p.last_ns > p.first_ns ? double(p.last_ns - p.first_ns) / 1e9 : 0; }

inline double seconds(uint64_t ns) { return double(ns) / 1e9; }

inline std::string device_name(const ProcessFacts& p, int device) {
  if (p.trace == nullptr) return fmt::format("device {}", device);
  auto it = p.trace->devices().find(device);
  return it == p.trace->devices().end() ? fmt::format("device {}", device)
                                        : fmt::format("device {} ({})", device, it->second.name);
}

}  // namespace cuprobe::analysis
