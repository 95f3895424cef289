// Helpers for tests that run real programs under the shim: spawn with extra environment,
// capture output, record through `cuprobe record`, and read the result back as `cuprobe dump`
// JSON lines or through the reader library.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace cuprobe::test {

using Env = std::vector<std::pair<std::string, std::string>>;

struct RunResult {
  int status = -1;  // exit code, or 128+signal
  std::string out;
  std::string err;
};

// Runs argv to completion with `env` added to this process's environment.
RunResult run(const std::vector<std::string>& argv, const Env& env = {});

// A child whose stdout is a pipe, for tests that act while it runs.
struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  std::string read_line(int timeout_ms);  // "" on timeout or EOF
  int wait();                             // exit code, or 128+signal
};
Child spawn(const std::vector<std::string>& argv, const Env& env = {});

std::string build_path(const std::string& relative);  // relative to the build tree's root
std::string program(const std::string& name);         // a test program's path
std::string cuprobe_bin();                            // bin/cuprobe
std::string shim_file();                              // lib/cuprobe/libcuprobe.so (or the configured libdir)
std::string fake_dir(char flavor);                    // directory of a CUDA runtime double ('a', 'b')
std::string shim_preload();                           // LD_PRELOAD value that loads the shim
std::string fresh_dir(const std::string& tag);  // an empty, unique directory under the test tmp

// Environment every shim test needs (the sanitizer runtime first in LD_PRELOAD when the build
// is sanitized), plus `extra`.
Env shim_env(const Env& extra = {});

// `cuprobe record -o DIR [opts] -- argv...`
RunResult record(const std::string& dir, const std::vector<std::string>& argv, const Env& env = {},
                 const std::vector<std::string>& opts = {});

// `cuprobe dump PATH` parsed line by line (fails the test on a line that is not JSON).
std::vector<nlohmann::json> dump(const std::string& path, const std::vector<std::string>& opts = {});

// `cuprobe analyze --json PATHS...` parsed (fails the test when it does not run or is not JSON;
// findings, exit status 1, are not a failure).
// `cuprobe analyze --json [options] PATHS...`.
nlohmann::json analyze_json(const std::vector<std::string>& paths, const std::vector<std::string>& options = {});

// Lines of one type ("process", "call", "count", "crash"), optionally of one API. "call" is the
// program's own calls; "sample" the memory samples the shim took itself (call lines with
// "sample": true).
std::vector<nlohmann::json> of_type(const std::vector<nlohmann::json>& lines, const std::string& type,
                                    const std::string& api = "");

}  // namespace cuprobe::test
