// Entry point of the `cuprobe` command: dispatches to one subcommand (cmds/*.cpp), each of which
// reads its options with OptionParser (options.cpp), and turns usage errors into exit status 2
// with a message naming the bad input.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "cli.h"
#include "cuprobe/trace_format.h"
#include "version.h"

namespace cuprobe::cli {

std::string self_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::string shim_path() {
  if (const char* env = std::getenv("CUPROBE_SHIM"); env != nullptr && *env != 0) return env;
  return (std::filesystem::path(self_dir()) / CUPROBE_SHIM_FROM_BIN / "libcuprobe.so").lexically_normal().string();
}

}  // namespace cuprobe::cli

namespace {

constexpr const char* kUsage = R"(cuprobe: trace CUDA runtime and cuDNN calls of unmodified GPU jobs

Usage:
  cuprobe record [-o DIR] [options] -- COMMAND [ARGS...]
                            run COMMAND with the tracer preloaded; traces go to DIR
  cuprobe dump PATH...      print a run directory or trace file as JSON Lines
  cuprobe analyze PATH...   findings: what went wrong, what it cost, what to do
  cuprobe rules             the rules analyze applies
  cuprobe explain RULE      a rule's rationale, thresholds and fix
  cuprobe report -o report.html PATH...
                            one self-contained HTML page: findings, memory, searches, ranks
  cuprobe export --format perfetto|chrome|sqlite -o FILE PATH...
                            the timeline for Perfetto / chrome://tracing, or a SQLite database
  cuprobe snapshot [-o DIR] RUN_DIR|PID
                            copy a running job's traces as they are now, to analyze meanwhile
  cuprobe pack RUN_DIR...   compress traces at rest with zstd; every command reads them packed
  cuprobe facts -o FILE PATH...
                            reduce traces to the facts analyze needs (one small file per node)
  cuprobe diff A B          why run B is slower, bigger or different than run A
  cuprobe plans export [-o plans.json] RUN...
                            the cuDNN plans the runs chose, to replay with record --pin-plans
  cuprobe plans show FILE   what a plan file holds
  cuprobe --version
  cuprobe --shim-path       where libcuprobe.so is, for LD_PRELOAD=$(cuprobe --shim-path)
  cuprobe COMMAND --help    options of one command

Without `cuprobe record` (torchrun, Slurm, Kubernetes), preload the shim yourself:
  LD_PRELOAD=$(cuprobe --shim-path) CUPROBE_OUT=/abs/run/dir python train.py

Exit status: the traced command's own status for `record`; for `analyze` 1 when there are
findings (see --fail-on); 0 on success and 2 for usage or unreadable input otherwise.
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace cuprobe::cli;
  Args args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }
  const std::string cmd = args.front();
  args.erase(args.begin());
  try {
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (cmd == "-V" || cmd == "--version") {
      fmt::print("cuprobe {} (trace format {})\n", CUPROBE_VERSION, cuprobe::trace::kVersion);
      return kExitOk;
    }
    if (cmd == "--shim-path") {
      fmt::print("{}\n", shim_path());
      return kExitOk;
    }
    if (cmd == "record") return cmd_record(args);
    if (cmd == "dump") return cmd_dump(args);
    if (cmd == "analyze") return cmd_analyze(args);
    if (cmd == "rules") return cmd_rules(args);
    if (cmd == "explain") return cmd_explain(args);
    if (cmd == "export") return cmd_export(args);
    if (cmd == "report") return cmd_report(args);
    if (cmd == "snapshot") return cmd_snapshot(args);
    if (cmd == "pack") return cmd_pack(args);
    if (cmd == "facts") return cmd_facts(args);
    if (cmd == "diff") return cmd_diff(args);
    if (cmd == "plans") return cmd_plans(args);
    fmt::print(stderr, "cuprobe: unknown {} '{}'; see cuprobe --help\n", cmd.rfind('-', 0) == 0 ? "option" : "command",
               cmd);
    return kExitUsage;
  } catch (const UsageError& e) {
    // One line: what is wrong, naming the option, and where the usage is.
    fmt::print(stderr, "cuprobe {}: {}; see cuprobe {} --help\n", cmd, e.what(), cmd);
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "cuprobe {}: {}\n", cmd, e.what());
    return kExitUsage;
  }
}
