// Helpers the rules share: naming processes and problems, shares and time units.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/facts.h"
#include "analysis/rules.h"

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

// Where a stack of process p points in the application: its innermost Python frame (the script's
// line) and its innermost native frames, symbolized offline; empty without a stack.
inline std::vector<std::string> stack_sites(const AllFacts& all, const ProcessFacts& p, uint32_t stack,
                                            size_t python = 1, size_t native = 2) {
  if (stack == 0 || p.trace == nullptr || all.symbols == nullptr) return {};
  return all.symbols->describe(*p.trace, stack, python, native);
}

// The call sites the most items came from: "N× at <site> < <caller>" for the top `top` stacks.
inline std::vector<std::string> top_sites(const AllFacts& all, const ProcessFacts& p, const std::vector<uint32_t>& stacks,
                                          const std::string& what, size_t top = 3) {
  std::map<std::string, size_t> by_site;
  for (uint32_t s : stacks) {
    std::vector<std::string> frames = stack_sites(all, p, s);
    if (frames.empty()) continue;
    std::string site = frames[0];
    for (size_t i = 1; i < frames.size(); ++i) site += " < " + frames[i];
    ++by_site[site];
  }
  std::vector<std::pair<size_t, std::string>> order;
  for (auto& [site, n] : by_site) order.emplace_back(n, site);
  std::sort(order.rbegin(), order.rend());
  std::vector<std::string> out;
  for (size_t i = 0; i < order.size() && i < top; ++i) out.push_back(fmt::format("{} {}: {}", order[i].first, what, order[i].second));
  return out;
}

}  // namespace cuprobe::analysis
