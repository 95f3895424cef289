// The JSON Lines `cuprobe dump` writes about a process, shared with `cuprobe facts`.
#pragma once

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "trace/reader.h"

namespace cuprobe::cli {

// Every line dump writes for the process but its calls and searches: process, APIs, problems,
// fault rules, modules, stacks (native frames symbolized here unless `symbols` is false, from
// `symbol_dirs` too), counts, pins, crashes. `apis`, when given: the only APIs whose lines are
// written (a facts file describes the APIs the process called; the table has hundreds).
void write_process_lines(const reader::Trace& t, FILE* out, const std::vector<std::string>& symbol_dirs, bool symbols,
                         const std::set<std::string>* apis = nullptr);

}  // namespace cuprobe::cli
