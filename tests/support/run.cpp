// Process helpers for the shim tests; see run.h.
#include "run.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

extern char** environ;

namespace cuprobe::test {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> make_env(const Env& env) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    size_t eq = s.find('=');
    if (eq != std::string::npos) vars[s.substr(0, eq)] = s.substr(eq + 1);
  }
  for (const auto& [k, v] : env) vars[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : vars) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int decode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

RunResult run(const std::vector<std::string>& argv, const Env& env) {
  std::string dir = fresh_dir("run");
  std::string out_path = dir + "/stdout";
  std::string err_path = dir + "/stderr";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = make_env(env);
  auto cargs = c_strings(args);
  auto cenv = c_strings(envs);
  pid_t pid = -1;
  RunResult r;
  if (posix_spawnp(&pid, cargs[0], &fa, nullptr, cargs.data(), cenv.data()) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    r.err = "spawn failed: " + argv[0];
    return r;
  }
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = decode(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

Child spawn(const std::vector<std::string>& argv, const Env& env) {
  int fds[2];
  Child c;
  if (pipe2(fds, O_CLOEXEC) != 0) return c;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = make_env(env);
  auto cargs = c_strings(args);
  auto cenv = c_strings(envs);
  if (posix_spawnp(&c.pid, cargs[0], &fa, nullptr, cargs.data(), cenv.data()) != 0) c.pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  c.out_fd = fds[0];
  return c;
}

std::string Child::read_line(int timeout_ms) {
  std::string line;
  char ch;
  while (true) {
    pollfd p{out_fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return "";
    if (read(out_fd, &ch, 1) != 1) return line;
    if (ch == '\n') return line;
    line += ch;
  }
}

int Child::wait() {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (out_fd >= 0) close(out_fd);
  out_fd = -1;
  return decode(status);
}

std::string build_path(const std::string& relative) {
  static const fs::path root = fs::read_symlink("/proc/self/exe").parent_path().parent_path();
  return (root / relative).string();
}
std::string program(const std::string& name) { return build_path("tests/programs/" + name); }
std::string cuprobe_bin() { return build_path("bin/cuprobe"); }
std::string shim_file() {
  return (fs::path(build_path("bin")) / CUPROBE_SHIM_FROM_BIN / "libcuprobe.so").lexically_normal().string();
}
std::string fake_dir(char flavor) { return build_path(std::string("tests/doubles/") + flavor); }
std::string shim_preload() {
  std::string first = CUPROBE_PRELOAD_FIRST;
  return first.empty() ? shim_file() : first + ":" + shim_file();
}

std::string fresh_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  const char* base = std::getenv("TEST_TMPDIR");
  fs::path root = base ? fs::path(base) : fs::temp_directory_path() / ("cuprobe-tests-" + std::to_string(getpid()));
  fs::path dir = root / (tag + "-" + std::to_string(counter.fetch_add(1)));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

Env shim_env(const Env& extra) {
  Env env;
  std::string first = CUPROBE_PRELOAD_FIRST;
  if (!first.empty()) {
    env.emplace_back("LD_PRELOAD", first);
    env.emplace_back("ASAN_OPTIONS", "detect_leaks=0:verify_asan_link_order=0");
  }
  for (const auto& kv : extra) env.push_back(kv);
  return env;
}

RunResult record(const std::string& dir, const std::vector<std::string>& argv, const Env& env,
                 const std::vector<std::string>& opts) {
  std::vector<std::string> cmd = {cuprobe_bin(), "record", "-o", dir};
  cmd.insert(cmd.end(), opts.begin(), opts.end());
  cmd.push_back("--");
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  return run(cmd, shim_env(env));
}

nlohmann::json analyze_json(const std::vector<std::string>& paths, const std::vector<std::string>& options) {
  std::vector<std::string> cmd = {cuprobe_bin(), "analyze", "--json"};
  cmd.insert(cmd.end(), options.begin(), options.end());
  cmd.insert(cmd.end(), paths.begin(), paths.end());
  RunResult r = run(cmd);
  EXPECT_TRUE(r.status == 0 || r.status == 1) << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception&) {
    ADD_FAILURE() << "cuprobe analyze --json did not write JSON: " << r.out.substr(0, 500) << r.err;
    return nlohmann::json::object();
  }
}

std::vector<nlohmann::json> dump(const std::string& path, const std::vector<std::string>& opts) {
  std::vector<std::string> cmd = {cuprobe_bin(), "dump"};
  cmd.insert(cmd.end(), opts.begin(), opts.end());
  cmd.push_back(path);
  RunResult r = run(cmd);
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<nlohmann::json> lines;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    try {
      lines.push_back(nlohmann::json::parse(line));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not JSON: " << line << ": " << e.what();
    }
  }
  return lines;
}

std::vector<nlohmann::json> of_type(const std::vector<nlohmann::json>& lines, const std::string& type,
                                    const std::string& api) {
  std::vector<nlohmann::json> out;
  // Memory samples are call lines the shim made itself: "call" means the program's calls.
  bool samples = type == "sample";
  for (const auto& l : lines) {
    if (l.value("type", "") != (samples ? "call" : type) || l.value("sample", false) != samples) continue;
    if (api.empty() || l.value("api", "") == api) out.push_back(l);
  }
  return out;
}

}  // namespace cuprobe::test
