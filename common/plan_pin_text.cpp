// See plan_pin_text.h.
#include "plan_pin_text.h"

#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problem_text.h"

namespace cuprobe::pins {

namespace {

bool parse_u64(const char* s, const char* end, int base, uint64_t* out) {
  if (s == end) return false;
  uint64_t v = 0;
  for (; s < end; ++s) {
    int d;
    if (*s >= '0' && *s <= '9') d = *s - '0';
    else if (base == 16 && *s >= 'a' && *s <= 'f') d = *s - 'a' + 10;
    else if (base == 16 && *s >= 'A' && *s <= 'F') d = *s - 'A' + 10;
    else return false;
    if (v > (UINT64_MAX - uint64_t(d)) / uint64_t(base)) return false;
    v = v * uint64_t(base) + uint64_t(d);
  }
  *out = v;
  return true;
}

bool parse_i64(const char* s, const char* end, int64_t* out) {
  bool neg = s < end && *s == '-';
  uint64_t v = 0;
  if (!parse_u64(s + (neg ? 1 : 0), end, 10, &v) || v > uint64_t(INT64_MAX)) return false;
  *out = neg ? -int64_t(v) : int64_t(v);
  return true;
}

bool parse_ms(const char* s, const char* end, float* out) {
  char buf[32];
  size_t n = size_t(end - s);
  if (n == 0 || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = 0;
  char* stop = nullptr;
  double v = strtod(buf, &stop);
  if (stop != buf + n || !(v >= -1 && v < 1e9)) return false;
  *out = float(v);
  return true;
}

// The knob text of a pin ("tile_size=4,stages=3", names as render_knobs writes them, "k<type>" for
// knobs without a name) as knob types and values, knobs at -1 left out; false when a word is not
// one render_knobs writes.
bool parse_knobs(const char* text, Pin* p) {
  p->n_knobs = 0;
  for (const char* s = text; *s;) {
    const char* eq = strchr(s, '=');
    if (eq == nullptr || eq == s || p->n_knobs >= kMaxPinKnobs) return false;
    const char* end = strchr(eq, ',');
    if (end == nullptr) end = eq + strlen(eq);
    int type = -1;
    size_t len = size_t(eq - s);
    for (int k = 0; k < trace::kBlasKnobBase + 9 && type < 0; ++k) {
      const char* name = knob_text(k);
      if (name && strlen(name) == len && memcmp(name, s, len) == 0) type = k;
      if (k == CUDNN_KNOB_TYPE_COUNTS) k = trace::kBlasKnobBase;  // then cuBLASLt's configuration names
    }
    uint64_t u = 0;
    if (type < 0 && len > 1 && *s == 'k' && parse_u64(s + 1, eq, 10, &u) && u < 4096) type = int(u);
    int64_t value = 0;
    if (type < 0 || !parse_i64(eq + 1, end, &value)) return false;
    // A knob at -1 is one the configuration leaves to the engine (cuDNN's log lists those too):
    // not part of the plan's identity, as the shim records it.
    if (value != -1) {
      p->knob_types[p->n_knobs] = type;
      p->knob_values[p->n_knobs] = value;
      p->n_knobs++;
    }
    s = *end ? end + 1 : end;
  }
  return true;
}

// Calls `f(begin, end)` for each "pin" string of the file's text; false when one is malformed.
template <typename F>
bool each_pin_string(const char* text, size_t len, F f) {
  const char* end = text + len;
  for (const char* s = text; (s = static_cast<const char*>(memmem(s, size_t(end - s), "\"pin\"", 5))) != nullptr;) {
    s += 5;
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) ++s;
    if (s >= end || *s != ':') continue;  // the word as a value, not a key
    ++s;
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) ++s;
    if (s >= end || *s != '"') return false;
    const char* b = ++s;
    while (s < end && *s != '"' && *s != '\\') ++s;
    if (s >= end || *s != '"') return false;
    if (!f(b, s)) return false;
  }
  return true;
}

}  // namespace

