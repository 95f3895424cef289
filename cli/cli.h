// Shared pieces of the `cuprobe` command line: the subcommand signature, usage errors, and
// small helpers every subcommand uses. Subcommands live in cmds/, one file each.
#pragma once

#include <functional>
#include <memory>
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
int cmd_export(const Args& args);
int cmd_report(const Args& args);
int cmd_snapshot(const Args& args);
int cmd_pack(const Args& args);
int cmd_facts(const Args& args);
int cmd_diff(const Args& args);
int cmd_plans(const Args& args);
// Plan files (cmds/plans.cpp), for record --pin-plans: the plans FILE holds as the shim reads it
// (UsageError with the shim's reason when the shim would not use it), and merging a run's new plans into FILE (--pin-plans-learn).
size_t plans_count(const std::string& file);
int plans_learn(const std::string& file, const std::string& run);

// Exit codes of every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitUsage = 2;

// Directory holding the running `cuprobe` executable.
std::string self_dir();
// libcuprobe.so: $CUPROBE_SHIM, else where the build put it relative to this executable
// (<self_dir>/../lib/cuprobe/libcuprobe.so by default; CUPROBE_SHIM_FROM_BIN in version.h).
std::string shim_path();

// "a,b,,c" -> {"a", "b", "c"}: a comma-separated list, empty items dropped (options.cpp).
std::vector<std::string> split_commas(const std::string& list);

// Parses a non-negative integer option value or throws UsageError naming the option (options.cpp).
unsigned long long parse_count(const std::string& option, const std::string& value);

// The one option parser of every subcommand (options.cpp, on CLI11). Options take their value as
// "--opt VALUE" or "--opt=VALUE" (short ones as "-o VALUE" or "-oVALUE"; flags cluster, "-qo DIR"),
// anywhere among the operands, and "--" ends them. Each option's action runs as it is read, in
// command-line order, so a later option overrides an earlier one and the first bad value is the
// one reported. -h and --help print the subcommand's own help text. A bad command line throws
// UsageError naming the option ("unknown option '--jsn' (did you mean --json?)",
// "--max-mb needs a value").
class OptionParser {
 public:
  // `help` is printed, as it is, for -h and --help (main names the subcommand in errors).
  explicit OptionParser(std::string help);
  ~OptionParser();
  OptionParser(const OptionParser&) = delete;
  OptionParser& operator=(const OptionParser&) = delete;

  // A flag without a value; `names` as "-q,--quiet" or "--json".
  void flag(const std::string& names, std::function<void()> action);
  // An option with one value; repeatable, `action` runs once per occurrence.
  void value(const std::string& names, std::function<void(const std::string&)> action);
  // Options end at the first operand: it and every argument after it are operands, untouched
  // (`cuprobe record [options] COMMAND ARGS...` passes ARGS to COMMAND whatever they look like).
  void stop_at_first_operand();

  // Parses `args` (without the subcommand's name) and stores the operands in order. Returns
  // false when -h or --help printed the help text: the subcommand then exits with status 0.
  bool parse(const Args& args, std::vector<std::string>* operands);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cuprobe::cli
