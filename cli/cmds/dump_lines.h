// The JSON Lines `cuprobe dump` writes about a process, shared with `cuprobe facts`.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "trace/reader.h"

namespace cuprobe::cli {

// Every line dump writes for the process but its calls and searches: process, APIs, problems,
// fault rules, modules, stacks (native frames symbolized here unless `symbols` is false, from
// `symbol_dirs` too), counts, pins, crashes.
void write_process_lines(const reader::Trace& t, FILE* out, const std::vector<std::string>& symbol_dirs, bool symbols);

}  // namespace cuprobe::cli
