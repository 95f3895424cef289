// See env_vars.h. The grammar of each kind, shared by the shim (while it loads: no allocation)
// and `cuprobe record`.
#include "env_vars.h"

#include <string.h>

namespace cuprobe::env {

namespace {

bool ascii_iequal(const char* a, const char* b) {
  for (; *a && *b; ++a, ++b) {
    char x = (*a >= 'A' && *a <= 'Z') ? char(*a + ('a' - 'A')) : *a;
    if (x != *b) return false;
  }
  return *a == 0 && *b == 0;
}

bool alerts_ok(const char* s) {
  static const char* const kWords[] = {"on", "off", "1", "0", "stderr"};
  for (const char* w : kWords) {
    if (strcmp(s, w) == 0) return true;
  }
  return strncmp(s, "file:", 5) == 0 && s[5] != 0;
}

}  // namespace

bool parse_decimal(const char* s, uint64_t* out) {
  if (s == nullptr || *s == 0) return false;
  uint64_t v = 0;
  for (const char* p = s; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    uint64_t d = uint64_t(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool parse_percent(const char* s, uint64_t* hundredths) {
  if (s == nullptr || *s < '0' || *s > '9') return false;
  uint64_t whole = 0;
  const char* p = s;
  for (; *p >= '0' && *p <= '9'; ++p) {
    whole = whole * 10 + uint64_t(*p - '0');
    if (whole > 100) return false;
  }
  uint64_t frac = 0;
  if (*p == '.') {
    ++p;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; ++p, ++digits) {
      if (digits == 2) return false;
      frac = frac * 10 + uint64_t(*p - '0');
    }
    if (digits == 0) return false;
    if (digits == 1) frac *= 10;
  }
  if (*p == '%') ++p;
  if (*p != 0) return false;
  uint64_t v = whole * 100 + frac;
  if (v > 10000) return false;
  *hundredths = v;
  return true;
}

bool parse_flag(const char* s, bool* on) {
  static const char* const kTrue[] = {"1", "true", "yes", "on"};
  static const char* const kFalse[] = {"0", "false", "no", "off"};
  for (const char* t : kTrue) {
    if (ascii_iequal(s, t)) {
      *on = true;
      return true;
    }
  }
  for (const char* f : kFalse) {
    if (ascii_iequal(s, f)) {
      *on = false;
      return true;
    }
  }
  return false;
}

int word_index(const Var& v, const char* s) {
  size_t len = strlen(s);
  int index = 0;
  for (const char* w = v.words; *w; ++index) {
    const char* bar = strchr(w, '|');
    size_t n = bar ? size_t(bar - w) : strlen(w);
    if (n == len && memcmp(w, s, n) == 0) return index;
    w += bar ? n + 1 : n;
  }
  return -1;
}

bool value_ok(const Var& v, const char* s) {
  if (s == nullptr || *s == 0) return false;
  uint64_t n = 0;
  bool on = false;
  trace::KeepMode mode;
  switch (v.kind) {
    case Kind::kFlag:
      return parse_flag(s, &on);
    case Kind::kNumber:
      return parse_decimal(s, &n) && n >= v.min && n <= v.max;
    case Kind::kWord:
      return word_index(v, s) >= 0;
    case Kind::kKeep:
      return parse_keep(s, &mode, &n);
    case Kind::kAlerts:
      return alerts_ok(s);
    case Kind::kText:
      return true;
    case Kind::kPercent:
      return parse_percent(s, &n);
  }
  return false;
}

}  // namespace cuprobe::env
