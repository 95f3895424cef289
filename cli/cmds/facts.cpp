// `cuprobe facts` (issue 30): the per-node reduction of traces to what the analysis needs, run
// where the traces are (one task per node under srun, an indexed Job per node, one reducer per
// torchrun agent); `analyze`, `report` and `plans export` read the small facts files instead of
// the traces. The format is analysis/facts_io.h's.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "analysis/facts_io.h"
#include "bytes_text.h"
#include "cli.h"
#include "cmds/dump_lines.h"
#include "cmds/output_file.h"
#include "trace/reader.h"
#include "trace/zstd_io.h"
#include "version.h"

namespace cuprobe::cli {

namespace {

using nlohmann::json;

constexpr const char* kHelp = R"HELP(Usage: cuprobe facts [options] -o FILE PATH...

Reduces traces to the facts the analysis needs, in one small file: for each process its
identity, versions, configuration, devices, problems with their plans and measured times,
searches and their cost, memory peaks and owners, out-of-memory failures, cuDNN failures,
faults, pins, and the inputs of every rule, with call sites resolved here (where the binaries
are). `cuprobe analyze`, `report` and `plans export` read facts files as they read traces and
give the same findings; they need no access to the traces or to the machine that wrote them.
Facts files also merge: `cuprobe facts -o all.facts node*.facts`.

Run it where the traces are, one per node, after the job (Slurm: docs/commands/facts.md):
  srun --ntasks-per-node=1 cuprobe facts -o /shared/facts/%h.facts /local/run
  cuprobe analyze /shared/facts

PATH is a run directory, a trace file (packed or not), `cuprobe dump` output or a facts file.

Options:
  -o, --output FILE    the facts file to write (zstd-packed JSON Lines; name it *.facts so that
                       a directory of them reads as one job); %h becomes this machine's host
                       name; a missing directory is made, private to this user
  -j, --threads N      traces reduced at once; default this machine's CPUs, at most 8
      --symbols DIR    also look for debug files under DIR (repeatable), as dump does
      --no-symbols     leave native call sites unresolved (faster; analyze shows addresses)
  -q, --quiet          no progress and no summary line
  -h, --help           this text

Exit status: 0 written; 2 for a usage error, no readable trace, or a file that cannot be written.
A trace that cannot be read is named on stderr and left out (the others are reduced).
)HELP";

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

// -o's %h (this host), %% (a percent sign).
std::string expand_output(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && (pattern[i + 1] == 'h' || pattern[i + 1] == '%')) {
      out += pattern[i + 1] == 'h' ? host_name() : "%";
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

std::string dump_json(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

// A process's lines: its metadata as dump writes it, then its facts.
std::string process_lines(const reader::Trace& t, const analysis::ProcessFacts& f, uint64_t proc,
                          const std::vector<std::string>& symbol_dirs, bool symbols) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* mem = open_memstream(&buf, &len);
  if (mem == nullptr) throw std::runtime_error("out of memory");
  fmt::print(mem, "{{\"type\":\"facts_process\",\"proc\":{}}}\n", proc);
  // The APIs the process called, counted or timed: the others' descriptions are not needed
  // without calls (they were half of a facts file).
  std::set<std::string> apis;
  for (const auto& [name, n] : f.calls_by_api) apis.insert(name);
  for (const auto& [name, ns] : f.time_by_api) apis.insert(name);
  for (const auto& c : t.counts()) apis.insert(t.api_name(c.api));
  write_process_lines(t, mem, symbol_dirs, symbols, &apis);
  analysis::facts_parts(f, [&](const std::string& key, json value, bool items) {
    fmt::print(mem, "{{\"type\":\"facts\",\"pid\":{},\"key\":{},\"{}\":{}}}\n", t.pid(), dump_json(key),
               items ? "items" : "value", dump_json(value));
  });
  std::fclose(mem);
  std::string out(buf, len);
  std::free(buf);
  return out;
}

}  // namespace

int cmd_facts(const Args& args) {
  std::string output;
  int threads = 0;
  bool quiet = false;
  bool symbols = true;
  std::vector<std::string> symbol_dirs;
  OptionParser options(kHelp);
  options.value("-o,--output", [&](const std::string& v) { output = v; });
  options.value("-j,--threads", [&](const std::string& v) {
    unsigned long long n = parse_count("--threads", v);
    if (n < 1 || n > 256) throw UsageError(fmt::format("--threads {}: 1 to 256", v));
    threads = int(n);
  });
  options.value("--symbols", [&](const std::string& v) { symbol_dirs.push_back(v); });
  options.flag("--no-symbols", [&] { symbols = false; });
  options.flag("-q,--quiet", [&] { quiet = true; });
  std::vector<std::string> paths;
  if (!options.parse(args, &paths)) return kExitOk;
  if (output.empty()) throw UsageError("no output file; give -o FILE (a *.facts file; %h becomes the host name)");
  if (paths.empty()) throw UsageError("no trace given; usage: cuprobe facts -o FILE PATH...");
  output = expand_output(output);
  if (threads == 0) threads = int(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));

  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::vector<std::string> skipped;
    auto found = reader::find_trace_files(p, &skipped);
    for (const auto& s : skipped) fmt::print(stderr, "cuprobe facts: {}\n", s);
    if (!found) {
      fmt::print(stderr, "cuprobe facts: {}\n", found.error().message);
      continue;
    }
    for (const auto& f : *found) files.push_back(f);
  }
  // A missing directory is made (private to this user, as a run directory): one command line
  // run on every node writes into a directory none of them had to create first.
  if (auto dir = std::filesystem::path(output).parent_path(); !dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) {
      std::filesystem::create_directories(dir, ec);
      if (!ec) std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
    }
  }
  OutputFile file("-o", output);      // checked before the work, not after
  std::FILE* plain = std::tmpfile();  // the lines, packed into the output at the end
  if (plain == nullptr) throw UsageError(fmt::format("cannot create a temporary file: {}", std::strerror(errno)));
  fmt::print(plain, "{{\"type\":\"facts_file\",\"version\":{},\"cuprobe\":\"{}\",\"host\":{}}}\n",
             analysis::kFactsVersion, CUPROBE_VERSION, dump_json(host_name()));

  auto start = std::chrono::steady_clock::now();
  std::mutex mu;  // the temporary file, the counters and stderr
  std::atomic<size_t> next{0};
  uint64_t procs = 0, in_bytes = 0;
  size_t done = 0;
  std::map<size_t, std::vector<std::string>> ready;  // reduced, waiting for an earlier input
  size_t written = 0;
  auto last_note = start;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      std::vector<std::string> out;
      std::vector<std::string> errors;
      struct stat st {};
      uint64_t bytes = ::stat(files[i].c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
      auto traces = reader::open_traces(files[i]);
      if (!traces) {
        errors.push_back(traces.error().message);
      } else {
        for (auto& t : *traces) {
          for (const auto& d : t->diagnostics()) errors.push_back(fmt::format("{}: {}", files[i], d));
          auto f = analysis::facts_of(*t, analysis::FactOptions{});
          t->release_events();
          if (!f) {
            errors.push_back(f.error().message + "; left out");
            continue;
          }
          uint64_t proc;
          {
            std::lock_guard<std::mutex> lock(mu);
            proc = procs++;
          }
          out.push_back(process_lines(*t, *f, proc, symbol_dirs, symbols));
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      // Written in the order of the inputs (as analyze lists them), whatever order they finish in.
      ready[i] = std::move(out);
      while (ready.count(written)) {
        for (const auto& s : ready[written]) std::fwrite(s.data(), 1, s.size(), plain);
        ready.erase(written++);
      }
      for (const auto& e : errors) fmt::print(stderr, "cuprobe facts: {}\n", e);
      in_bytes += bytes;
      ++done;
      auto now = std::chrono::steady_clock::now();
      if (!quiet && now - last_note > std::chrono::seconds(2) && done < files.size()) {
        fmt::print(stderr, "cuprobe facts: {} of {} files reduced\n", done, files.size());
        last_note = now;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < std::min<int>(threads, int(files.size())); ++w) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (procs == 0) {
    std::fclose(plain);
    throw UsageError("no trace could be read; nothing written");
  }
  if (std::fflush(plain) != 0 || std::fseek(plain, 0, SEEK_SET) != 0) {
    std::fclose(plain);
    throw UsageError(fmt::format("cannot write a temporary file: {}", std::strerror(errno)));
  }
  int fd = ::open(file.temp().c_str(), O_WRONLY | O_CLOEXEC | O_TRUNC);
  if (fd < 0) throw UsageError(fmt::format("cannot write '{}': {}", output, std::strerror(errno)));
  auto packed = zstd::pack_fd(fileno(plain), fd, 6, 0, {});
  ::close(fd);
  std::fclose(plain);
  if (!packed) throw UsageError(fmt::format("cannot write '{}': {}", output, packed.error().message));
  if (std::string err = file.commit(); !err.empty())
    throw UsageError(fmt::format("cannot write '{}': {}", output, err));
  if (!quiet) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(stderr, "cuprobe facts: {} process{} from {} file{} ({}) -> {} ({}, {:.2f}% of the input) in {:.1f} s\n",
               procs, procs == 1 ? "" : "es", files.size(), files.size() == 1 ? "" : "s", human_bytes(in_bytes), output,
               human_bytes(packed->out_bytes), in_bytes ? 100.0 * double(packed->out_bytes) / double(in_bytes) : 0.0,
               s);
  }
  return kExitOk;
}

}  // namespace cuprobe::cli
