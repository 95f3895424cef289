// Shared pieces of the `cuprobe` command line: the subcommand signature, usage errors, and
// small helpers every subcommand uses. Subcommands live in cmds/, one file each.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace cuprobe::cli {

// Thrown for bad command lines; main prints the message with a pointer to --help, exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Args = std::vector<std::string>;

int cmd_record(const Args& args);
int cmd_dump(const Args& args);
int cmd_analyze(const Args& args);
int cmd_rules(const Args& args);
int cmd_explain(const Args& args);

// Exit codes of every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitUsage = 2;

// Directory holding the running `cuprobe` executable.
std::string self_dir();
// libcuprobe.so: $CUPROBE_SHIM, else <self_dir>/../lib/cuprobe/libcuprobe.so.
std::string shim_path();

// Parses a non-negative integer option value or throws UsageError naming the option.
unsigned long long parse_count(const std::string& option, const std::string& value);

}  // namespace cuprobe::cli