// One "pin" string: space-separated KEY=VALUE words (docs/plan-pinning.md).
bool parse_pin(const char* s, const char* end, Pin* p) {
  memset(p, 0, sizeof *p);
  p->engine = -1;
  p->math = -1;
  p->determinism = -1;
  p->time_ms = -1;
  p->search_ms = -1;
  bool has_hash = false, has_engine = false, has_kind = false;
  char knobs[512] = "";
  while (s < end) {
    while (s < end && *s == ' ') ++s;
    const char* w = s;
    while (s < end && *s != ' ') ++s;
    if (w == s) break;
    const char* eq = static_cast<const char*>(memchr(w, '=', size_t(s - w)));
    if (eq == nullptr) return false;
    const char* v = eq + 1;
    uint64_t u = 0;
    int64_t i = 0;
    switch (eq - w == 1 ? *w : 0) {
      case 'h': if (!parse_u64(v, s, 16, &p->hash)) return false; has_hash = true; break;
      case 'a': if (!parse_u64(v, s, 10, &u) || u > UINT32_MAX) return false; p->align = uint32_t(u); break;
      case 'g': if (!parse_u64(v, s, 16, &u) || u > UINT32_MAX) return false; p->gpu = uint32_t(u); break;
      case 'v': if (!parse_i64(v, s, &p->cudnn)) return false; break;
      case 'e': if (!parse_i64(v, s, &p->engine)) return false; has_engine = true; break;
      case 'm': if (!parse_i64(v, s, &i)) return false; p->math = int32_t(i); break;
      case 'd': if (!parse_i64(v, s, &i)) return false; p->determinism = int32_t(i); break;
      case 't': if (!parse_ms(v, s, &p->time_ms)) return false; break;
      case 'c': if (!parse_ms(v, s, &p->search_ms)) return false; break;
      case 'k':
        if (size_t(s - v) >= sizeof knobs) return false;
        memcpy(knobs, v, size_t(s - v));
        knobs[s - v] = 0;
        break;
      case 's':
        if (s - v == 7 && memcmp(v, "backend", 7) == 0) p->legacy = 0;
        else if (s - v == 6 && memcmp(v, "legacy", 6) == 0) p->legacy = 1;
        else return false;
        has_kind = true;
        break;
      default: break;  // words of newer writers
    }
  }
  if (!has_hash || !has_engine || !has_kind) return false;
  p->key = plan_key(p->engine, knobs);
  p->answerable = !p->legacy && parse_knobs(knobs, p) ? 1 : 0;
  if (p->answerable) {
    // The plan's identity as the shim computes it: knobs sorted by type, those at -1 left out.
    trace::Knob sorted[kMaxPinKnobs];
    int n = 0;
    for (int i = 0; i < p->n_knobs; ++i) {
      int j = n++;
      for (; j > 0 && sorted[j - 1].type > p->knob_types[i]; --j) sorted[j] = sorted[j - 1];
      sorted[j] = trace::Knob{p->knob_types[i], 0, p->knob_values[i]};
    }
    char text[512];
    if (render_knobs(sorted, n, text, sizeof text) < sizeof text) p->key = plan_key(p->engine, text);
  }
  return true;
}

size_t format_pin(const PinWords& w, char* out, size_t cap) {
  size_t len = 0;
  auto add = [&](const char* fmt, auto... args) {
    int n = snprintf(len < cap ? out + len : nullptr, len < cap ? cap - len : 0, fmt, args...);
    if (n > 0) len += size_t(n);
  };
  add("h=%016llx s=%s e=%lld", (unsigned long long)w.hash, w.legacy ? "legacy" : "backend", (long long)w.engine);
  if (w.align) add(" a=%u", unsigned(w.align));
  if (*w.gpu) add(" g=%08x", unsigned(gpu_name_hash(w.gpu)));
  if (w.cudnn > 0) add(" v=%lld", (long long)w.cudnn);
  if (w.legacy) {
    add(" m=%d d=%d", int(w.math), w.deterministic ? 1 : 0);
  } else if (*w.knobs) {
    add(" k=%s", w.knobs);
  }
  if (w.time_ms >= 0) add(" t=%.6f", w.time_ms);
  if (w.search_ms >= 0) add(" c=%.3f", w.search_ms);
  if (cap > 0 && len >= cap) out[cap - 1] = 0;
  return len;
}

uint64_t plan_key(int64_t engine, const char* knobs_text) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < 8; ++i) h = (h ^ uint8_t(uint64_t(engine) >> (8 * i))) * 1099511628211ull;
  for (const char* c = knobs_text; *c; ++c) h = (h ^ uint8_t(*c)) * 1099511628211ull;
  return h;
}

bool parse_pins(const char* text, size_t len, Pin* out, size_t* n, size_t* bad_at) {
  size_t count = 0;
  Pin scratch;
  bool ok = each_pin_string(text, len, [&](const char* b, const char* e) {
    if (!parse_pin(b, e, out != nullptr ? &out[count] : &scratch)) {
      *bad_at = size_t(b - text);
      return false;
    }
    ++count;
    return true;
  });
  *n = count;
  return ok;
}

void sort_pins(Pin* p, size_t n) {
  for (size_t gap = n / 2; gap > 0; gap /= 2) {
    for (size_t i = gap; i < n; ++i) {
      Pin tmp = p[i];
      size_t j = i;
      for (; j >= gap && p[j - gap].hash > tmp.hash; j -= gap) p[j] = p[j - gap];
      p[j] = tmp;
    }
  }
}

}  // namespace cuprobe::pins
