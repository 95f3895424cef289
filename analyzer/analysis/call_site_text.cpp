// See call_site_text.h. A lexical reading of demangled names (what c++filt and libstdc++'s
// __cxa_demangle print), not a C++ parser: brackets are matched as a stack, `operator` tokens and
// "(anonymous namespace)" are read as units, and whatever does not fit is kept rather than lost.
#include "analysis/call_site_text.h"

#include <cctype>
#include <cstring>
#include <vector>

namespace cuprobe::analysis {

namespace {

// Longest " at file:line" a short frame keeps (the file is a base name already).
constexpr size_t kShortLocation = 40;
constexpr std::string_view kAnonymous = "(anonymous namespace)";
constexpr std::string_view kTruncated = "...";  // Symbolizer::text's mark of a name cut at 160 characters

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

bool at_word(std::string_view s, size_t i, std::string_view word) {
  return s.substr(i, word.size()) == word && (i == 0 || !ident_char(s[i - 1])) &&
         (i + word.size() >= s.size() || !ident_char(s[i + word.size()]));
}

// The length of the `operator` token at s[i]: "operator()", "operator[]", "operator<<=",
// "operator new[]", "operator delete", "operator bool", "operator std::string" (a conversion).
size_t operator_length(std::string_view s, size_t i) {
  static constexpr const char* kSymbols = "+-*/%^&|~!=<>,";
  size_t j = i + 8;
  if (s.substr(j, 2) == "()" || s.substr(j, 2) == "[]") return j + 2 - i;
  if (j < s.size() && std::strchr(kSymbols, s[j]) != nullptr) {
    size_t k = j;
    while (k < s.size() && k < j + 3 && std::strchr(kSymbols, s[k]) != nullptr) ++k;
    return k - i;
  }
  if (j >= s.size() || s[j] != ' ') return j - i;
  // A word operator or a conversion to a type: up to the parameter list.
  size_t k = j + 1, depth = 0;
  for (; k < s.size(); ++k) {
    char c = s[k];
    if (c == '<') ++depth;
    if (c == '>' && depth > 0) --depth;
    if (depth == 0 && (c == '(' || (c == '[' && s.substr(k, 2) != "[]"))) break;
    if (depth == 0 && c == '[') ++k;  // "new[]", "delete[]"
  }
  while (k > j && s[k - 1] == ' ') --k;
  return k - i;
}

char closer_of(char open) { return open == '<' ? '>' : open == '(' ? ')' : open == '[' ? ']' : '}'; }

// The index after the bracketed group that opens at s[i] ('<', '(', '[' or '{'), s.size() when it
// does not close (a name cut short). Brackets nest as a stack; inside parentheses, brackets and
// braces '<' and '>' are plain characters (a comparison in a template argument: "(N>0)"), and
// "->" closes nothing.
size_t skip_group(std::string_view s, size_t i) {
  std::vector<char> open{s[i]};
  for (size_t k = i + 1; k < s.size(); ++k) {
    char c = s[k];
    if (at_word(s, k, "operator")) {
      k += operator_length(s, k) - 1;
      continue;
    }
    bool angles = open.back() == '<';
    if (c == '(' || c == '[' || c == '{' || (c == '<' && angles)) {
      open.push_back(c);
    } else if (c == closer_of(open.back()) && !(c == '>' && k > 0 && s[k - 1] == '-')) {
      open.pop_back();
      if (open.empty()) return k + 1;
    }
  }
  return s.size();
}

// "{lambda(at::TensorIterator&)#1}" -> "{lambda#1}"; other braced names as they are.
std::string lambda_text(std::string_view group) {
  if (group.substr(0, 8) != "{lambda(") return std::string(group);
  size_t end = skip_group(group, 7);
  return "{lambda" + std::string(group.substr(end));
}

// After a parameter list: the qualifiers a member function's may carry.
size_t skip_qualifiers(std::string_view s, size_t i) {
  for (bool more = true; more;) {
    more = false;
    for (std::string_view q : {" const", " volatile", " &&", " &", " noexcept"}) {
      if (s.substr(i, q.size()) == q) {
        i += q.size();
        more = true;
      }
    }
  }
  return i;
}

std::string_view without_suffixes(std::string_view s, bool* truncated) {
  *truncated = s.size() >= kTruncated.size() && s.substr(s.size() - kTruncated.size()) == kTruncated;
  if (*truncated) s.remove_suffix(kTruncated.size());
  // " [clone .constprop.0]", " [clone .cold]": GCC's copies of one function.
  for (size_t at; (at = s.rfind(" [clone ")) != std::string_view::npos;) s = s.substr(0, at);
  return s;
}

// The name's `::` components, outermost first, without template arguments, ABI tags and the
// parameter lists of enclosing functions; *complete when the scan reached the parameter list.
std::vector<std::string> name_components(std::string_view s, bool* complete) {
  std::vector<std::string> parts;
  std::string cur;
  *complete = false;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (at_word(s, i, "operator")) {
      size_t n = operator_length(s, i);
      cur += s.substr(i, n);
      i += n;
      if (s.substr(i, 2) == " <") ++i;  // "operator< <Foo>": the space before its template arguments
      continue;
    }
    if (s.substr(i, kAnonymous.size()) == kAnonymous) {
      cur += kAnonymous;
      i += kAnonymous.size();
      continue;
    }
    if (c == '<' || c == '[') {  // template arguments, "[abi:cxx11]"
      i = skip_group(s, i);
      continue;
    }
    if (c == '{') {
      size_t end = skip_group(s, i);
      cur += lambda_text(s.substr(i, end - i));
      i = end;
      continue;
    }
    if (c == '(') {
      // A parameter list: the function's own, unless "::" follows (the function a local
      // entity is defined in: "f(int)::{lambda()#1}::operator()() const").
      size_t after = skip_qualifiers(s, skip_group(s, i));
      if (s.substr(after, 2) != "::") {
        *complete = true;
        break;
      }
      i = after;
      continue;
    }
    if (s.substr(i, 2) == "::") {
      parts.push_back(std::move(cur));
      cur.clear();
      i += 2;
      continue;
    }
    if (c == ' ') {  // what came before was a return type, or "non-virtual thunk to"
      parts.clear();
      cur.clear();
      ++i;
      continue;
    }
    cur += c;
    ++i;
  }
  parts.push_back(std::move(cur));
  return parts;
}

}  // namespace

