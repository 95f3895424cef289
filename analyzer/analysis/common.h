// Helpers the rules share: naming processes and problems, shares and time units.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/facts.h"
#include "bytes_text.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {

// How reports name a process: "rank 3 (pid 1234 on host gpu0)" when its rank is known (from the
// launcher's variables or its NCCL communicator), else "pid 1234 on host gpu0 (cuda:0)", with the
// device most of its calls ran on: a process of a job whose launcher set no rank (issue 13) is
// still told apart from its siblings by something that means more than a pid.
inline std::string process_label(const ProcessFacts& p) {
  std::string where = fmt::format("pid {}", p.pid);
  if (!p.host.empty()) where += " on host " + p.host;
  if (p.rank >= 0) return fmt::format("rank {} ({})", p.rank, where);
  if (p.device >= 0) where += fmt::format(" (cuda:{})", p.device);
  return where;
}

// The order reports list processes in, the same for every run of a job: ranked processes by
// rank, then those without a rank by host, device and pid.
inline bool process_before(const ProcessFacts& a, const ProcessFacts& b) {
  bool ra = a.rank >= 0, rb = b.rank >= 0;
  if (ra != rb) return ra;
  if (ra && a.rank != b.rank) return a.rank < b.rank;
  if (a.host != b.host) return a.host < b.host;
  if (a.device != b.device) return a.device < b.device;
  return a.pid < b.pid;
}

// The job's wall time: from its first work (job_start_ns), not the process's start-up.
inline double span_s(const ProcessFacts& p) {
  return p.last_ns > p.job_start_ns ? double(p.last_ns - p.job_start_ns) / 1e9 : 0;
}
// A time of process p as seconds into its job (0 before the job began).
inline double job_s(const ProcessFacts& p, uint64_t ts_ns) {
  return ts_ns > p.job_start_ns ? double(ts_ns - p.job_start_ns) / 1e9 : 0;
}

inline double seconds(uint64_t ns) { return double(ns) / 1e9; }
// A duration as reports print it: "2.3 min", "1.25 s", "12.5 ms".
inline std::string seconds_text(double s) {
  if (s >= 60) return fmt::format("{:.1f} min", s / 60);
  if (s >= 1) return fmt::format("{:.2f} s", s);
  return fmt::format("{:.1f} ms", s * 1e3);
}

// What of its run a process's trace holds, when the flight recorder overwrote routine calls or a
// capture window left them out (docs/flight-recorder.md); "" when it holds every call. Times are
// seconds since the process started tracing.
// Seconds since the process started tracing (the times coverage is told in).
inline double since_trace_start(const reader::Trace& t, uint64_t ns) {
  return ns > t.start_ns() ? double(ns - t.start_ns()) / 1e9 : 0.0;
}

inline std::string coverage_text(const ProcessFacts& p) {
  if (p.trace == nullptr) return "";
  const reader::Coverage& c = p.trace->coverage();
  if (!c.partial()) return "";
  auto at = [&](uint64_t ns) { return since_trace_start(*p.trace, ns); };
  std::string text;
  if (c.overwritten()) {
    text = fmt::format("routine calls (executions, copies, synchronizations) only from {:.2f} s of its {:.2f} s on: the "
                       "flight recorder kept the last {} of them and overwrote {} calls",
                       at(c.overwritten_last_ns), at(p.last_ns), human_bytes(c.ring_bytes), c.overwritten_calls);
    if (c.overwritten_counted) text += fmt::format(" and the counts of {} kernel launches and queries", c.overwritten_counted);
  }
  if (c.window) {
    if (!text.empty()) text += "; ";
    std::string when;
    if (c.window_lo_ns != 0 && c.window_hi_ns != UINT64_MAX) {
      when = fmt::format("from {:.2f} s to {:.2f} s", at(c.window_lo_ns), at(c.window_hi_ns));
    } else if (c.window_lo_ns != 0) {
      when = fmt::format("from {:.2f} s on", at(c.window_lo_ns));
    } else if (c.window_hi_ns != UINT64_MAX) {
      when = fmt::format("until {:.2f} s", at(c.window_hi_ns));
    }
    if (!c.window_marker.empty()) {
      text += fmt::format("routine calls only while an NVTX range \"{}\" was open{}{} (capture window, opened {} time{})",
                          c.window_marker, when.empty() ? "" : " and ", when, c.window_marker_opens,
                          c.window_marker_opens == 1 ? "" : "s");
    } else {
      text += fmt::format("routine calls only {} (capture window)", when);
    }
    if (c.outside_window_calls) text += fmt::format(", {} outside it not recorded", c.outside_window_calls);
  }
  return text + "; searches, plan selections, failures and allocations cover the whole run";
}

// Where the last half of the job begins: its middle step when at least four steps are known,
// else the middle of its time (from its first CUDA/cuDNN work to the end of its last call).
inline uint64_t last_half_start(const ProcessFacts& p) {
  if (p.step_starts.size() >= 4) return p.step_starts[p.step_starts.size() / 2];
  uint64_t start = p.job_start_ns ? p.job_start_ns : p.first_ns;
  return p.last_ns > start ? start + (p.last_ns - start) / 2 : start;
}

// A library version the shim recorded (trace::Property::kLibraryVersion: "torch", "nccl",
// "nvidia_driver"), "" when the trace has none (older traces, a job without that library).
inline std::string library_version(const ProcessFacts& p, const std::string& name) {
  if (p.trace == nullptr) return "";
  const auto& v = p.trace->process().library_versions;
  auto it = v.find(name);
  return it == v.end() ? std::string() : it->second;
}

inline std::string device_name(const ProcessFacts& p, int device) {
  if (p.trace == nullptr) return fmt::format("device {}", device);
  auto it = p.trace->devices().find(device);
  return it == p.trace->devices().end() ? fmt::format("device {}", device)
                                        : fmt::format("device {} ({})", device, it->second.name);
}

// Where a stack of process p points in the application: its innermost Python frame (the script's
// line) and its innermost native frames, symbolized offline; empty without a stack.
inline std::vector<std::string> stack_sites(const AllFacts& all, const ProcessFacts& p, reader::StackId stack,
                                            size_t python = 1, size_t native = 2) {
  if (stack == 0 || p.trace == nullptr || all.symbols == nullptr) return {};
  return all.symbols->describe(*p.trace, stack, python, native);
}

// The call sites the most items came from: "N <what>: <site> < <caller>" for the top `top`
// stacks. `each`: how many items each stack stands for (a sample of one in `each`: "about N").
inline std::vector<std::string> top_sites(const AllFacts& all, const ProcessFacts& p,
                                          const std::vector<reader::StackId>& stacks, const std::string& what,
                                          size_t top = 3, uint64_t each = 1) {
  std::map<std::string, size_t> by_site;
  for (reader::StackId s : stacks) {
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
  for (size_t i = 0; i < order.size() && i < top; ++i) {
    out.push_back(fmt::format("{}{} {}: {}", each > 1 ? "about " : "", order[i].first * each, what, order[i].second));
  }
  return out;
}

}  // namespace cuprobe::analysis
