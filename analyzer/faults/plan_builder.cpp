// See plan_builder.h.
#include "faults/plan_builder.h"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <random>
#include <set>

#include "fault_plan.h"
#include "trace/reader.h"

namespace cuprobe::faults {

namespace {

// Items of a rule, split at commas that are not escaped.
std::vector<std::string> items_of(const std::string& rule) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < rule.size(); ++i) {
    if (rule[i] == '\\' && i + 1 < rule.size()) {
      cur += rule[i];
      cur += rule[++i];
    } else if (rule[i] == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += rule[i];
    }
  }
  out.push_back(cur);
  return out;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string key_of(const std::string& item) {
  std::string t = trim(item);
  size_t n = 0;
  while (n < t.size() && (std::isalnum(uint8_t(t[n])) || t[n] == '-' || t[n] == '_')) ++n;
  return t.substr(0, n);
}

// A JSON value as messages quote it.
std::string shown(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

// Whether a backslash run in `v` would escape the separator the spec puts after it: the spec's
// only escapes are \, and \; (other backslashes stay), so an odd run of backslashes before a
// ',' or ';' of the value, or at its end, cannot be written.
bool has_dangling_backslash(const std::string& v) {
  for (size_t i = 0; i < v.size();) {
    if (v[i] != '\\') {
      ++i;
      continue;
    }
    size_t run = 0;
    while (i < v.size() && v[i] == '\\') ++i, ++run;
    if (run % 2 == 1 && (i == v.size() || v[i] == ',' || v[i] == ';')) return true;
  }
  return false;
}

// A value the spec text can carry as it is: commas and semicolons escaped; refused when it holds
// a line break (which separates rules), would be trimmed, or ends in an escaping backslash.
std::string escaped_value(const std::string& v, const std::string& where) {
  for (char c : v) {
    if (c == '\n' || c == '\r' || c == '\0') {
      throw PlanError(fmt::format("{}: {} holds a line break or NUL, which a fault rule cannot carry", where,
                                  shown(v)));
    }
  }
  if (!v.empty() && (std::isspace(uint8_t(v.front())) || std::isspace(uint8_t(v.back())))) {
    throw PlanError(fmt::format("{}: {} begins or ends with white space, which a fault rule drops; remove it",
                                where, shown(v)));
  }
  if (has_dangling_backslash(v)) {
    throw PlanError(fmt::format("{}: {}: a backslash before ',' or ';' or at the end of a value cannot be written "
                                "in a fault rule (\\, and \\; are its escapes)", where, shown(v)));
  }
  std::string out;
  for (char c : v) {
    if (c == ',' || c == ';') out += '\\';
    out += c;
  }
  return out;
}

bool is_name(const std::string& s, bool dash) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(uint8_t(c)) && c != '_' && !(dash && c == '-')) return false;
  return true;
}

// A number of a JSON plan as the spec writes it.
std::string number_text(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return fmt::format("{}", v.get<double>());
}

// A string or a number; anything else is refused, naming the key.
std::string scalar_text(const nlohmann::json& v, const std::string& where, const char* expected) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return number_text(v);
  throw PlanError(fmt::format("{}: expected {}, not {}", where, expected, shown(v)));
}

std::string string_text(const nlohmann::json& v, const std::string& where, const char* expected) {
  if (v.is_string()) return v.get<std::string>();
  throw PlanError(fmt::format("{}: expected {} (a JSON string), not {}", where, expected, shown(v)));
}

std::string call_name(const nlohmann::json& v, const std::string& where) {
  std::string s = string_text(v, where, "a call group (alloc, cudnn-execute, ...) or an API name");
  if (!is_name(s, true)) {
    throw PlanError(fmt::format("{}: {} is not a call group or an API name (letters, digits, '-' and '_'); give "
                                "several calls as an array", where, shown(v)));
  }
  return s;
}

