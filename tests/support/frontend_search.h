// What tests/programs/frontend_search prints: one "search conv_fwd batch=8 mode=benchmark
// winner_engine=5 candidates=1" line per plan selection (plan pinning and search budget tests).
#pragma once

#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace cuprobe::test {

struct Pick {
  std::string kind;
  int batch, winner, candidates;
};

inline std::vector<Pick> picks(const std::string& out) {
  std::vector<Pick> v;
  std::regex re(R"(search (\w+) batch=(\d+) mode=\w+ winner_engine=(-?\d+) candidates=(\d+))");
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, re)) v.push_back({m[1], std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])});
  }
  return v;
}

}  // namespace cuprobe::test