std::string short_function(std::string_view demangled) {
  bool truncated = false;
  std::string_view s = without_suffixes(demangled, &truncated);
  bool complete = false;
  std::vector<std::string> parts = name_components(s, &complete);
  std::vector<std::string> kept;
  for (auto& p : parts) {
    if (p.empty() || p == kAnonymous) continue;
    // A lambda's call operator is the lambda.
    if (p == "operator()" && !kept.empty() && kept.back().rfind("{lambda", 0) == 0) continue;
    kept.push_back(std::move(p));
  }
  if (kept.empty()) return std::string(demangled);
  std::string out = kept.size() >= 2 ? kept[kept.size() - 2] + "::" + kept.back() : kept.back();
  if (truncated && !complete) out += kTruncated;
  return out;
}

std::string short_frame(std::string_view frame) {
  // A native frame ends in its module in parentheses; a Python frame in its function's name.
  size_t open = frame.rfind(" (");
  if (frame.empty() || frame.back() != ')' || open == std::string_view::npos) return std::string(frame);
  std::string_view body = frame.substr(0, open);
  if (body.substr(0, 2) == "0x" || body.empty() || body[0] == '?') return std::string(frame);  // no function known
  std::string out;
  constexpr std::string_view kInlined = " inlined into ";
  for (size_t p = 0; p <= body.size();) {
    size_t end = body.find(kInlined, p);
    if (end == std::string_view::npos) end = body.size();
    std::string_view piece = body.substr(p, end - p);
    std::string_view where;
    if (size_t at = piece.rfind(" at "); at != std::string_view::npos) {
      std::string_view loc = piece.substr(at + 4);
      size_t colon = loc.rfind(':');
      bool is_loc = colon != std::string_view::npos && colon + 1 < loc.size() &&
                    loc.find_first_not_of("0123456789", colon + 1) == std::string_view::npos;
      if (is_loc) {
        where = loc;
        piece = piece.substr(0, at);
      }
    }
    if (!out.empty()) out += kInlined;
    out += piece == "?" ? std::string(piece) : short_function(piece);
    if (!where.empty() && where.size() <= kShortLocation) out += " at " + std::string(where);
    p = end + kInlined.size();
  }
  return out;
}

std::string short_call_site(std::string_view site) {
  std::string out;
  if (size_t colon = site.find(": ");
      colon != std::string_view::npos && site.substr(0, colon).find_first_of("()<>{}/") == std::string_view::npos) {
    out = std::string(site.substr(0, colon + 2));
    site.remove_prefix(colon + 2);
  }
  constexpr std::string_view kCaller = " < ";
  for (size_t p = 0; p <= site.size();) {
    size_t end = site.find(kCaller, p);
    if (end == std::string_view::npos) end = site.size();
    if (p != 0) out += kCaller;
    out += short_frame(site.substr(p, end - p));
    p = end + kCaller.size();
  }
  return out;
}

}  // namespace cuprobe::analysis