std::string rule_from_object(const nlohmann::json& r, const std::string& where) {
  if (!r.contains("calls") || !r.contains("error")) {
    throw PlanError(fmt::format("{}: a rule needs \"calls\" (a group such as alloc or cudnn-execute, or an API "
                                "name) and \"error\" (OOM, NOT_SUPPORTED, ... or a number)", where));
  }
  std::string calls;
  if (r["calls"].is_array()) {
    if (r["calls"].empty()) throw PlanError(fmt::format("{}.calls: an empty array names no call", where));
    for (const auto& c : r["calls"]) calls += (calls.empty() ? "" : "|") + call_name(c, where + ".calls");
  } else {
    calls = call_name(r["calls"], where + ".calls");
  }
  const nlohmann::json& e = r["error"];
  std::string error;
  if (e.is_number_integer() || e.is_number_unsigned()) {
    error = number_text(e);
  } else {
    error = string_text(e, where + ".error", "an error name (OOM, NOT_SUPPORTED, ...) or a number");
    if (!is_name(error, false)) {
      throw PlanError(fmt::format("{}.error: {} is not an error name (OOM, NOT_SUPPORTED, ...) or a number", where,
                                  shown(e)));
    }
  }
  std::string spec = calls + ":" + error;
  for (auto it = r.begin(); it != r.end(); ++it) {
    const std::string& k = it.key();
    if (k == "calls" || k == "error" || k == "comment") continue;
    std::string at = where + "." + k;
    if (!is_name(k, true)) {
      throw PlanError(fmt::format("{}: \"{}\" is not a rule key (keys are the spec's: nth, every, problem, "
                                  "problem_regex, min_size, ...)", where, k));
    }
    static const std::set<std::string> kStrings = {"name", "problem", "problem_regex", "comm", "process", "scope"};
    std::string v;
    if (kStrings.count(k)) {
      v = string_text(*it, at, "text");
    } else if (it->is_array()) {
      if (k != "at") throw PlanError(fmt::format("{}: an array is taken only for \"at\" (and \"calls\")", at));
      for (const auto& x : *it) {
        std::string n = scalar_text(x, at, "a call number");
        if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) {
          throw PlanError(fmt::format("{}: {} is not a call number (a whole number >= 1)", at, shown(x)));
        }
        v += (v.empty() ? "" : "+") + n;
      }
    } else {
      v = scalar_text(*it, at, "a number or a string");
    }
    v = escaped_value(v, at);
    if (k == "problem_regex") spec += ",problem~" + v;
    else if (k == "min_size" || k == "size") spec += ",size>=" + v;
    else spec += "," + k + "=" + v;
  }
  return spec;
}

// A spec string is one rule: a ';' or a line break that is not escaped would start another.
void check_one_rule(const std::string& rule, const std::string& where) {
  for (size_t i = 0; i < rule.size(); ++i) {
    if (rule[i] == '\\') {
      ++i;
    } else if (rule[i] == ';' || rule[i] == '\n') {
      throw PlanError(fmt::format("{}: {} holds more than one rule (';' or a line break); give each rule its own "
                                  "entry, or write \\; for a semicolon in a value", where, shown(rule)));
    }
  }
}

}  // namespace

std::string check_plan(const std::vector<std::string>& rules) {
  std::string text;
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string& r = rules[i];
    size_t run = 0;
    while (run < r.size() && r[r.size() - 1 - run] == '\\') ++run;
    if (run % 2 == 1) {
      throw PlanError(fmt::format("fault rule {} ('{}') ends in a backslash, which would escape the ';' after it",
                                  i + 1, r));
    }
    text += (text.empty() ? "" : ";") + r;
  }
  auto plan = std::make_unique<Plan>();
  char err[768];
  if (!parse_plan(text.c_str(), plan.get(), err, sizeof err)) throw PlanError(err);
  // rank=random without a seed: one seed for the whole job, picked here and written into the
  // rule, so that every rank (and the analysis) reads the same one.
  bool picked = false;
  if (plan->n == int(rules.size())) {
    std::vector<std::string> with_seeds = rules;
    for (int i = 0; i < plan->n; ++i) {
      const Rule& r = plan->rules[i];
      if (r.rank != kRankRandom || r.seed_given) continue;
      std::random_device rd;
      uint64_t seed = (uint64_t(rd()) << 32) ^ rd();
      with_seeds[size_t(i)] += fmt::format(",seed={}", seed);
      picked = true;
    }
    if (picked) {
      text.clear();
      for (const auto& r : with_seeds) text += (text.empty() ? "" : ";") + r;
    }
  }
  free_plan(plan.get());
  return text;
}

void check_mem_cap(const std::string& cap) {
  MemCap c;
  char err[512];
  if (!parse_mem_cap(cap.c_str(), &c, err, sizeof err)) throw PlanError(err);
}

FileRules rules_from_json(const nlohmann::json& doc, const std::string& source) {
  FileRules out;
  const nlohmann::json* rules = &doc;
  if (doc.is_object()) {
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      if (it.key() != "rules" && it.key() != "mem_cap" && it.key() != "comment") {
        throw PlanError(fmt::format("{}: unknown key \"{}\"; a fault file has \"rules\" and optionally \"mem_cap\"",
                                    source, it.key()));
      }
    }
    if (doc.contains("mem_cap")) out.mem_cap = scalar_text(doc["mem_cap"], source + ": mem_cap", "a memory cap (8GiB, 25%)");
    if (!doc.contains("rules")) {
      if (out.mem_cap.empty()) throw PlanError(fmt::format("{}: no \"rules\"", source));
      return out;
    }
    rules = &doc["rules"];
  }
  if (!rules->is_array()) throw PlanError(fmt::format("{}: \"rules\" must be an array", source));
  for (size_t i = 0; i < rules->size(); ++i) {
    const auto& r = (*rules)[i];
    std::string where = fmt::format("{}: rules[{}]", source, i);
    if (r.is_string()) {
      check_one_rule(r.get<std::string>(), where);
      out.rules.push_back(r.get<std::string>());
    } else if (r.is_object()) out.rules.push_back(rule_from_object(r, where));
    else throw PlanError(fmt::format("{}: a rule is a spec string or an object", where));
  }
  return out;
}

