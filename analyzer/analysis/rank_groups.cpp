// Processes grouped by what they have in common; see rank_groups.h.
#include "analysis/rank_groups.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include "analysis/common.h"
#include "analysis/trackers/config.h"
#include "bytes_text.h"

namespace cuprobe::analysis {

using nlohmann::json;

namespace {

// What must be the same for two processes to look alike, and the numbers that may differ a little.
struct Look {
  std::string program, state, gpu;
  int64_t cudnn = -1, cuda = -1;
  size_t searches = 0;
  std::map<uint64_t, std::string> plans;  // problem hash -> the plans it ran with
  std::set<int> devices;
  uint64_t events = 0;
  double duration_s = 0;
  std::map<int, uint64_t> peak;  // by device

  std::string key() const {
    std::string k = fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", program, state, gpu, cudnn, cuda, searches);
    for (const auto& [h, p] : plans) k += fmt::format("\x1f{:x}={}", h, p);
    for (int d : devices) k += fmt::format("\x1e{}", d);
    return k;
  }
};

Look look_of(const ProcessFacts& p, const json& j) {
  Look l;
  l.program = j.value("program", "");
  l.state = j.value("state", "");
  l.gpu = p.config.gpu;
  l.cudnn = p.config.cudnn;
  l.cuda = p.config.cuda_runtime;
  l.searches = p.searches.size();
  for (const auto& [hash, use] : p.problems) {
    std::string plans;
    for (const auto& u : use.plans) plans += (plans.empty() ? "" : " then ") + u.plan;
    l.plans[hash] = plans;
  }
  for (const auto& [d, m] : p.memory) {
    l.devices.insert(d);
    l.peak[d] = m.peak;
  }
  l.events = p.events;
  l.duration_s = j.value("duration_s", 0.0);
  return l;
}

template <class T>
T median(std::vector<T> v) {
  if (v.empty()) return T{};
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// What a group's members have in common, and the spread of what may differ.
struct Typical {
  const Look* look = nullptr;  // a member: the categorical fields are the group's
  uint64_t events = 0;
  double duration_s = 0;
  std::map<int, uint64_t> peak;
};

// What makes `l` differ from the group, in words; empty when it looks alike.
std::vector<std::string> differences(const Look& l, const Typical& t) {
  std::vector<std::string> d;
  const Look& g = *t.look;
  if (l.program != g.program) d.push_back(fmt::format("runs {} (others: {})", l.program, g.program));
  if (l.state != g.state) d.push_back(fmt::format("ended {} (others: {})", l.state, g.state));
  if (l.gpu != g.gpu) d.push_back(fmt::format("GPU {} (others: {})", l.gpu.empty() ? "unknown" : l.gpu, g.gpu));
  if (l.cudnn != g.cudnn)
    d.push_back(fmt::format("cuDNN {} (others: {})", cudnn_version_text(l.cudnn), cudnn_version_text(g.cudnn)));
  if (l.cuda != g.cuda)
    d.push_back(fmt::format("CUDA runtime {} (others: {})", cuda_version_text(l.cuda), cuda_version_text(g.cuda)));
  if (l.searches != g.searches) d.push_back(fmt::format("{} searches (others: {})", l.searches, g.searches));
  size_t other_plans = 0, own = 0, missing = 0;
  for (const auto& [h, p] : l.plans) {
    auto it = g.plans.find(h);
    if (it == g.plans.end()) {
      ++own;
    } else if (it->second != p) {
      ++other_plans;
    }
  }
  for (const auto& [h, p] : g.plans) missing += l.plans.count(h) ? 0 : 1;
  if (other_plans)
    d.push_back(
        fmt::format("{} problem{} ran with other plans than the others'", other_plans, other_plans == 1 ? "" : "s"));
  if (own) d.push_back(fmt::format("{} problem{} the others did not have", own, own == 1 ? "" : "s"));
  if (missing) d.push_back(fmt::format("{} of the others' problem{} not run", missing, missing == 1 ? "" : "s"));
  if (l.devices != g.devices) {
    auto list = [](const std::set<int>& s) {
      std::string out;
      for (int x : s) out += fmt::format("{}{}", out.empty() ? "" : ",", x);
      return out.empty() ? std::string("none") : out;
    };
    d.push_back(fmt::format("memory on device {} (others: {})", list(l.devices), list(g.devices)));
  }
  // Numbers: a tenth off for calls and memory (memory at least 64 MiB off), a quarter and a
  // second off for the process's time.
  auto off = [](double v, double typical, double rel, double abs) {
    return std::fabs(v - typical) > std::max(rel * typical, abs);
  };
  if (off(double(l.events), double(t.events), 0.1, 100)) {
    d.push_back(fmt::format("{} events (others: {})", l.events, t.events));
  }
  if (off(l.duration_s, t.duration_s, 0.25, 1.0)) {
    d.push_back(fmt::format("ran {} (others: {})", seconds_text(l.duration_s), seconds_text(t.duration_s)));
  }
  for (const auto& [dev, peak] : l.peak) {
    auto it = t.peak.find(dev);
    if (it != t.peak.end() && off(double(peak), double(it->second), 0.1, double(64ull << 20))) {
      d.push_back(fmt::format("device {} peak {} (others: {})", dev, human_bytes(peak), human_bytes(it->second)));
    }
  }
  return d;
}

}  // namespace

std::string rank_ranges(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + (j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    i = j + 1;
  }
  return out;
}

json rank_groups(const std::vector<ProcessFacts>& processes, const json& per_process) {
  std::vector<size_t> listed;
  for (size_t i = 0; i < processes.size(); ++i) {
    if (!per_process[i].value("launcher", false)) listed.push_back(i);
  }
  if (listed.size() < kGroupFrom) return nullptr;
  std::vector<Look> looks(processes.size());
  std::map<std::string, std::vector<size_t>> by_key;
  for (size_t i : listed) {
    looks[i] = look_of(processes[i], per_process[i]);
    by_key[looks[i].key()].push_back(i);
  }
  std::vector<std::vector<size_t>> clusters;
  for (auto& [k, members] : by_key) clusters.push_back(std::move(members));
  std::stable_sort(clusters.begin(), clusters.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  // Groups: clusters of at least 4 processes and 2% of them (the largest always), at most 4.
  const size_t least = std::max<size_t>(4, (listed.size() + 49) / 50);
  size_t n_groups = 1;
  while (n_groups < clusters.size() && n_groups < 4 && clusters[n_groups].size() >= least) ++n_groups;

  std::vector<Typical> typical(n_groups);
  for (size_t g = 0; g < n_groups; ++g) {
    const auto& members = clusters[g];
    typical[g].look = &looks[members.front()];
    std::vector<uint64_t> events;
    std::vector<double> durations;
    std::map<int, std::vector<uint64_t>> peaks;
    for (size_t i : members) {
      events.push_back(looks[i].events);
      durations.push_back(looks[i].duration_s);
      for (const auto& [d, p] : looks[i].peak) peaks[d].push_back(p);
    }
    typical[g].events = median(events);
    typical[g].duration_s = median(durations);
    for (auto& [d, v] : peaks) typical[g].peak[d] = median(v);
  }

  json groups = json::array();
  json outliers = json::array();
  auto outlier = [&](size_t i, size_t g, std::vector<std::string> why) {
    const json& p = per_process[i];
    outliers.push_back({{"pid", p["pid"]},
                        {"rank", p["rank"]},
                        {"host", p["host"]},
                        {"label", p["label"]},
                        {"group", g},
                        {"differs", why}});
  };
  for (size_t g = 0; g < n_groups; ++g) {
    std::vector<int> ranks;
    std::set<std::string> hosts;
    json pids = json::array();
    std::vector<uint64_t> events;
    std::vector<double> durations;
    std::map<int, std::vector<uint64_t>> peaks;
    size_t unranked = 0;
    for (size_t i : clusters[g]) {
      std::vector<std::string> why = differences(looks[i], typical[g]);
      if (!why.empty()) {
        outlier(i, g, std::move(why));
        continue;
      }
      const ProcessFacts& p = processes[i];
      if (p.rank >= 0) {
        ranks.push_back(p.rank);
      } else {
        ++unranked;
      }
      hosts.insert(p.host);
      pids.push_back(p.pid);
      events.push_back(looks[i].events);
      durations.push_back(looks[i].duration_s);
      for (const auto& [d, v] : looks[i].peak) peaks[d].push_back(v);
    }
    const Look& l = *typical[g].look;
    json memory = json::array();
    for (auto& [d, v] : peaks) {
      memory.push_back({{"device", d},
                        {"peak_min", *std::min_element(v.begin(), v.end())},
                        {"peak_median", median(v)},
                        {"peak_max", *std::max_element(v.begin(), v.end())}});
    }
    auto spread = [](const auto& v) {
      return v.empty() ? json(nullptr)
                       : json{{"min", *std::min_element(v.begin(), v.end())},
                              {"median", median(v)},
                              {"max", *std::max_element(v.begin(), v.end())}};
    };
    groups.push_back({{"count", pids.size()},
                      {"ranks", rank_ranges(ranks)},
                      {"unranked", unranked},
                      {"hosts", hosts.size()},
                      {"pids", pids},
                      {"program", l.program},
                      {"state", l.state},
                      {"gpu", l.gpu},
                      {"cudnn", l.cudnn},
                      {"cuda_runtime", l.cuda},
                      {"searches", l.searches},
                      {"problems", l.plans.size()},
                      {"events", spread(events)},
                      {"duration_s", spread(durations)},
                      {"memory", memory}});
  }
  // Clusters too small to be groups: each process an outlier, against the largest group.
  for (size_t c = n_groups; c < clusters.size(); ++c) {
    for (size_t i : clusters[c]) outlier(i, 0, differences(looks[i], typical[0]));
  }
  return {{"processes", listed.size()}, {"groups", groups}, {"outliers", outliers}};
}

}  // namespace cuprobe::analysis
