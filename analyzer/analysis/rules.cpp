// Rule data loading, settings, message rendering and the registry; see rules.h.
#include "analysis/rules.h"

#include "version.h"  // CUPROBE_RULES_FROM_BIN

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace cuprobe::analysis {

namespace fs = std::filesystem;
using nlohmann::json;

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "?";
}

Result<Severity> parse_severity(const std::string& s) {
  if (s == "info") return Severity::kInfo;
  if (s == "warning") return Severity::kWarning;
  if (s == "error") return Severity::kError;
  return Error{fmt::format("unknown severity '{}' (expected info, warning or error)", s)};
}

const std::string& RuleSpec::fix_for(const std::string& key) const {
  auto it = fixes.find(key);
  return it == fixes.end() ? fix : it->second;
}

double RuleSpec::param(const std::string& name) const {
  auto it = params.find(name);
  if (it == params.end()) throw std::out_of_range(fmt::format("rule {} ({}) has no parameter '{}'", id, file, name));
  return it->second.value;
}

std::map<std::string, RuleFn>& mutable_registry() {
  static std::map<std::string, RuleFn> r;
  return r;
}

const std::map<std::string, RuleFn>& rule_registry() { return mutable_registry(); }

RegisterRule::RegisterRule(const std::string& id, RuleFn fn) { mutable_registry()[id] = std::move(fn); }

namespace {

std::string format_value(const json& v, const std::string& how) {
  if (how.empty()) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_float()) {
      double d = v.get<double>();
      return std::fabs(d) >= 100 ? fmt::format("{:.0f}", d) : fmt::format("{:.3g}", d);
    }
    if (v.is_array()) {
      std::string out;
      for (const auto& x : v) out += (out.empty() ? "" : ", ") + format_value(x, "");
      return out;
    }
    return v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  if (!v.is_number()) return format_value(v, "");
  double d = v.get<double>();
  if (how == "pct") return fmt::format("{:.1f}%", d * 100);
  if (how == "bytes") return human_bytes(!(d > 0) ? 0 : d >= 1.8e19 ? UINT64_MAX : uint64_t(d));
  if (how == "ms") return fmt::format("{:.1f} ms", d);
  if (how == "s") return fmt::format("{:.2f} s", d);
  if (how == "x") return fmt::format("{:.1f}x", d);
  return format_value(v, "");
}

Result<RuleSpec> parse_rule(const fs::path& file) {
  std::ifstream in(file);
  json j;
  try {
    j = json::parse(in);
  } catch (const std::exception& e) {
    return Error{fmt::format("{}: not valid JSON: {}", file.string(), e.what())};
  }
  RuleSpec r;
  r.file = file.string();
  try {
    r.id = j.at("id").get<std::string>();
    if (r.id != file.stem().string()) {
      return Error{fmt::format("{}: the file must be named after the rule's id ('{}')", file.string(), r.id)};
    }
    r.title = j.at("title").get<std::string>();
    auto sev = parse_severity(j.at("severity").get<std::string>());
    if (!sev) return Error{fmt::format("{}: {}", file.string(), sev.error().message)};
    r.severity = *sev;
    r.message = j.at("message").get<std::string>();
    r.rationale = j.value("rationale", "");
    r.fix = j.value("fix", "");
    r.references = j.value("references", std::vector<std::string>{});
    if (j.contains("fixes")) r.fixes = j["fixes"].get<std::map<std::string, std::string>>();
    if (j.contains("params")) {
      for (auto it = j["params"].begin(); it != j["params"].end(); ++it) {
        Param p;
        p.value = it.value().at("value").get<double>();
        p.description = it.value().value("description", "");
        r.params[it.key()] = p;
      }
    }
  } catch (const std::exception& e) {
    return Error{fmt::format("{}: {}", file.string(), e.what())};
  }
  return r;
}

}  // namespace

std::string render(const std::string& tmpl, const json& values) {
  std::string out;
  size_t i = 0;
  while (i < tmpl.size()) {
    size_t open = tmpl.find('{', i);
    if (open == std::string::npos) {
      out += tmpl.substr(i);
      break;
    }
    size_t close = tmpl.find('}', open);
    if (close == std::string::npos) {
      out += tmpl.substr(i);
      break;
    }
    out += tmpl.substr(i, open - i);
    std::string key = tmpl.substr(open + 1, close - open - 1);
    std::string how;
    if (size_t colon = key.find(':'); colon != std::string::npos) {
      how = key.substr(colon + 1);
      key = key.substr(0, colon);
    }
    out += values.contains(key) ? format_value(values[key], how) : "{" + key + "}";
    i = close + 1;
  }
  return out;
}

Result<std::map<std::string, RuleSpec>> load_rules(const std::vector<std::string>& dirs) {
  std::map<std::string, RuleSpec> rules;
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return Error{fmt::format("rules directory {} does not exist", dir)};
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      auto r = parse_rule(f);
      if (!r) return r.error();
      if (!rule_registry().count(r->id)) {
        return Error{fmt::format("{}: no matching logic for rule '{}' in this cuprobe (known: {})", f.string(), r->id,
                                 [] {
                                   std::string s;
                                   for (const auto& [id, fn] : rule_registry()) s += (s.empty() ? "" : ", ") + id;
                                   return s;
                                 }())};
      }
      rules[r->id] = std::move(*r);
    }
  }
  if (rules.empty()) return Error{"no rules found (rules/*.json)"};
  return rules;
}

Result<bool> apply_setting(std::map<std::string, RuleSpec>& rules, const std::string& setting) {
  size_t eq = setting.find('=');
  size_t dot = setting.find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot > eq) {
    return Error{fmt::format("--set expects RULE.PARAM=VALUE, got '{}'", setting)};
  }
  std::string rule = setting.substr(0, dot);
  std::string param = setting.substr(dot + 1, eq - dot - 1);
  std::string value = setting.substr(eq + 1);
  auto it = rules.find(rule);
  if (it == rules.end()) return Error{fmt::format("--set {}: no rule '{}' (see 'cuprobe rules')", setting, rule)};
  auto p = it->second.params.find(param);
  if (p == it->second.params.end()) {
    std::string known;
    for (const auto& [name, prm] : it->second.params) known += (known.empty() ? "" : ", ") + name;
    return Error{fmt::format("--set {}: rule {} has no parameter '{}' (it has: {})", setting, rule, param, known)};
  }
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end == nullptr || *end != 0) {
    return Error{fmt::format("--set {}: '{}' is not a number", setting, value)};
  }
  p->second.value = v;
  return true;
}

Finding make_finding(const RuleSpec& spec, json evidence, double impact_s) {
  Finding f;
  f.rule = spec.id;
  f.severity = spec.severity;
  f.title = spec.title;
  f.message = render(spec.message, evidence);
  f.evidence = std::move(evidence);
  f.fix = spec.fix;
  f.impact_s = impact_s;
  return f;
}

std::string default_rules_dir() {
  if (const char* env = std::getenv("CUPROBE_RULES"); env != nullptr && *env != 0) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path() / CUPROBE_RULES_FROM_BIN;
    if (fs::is_directory(installed, ec)) return installed.lexically_normal().string();
  }
  return CUPROBE_SOURCE_RULES_DIR;
}

}  // namespace cuprobe::analysis