std::map<int, uint64_t> mem_cap_bytes(const std::string& text, const std::map<int, uint64_t>& totals) {
  std::map<int, uint64_t> out;
  MemCap cap;
  char err[256];
  if (!parse_mem_cap(text.c_str(), &cap, err, sizeof err)) return out;
  for (const auto& [d, total] : totals) {
    uint64_t t = total;
    uint64_t bytes = cap_bytes(cap, d, [](int, void* ctx) { return *static_cast<uint64_t*>(ctx); }, &t);
    if (bytes) out[d] = bytes;
  }
  return out;
}

bool rule_is_delay(const std::string& rule) {
  auto plan = std::make_unique<Plan>();
  char err[256];
  if (!parse_plan(rule.c_str(), plan.get(), err, sizeof err)) return false;
  bool delay = plan->n == 1 && plan->rules[0].delay_only;
  free_plan(plan.get());
  return delay;
}

std::string rule_filters(const std::string& rule) {
  static const std::set<std::string> kTriggers = {"nth", "every", "first", "after", "at",
                                                  "p",   "probability", "seed", "max"};
  std::string out;
  bool first = true;
  for (const auto& item : items_of(rule)) {
    if (!first && kTriggers.count(key_of(item))) continue;
    if (!first && trim(item).empty()) continue;
    out += (first ? "" : ",") + trim(item);
    first = false;
  }
  return out;
}

Replay replay_from_trace(const std::string& path) {
  auto files = reader::find_trace_files(path);
  if (!files) throw PlanError(fmt::format("--replay-faults {}: {}", path, files.error().message));
  Replay out;
  // Per rule (by name, keeping the order of the plan): its text and the match numbers injected.
  struct Seen {
    int index;
    std::string text;
    std::set<uint64_t> ks;
    std::set<int> ranks;
    int processes = 0;
    bool thread_scope = false;
  };
  std::map<std::string, Seen> rules;
  for (const auto& f : *files) {
    auto traces = reader::open_traces(f);
    if (!traces) throw PlanError(fmt::format("--replay-faults: {}", traces.error().message));
    for (const auto& t : *traces) {
      std::map<std::string, std::set<uint64_t>> here;
      t->for_each_event([&](const reader::Event& e) {
        if (!e.injected()) return;
        const reader::FaultRule* r = t->fault_rule(e.fault_rule);
        std::string name = r ? r->name : fmt::format("rule{}", e.fault_rule + 1);
        Seen& s = rules.try_emplace(name, Seen{e.fault_rule, r ? r->text : "", {}, {}, 0, false}).first->second;
        if (r && r->scope == 1) s.thread_scope = true;
        here[name].insert(e.fault_k);
        ++out.injected;
      });
      t->release_events();
      for (const auto& r : t->fault_rules()) {
        if (r.is_mem_cap() && out.mem_cap.empty()) out.mem_cap = r.text;
      }
      for (auto& [name, ks] : here) {
        Seen& s = rules[name];
        s.ks.insert(ks.begin(), ks.end());
        s.ranks.insert(t->process().rank);
        ++s.processes;
      }
    }
  }
  if (out.injected == 0) {
    throw PlanError(fmt::format("--replay-faults {}: the trace holds no injected call; it was not recorded under a "
                                "fault plan or a memory cap, or nothing fired", path));
  }
  std::vector<std::pair<int, std::string>> ordered;  // (index, name): the plan's order, the cap last
  for (const auto& [name, s] : rules) ordered.emplace_back(s.index, name);
  std::sort(ordered.begin(), ordered.end());
  for (const auto& [index, name] : ordered) {
    const Seen& s = rules[name];
    bool cap = index == trace::kFaultRuleSlots - 1;
    std::string base = cap ? "alloc:OOM" : rule_filters(s.text);
    if (base.empty()) {
      out.notes.push_back(fmt::format("rule {}: its text is not in the trace; skipped", name));
      continue;
    }
    if (!cap && base.find("name=") == std::string::npos) base += ",name=" + name;
    if (cap) base += ",name=mem-cap.replay";
    if (s.processes > 1) {
      out.notes.push_back(fmt::format("rule {} fired in {} processes; the replay injects the union of their match "
                                      "numbers in every process it matches", name, s.processes));
    }
    if (s.thread_scope) {
      out.notes.push_back(fmt::format("rule {} counts per thread; the replay injects its match numbers on every "
                                      "thread", name));
    }
    std::vector<uint64_t> ks(s.ks.begin(), s.ks.end());
    for (size_t part = 0; part * kMaxAt < ks.size(); ++part) {
      std::string at;
      // Calls an earlier part injected never reach this one: its count runs behind by as many.
      for (size_t i = part * kMaxAt; i < ks.size() && i < (part + 1) * kMaxAt; ++i) {
        at += (at.empty() ? "" : "+") + std::to_string(ks[i] - part * kMaxAt);
      }
      std::string r = base + ",at=" + at;
      if (part > 0) r += fmt::format(",name={}.{}", cap ? "mem-cap.replay" : name, part + 1);
      out.rules.push_back(r);
    }
  }
  return out;
}

}  // namespace cuprobe::faults
