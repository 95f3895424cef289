// The option parser every subcommand uses (cli.h, OptionParser), on CLI11. CLI11 reads the
// options; what it leaves (operands, unknown options, the "--" mark) is sorted here, and its
// errors become UsageError naming the option, which main prints with a pointer to --help.
#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli.h"

namespace cuprobe::cli {

namespace {

// Thrown by the -h/--help flag as soon as it is read, past CLI11.
struct HelpRequested {};

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

unsigned long long parse_count(const std::string& option, const std::string& value) {
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
    throw UsageError(fmt::format("{} expects a non-negative whole number, got '{}'", option, value));
  }
  try {
    return std::stoull(value);
  } catch (const std::exception&) {
    throw UsageError(fmt::format("{} value '{}' is out of range", option, value));
  }
}

struct OptionParser::Impl {
  std::string help;
  CLI::App app;
  std::vector<std::string> names;       // every option name, for "did you mean"
  std::set<std::string> value_options;  // names of options that take a value
  bool prefix = false;

  // The known option closest to an unknown one, "" when none is close.
  std::string suggestion(const std::string& unknown) const {
    std::string best;
    size_t best_distance = 3;
    for (const auto& n : names) {
      if (n.size() < 3) continue;  // -o: any two letters are close to it
      size_t d = edit_distance(unknown, n);
      if (d < best_distance) {
        best_distance = d;
        best = n;
      }
    }
    return best;
  }

  // CLI11 reads "--opt=" (nothing after '=') as "--opt" and takes the next argument as its
  // value; here it is the empty value it says. Only arguments CLI11 reads as options are
  // rewritten: the scan skips option values and stops at "--" (and, with `prefix`, at the first
  // operand), past which nothing is touched.
  std::vector<std::string> empty_values_made_explicit(const Args& args) const {
    std::vector<std::string> out;
    out.reserve(args.size() + 1);
    bool scanning = true;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (!scanning) {
        out.push_back(a);
        continue;
      }
      if (a == "--") {
        scanning = false;
      } else if (value_options.count(a)) {
        out.push_back(a);
        if (i + 1 < args.size()) out.push_back(args[++i]);  // its value, whatever it looks like
        continue;
      } else if (a.size() > 3 && a.rfind("--", 0) == 0 && a.back() == '=' &&
                 value_options.count(a.substr(0, a.size() - 1))) {
        out.push_back(a.substr(0, a.size() - 1));
        out.emplace_back();
        continue;
      } else if (prefix && (a.empty() || a[0] != '-')) {
        scanning = false;
      }
      out.push_back(a);
    }
    return out;
  }
};

OptionParser::OptionParser(std::string help) : impl_(std::make_unique<Impl>()) {
  impl_->help = std::move(help);
  CLI::App& app = impl_->app;
  app.set_help_flag();  // CLI11's own help text is not ours: -h/--help is a flag like any other
  app.allow_extras();   // operands and unknown options are sorted out in parse()
  flag("-h,--help", [] { throw HelpRequested{}; });
}

OptionParser::~OptionParser() = default;

void OptionParser::flag(const std::string& names, std::function<void()> action) {
  impl_->app.add_flag_callback(names, std::move(action))->trigger_on_parse();
  for (auto& n : split_commas(names)) impl_->names.push_back(n);
}

void OptionParser::value(const std::string& names, std::function<void(const std::string&)> action) {
  impl_->app.add_option_function<std::string>(names, std::move(action))->trigger_on_parse();
  for (auto& n : split_commas(names)) {
    impl_->names.push_back(n);
    impl_->value_options.insert(n);
  }
}

void OptionParser::stop_at_first_operand() {
  impl_->prefix = true;
  impl_->app.prefix_command();
}

bool OptionParser::parse(const Args& args, std::vector<std::string>* operands) {
  Impl& im = *impl_;
  std::vector<std::string> argv = im.empty_values_made_explicit(args);
  std::string last = argv.empty() ? std::string() : argv.back();
  std::reverse(argv.begin(), argv.end());  // CLI11 reads from the back
  try {
    im.app.parse(argv);
  } catch (const HelpRequested&) {
    fmt::print("{}", im.help);
    return false;
  } catch (const CLI::ArgumentMismatch& e) {
    // An option that wants a value ran out of arguments: it is the last one.
    if (argv.empty() && !last.empty() && last[0] == '-') {
      throw UsageError(fmt::format("{} needs a value", last.substr(0, last.find('='))));
    }
    throw UsageError(e.what());
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }

  // What CLI11 left, in command-line order: operands, unknown options and the "--" mark.
  operands->clear();
  bool operands_only = false;
  for (const std::string& a : im.app.remaining()) {
    if (operands_only) {
      operands->push_back(a);
      continue;
    }
    if (a == "--") {  // the first "--" left before any operand is the mark itself
      operands_only = true;
      continue;
    }
    // "-" alone is an operand (standard input) unless options end at the first operand, where,
    // as before CLI11, anything starting with '-' ahead of the command is taken for an option.
    bool option_like = im.prefix ? !a.empty() && a[0] == '-' : a.size() > 1 && a[0] == '-';
    if (option_like) {
      std::string name = a.substr(0, a.find('='));
      std::string close = im.suggestion(name);
      throw UsageError(close.empty() ? fmt::format("unknown option '{}'", name)
                                     : fmt::format("unknown option '{}' (did you mean {}?)", name, close));
    }
    operands->push_back(a);
    if (im.prefix) operands_only = true;
  }
  return true;
}

std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace cuprobe::cli
