// Parser of fault plans; see fault_plan.h and docs/faults.md.
#include "fault_plan.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_names.h"

namespace cuprobe::faults {

namespace {

struct Group {
  const char* name;
  bool (*has)(int api);
};

bool flag(int api, uint64_t f) { return (kApis[api].flags & f) != 0; }
bool faultable(int api) { return flag(api, trace::kApiFaultable); }
bool is_cudnn(int api) { return kApis[api].library == trace::Library::kCudnn; }
bool named(int api, ApiId id) { return kApis[api].sig == id; }

const Group kGroups[] = {
    {"alloc", [](int a) { return faultable(a) && flag(a, trace::kApiDeviceAlloc); }},
    {"host-alloc", [](int a) { return faultable(a) && flag(a, trace::kApiHostAlloc); }},
    {"memcpy", [](int a) { return faultable(a) && flag(a, trace::kApiMemcpy); }},
    {"sync", [](int a) { return faultable(a) && flag(a, trace::kApiSync); }},
    {"launch", [](int a) { return faultable(a) && flag(a, trace::kApiCounted); }},
    {"cudnn-create", [](int a) { return named(a, ApiId::cudnnCreate); }},
    {"cudnn-execute", [](int a) { return named(a, ApiId::cudnnBackendExecute); }},
    {"cudnn-finalize", [](int a) { return named(a, ApiId::cudnnBackendFinalize); }},
    {"cudnn-find", [](int a) { return faultable(a) && is_cudnn(a) && strncmp(kApis[a].name, "cudnnFind", 9) == 0; }},
    {"cudnn-legacy-exec",
     [](int a) { return faultable(a) && flag(a, trace::kApiCudnnExec) && !named(a, ApiId::cudnnBackendExecute); }},
};

// The short names, each library's value (0: none). The CUDA runtime's and the driver's codes
// agree for all of them (cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY are both 2, ...).
struct ShortName {
  const char* name;
  int32_t cudart;  // also the driver's
  int32_t cudnn;
  int32_t nccl;
};
const ShortName kErrors[] = {
    {"OOM", 2 /* cudaErrorMemoryAllocation */, 4004 /* INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED */, 0},
    {"NOT_SUPPORTED", 801 /* cudaErrorNotSupported */, 3000, 0},
    {"NOT_SUPPORTED_SHAPE", 0, 3002, 0},
    {"NOT_SUPPORTED_LAYOUT", 0, 3004, 0},
    {"BAD_PARAM", 1 /* cudaErrorInvalidValue */, 2000, 4 /* ncclInvalidArgument */},
    {"INTERNAL_ERROR", 999 /* cudaErrorUnknown */, 4000, 3 /* ncclInternalError */},
    {"EXECUTION_FAILED", 719 /* cudaErrorLaunchFailure */, 5000, 0},
    {"NOT_INITIALIZED", 3 /* cudaErrorInitializationError */, 1001, 0},
};

// Each library's status enum, every name (common/error_names.h, generated from the vendor headers).
struct Family {
  trace::Library lib;
  const char* word;  // "CUDA runtime"
  const char* what;  // "CUDA runtime calls return cudaError_t"
  const errors::ErrorName* names;
  size_t n;
};
template <size_t N>
constexpr Family family(trace::Library lib, const char* word, const char* what, const errors::ErrorName (&names)[N]) {
  return Family{lib, word, what, names, N};
}
const Family kFamilies[] = {
    family(trace::Library::kCudart, "CUDA runtime", "CUDA runtime calls return cudaError_t", errors::kCudartErrors),
    family(trace::Library::kDriver, "driver", "driver calls return CUresult", errors::kDriverErrors),
    family(trace::Library::kCudnn, "cuDNN", "cuDNN calls return cudnnStatus_t", errors::kCudnnStatuses),
    family(trace::Library::kNccl, "NCCL", "NCCL calls return ncclResult_t", errors::kNcclResults),
};

const Family* family_of(trace::Library lib) {
  for (const auto& f : kFamilies) {
    if (f.lib == lib) return &f;
  }
  return nullptr;
}

void fail(char* err, size_t cap, const char* fmt, ...) {
  if (err == nullptr || cap == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
}

// A piece of the plan text: [b, e).
struct Span {
  const char* b;
  const char* e;
  size_t len() const { return size_t(e - b); }
  bool is(const char* s) const { return strlen(s) == len() && strncmp(b, s, len()) == 0; }
};

Span trim(Span s) {
  while (s.b < s.e && isspace(uint8_t(*s.b))) ++s.b;
  while (s.e > s.b && isspace(uint8_t(s.e[-1]))) --s.e;
  return s;
}

// Copies a value, resolving the escapes \, and \; (a backslash before anything else stays, so
// regular expressions keep theirs); false when it does not fit.
bool unescape(Span s, char* out, size_t cap) {
  size_t n = 0;
  for (const char* p = s.b; p < s.e; ++p) {
    char c = *p;
    if (c == '\\' && p + 1 < s.e && (p[1] == ',' || p[1] == ';')) c = *++p;
    if (n + 1 >= cap) return false;
    out[n++] = c;
  }
  out[n] = 0;
  return true;
}

// Next item of a list separated by `sep` (escapes honoured); advances *pos.
bool next_item(const char** pos, const char* end, const char* seps, Span* item) {
  const char* p = *pos;
  if (p >= end) return false;
  const char* b = p;
  while (p < end && strchr(seps, *p) == nullptr) p += (*p == '\\' && p + 1 < end) ? 2 : 1;
  if (p > end) p = end;
  *item = Span{b, p};
  *pos = p < end ? p + 1 : end;
  return true;
}

bool parse_u64(Span s, uint64_t* out) {
  if (s.len() == 0 || s.len() > 20) return false;
  uint64_t v = 0;
  for (const char* p = s.b; p < s.e; ++p) {
    if (!isdigit(uint8_t(*p))) return false;
    uint64_t d = uint64_t(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool parse_i64(Span s, int64_t* out) {
  bool neg = s.len() > 0 && *s.b == '-';
  uint64_t v;
  if (!parse_u64(Span{s.b + (neg ? 1 : 0), s.e}, &v) || v > uint64_t(INT64_MAX)) return false;
  *out = neg ? -int64_t(v) : int64_t(v);
  return true;
}

// A plain decimal number: digits, an optional fraction, an optional exponent ("0.25", "1e-3",
// ".5"); no sign, no hexadecimal, no nan or inf, nothing after it, and finite.
bool parse_double(Span s, double* out) {
  char buf[64];
  if (s.len() == 0 || s.len() >= sizeof buf) return false;
  const char* p = s.b;
  size_t digits = 0;
  while (p < s.e && isdigit(uint8_t(*p))) ++p, ++digits;
  if (p < s.e && *p == '.')
    for (++p; p < s.e && isdigit(uint8_t(*p)); ++p) ++digits;
  if (digits == 0) return false;
  if (p < s.e && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < s.e && (*p == '+' || *p == '-')) ++p;
    if (p == s.e || !isdigit(uint8_t(*p))) return false;
    while (p < s.e && isdigit(uint8_t(*p))) ++p;
  }
  if (p != s.e) return false;
  memcpy(buf, s.b, s.len());
  buf[s.len()] = 0;
  char* end = nullptr;
  double v = strtod(buf, &end);
  if (end != buf + s.len() || !__builtin_isfinite(v)) return false;
  *out = v;
  return true;
}

enum Number { kNumberOk, kNumberBad, kNumberTooLarge };

// "12", "1.5", ".5", "5." -> floor(value * mult), computed exactly (no floating point).
Number parse_scaled(Span s, uint64_t mult, uint64_t* out) {
  const char* p = s.b;
  uint64_t whole = 0;
  bool digits = false, overflow = false;
  for (; p < s.e && isdigit(uint8_t(*p)); ++p) {
    digits = true;
    overflow = overflow || __builtin_mul_overflow(whole, uint64_t(10), &whole) ||
               __builtin_add_overflow(whole, uint64_t(*p - '0'), &whole);
  }
  const char* frac_b = p;
  const char* frac_e = p;
  if (p < s.e && *p == '.') {
    frac_b = ++p;
    while (p < s.e && isdigit(uint8_t(*p))) ++p;
    frac_e = p;
    digits = digits || frac_e > frac_b;
  }
  if (!digits || p != s.e) return kNumberBad;
  uint64_t v;
  if (overflow || __builtin_mul_overflow(whole, mult, &v)) return kNumberTooLarge;
  // floor(0.d1d2...dn * mult), from the last digit: floor((floor(x) + d * mult) / 10) is exact.
  uint64_t frac = 0;
  for (const char* q = frac_e; q > frac_b; --q) frac = (frac + uint64_t(q[-1] - '0') * mult) / 10;
  if (__builtin_add_overflow(v, frac, &v)) return kNumberTooLarge;
  *out = v;
  return kNumberOk;
}

// "30", "30s", "1500ms", "2m", "1h" -> nanoseconds.
Number parse_duration(Span s, uint64_t* ns) {
  const char* p = s.b;
  while (p < s.e && (isdigit(uint8_t(*p)) || *p == '.')) ++p;
  Span unit{p, s.e};
  uint64_t mult;
  if (unit.len() == 0 || unit.is("s")) mult = 1'000'000'000ull;
  else if (unit.is("ms")) mult = 1'000'000ull;
  else if (unit.is("us")) mult = 1'000ull;
  else if (unit.is("ns")) mult = 1ull;
  else if (unit.is("m") || unit.is("min")) mult = 60'000'000'000ull;
  else if (unit.is("h")) mult = 3'600'000'000'000ull;
  else return kNumberBad;
  return parse_scaled(Span{s.b, p}, mult, ns);
}

// "0x" and exactly 16 hexadecimal digits.
bool parse_hash(Span s, uint64_t* out) {
  if (s.len() != 18 || s.b[0] != '0' || s.b[1] != 'x') return false;
  uint64_t v = 0;
  for (const char* p = s.b + 2; p < s.e; ++p) {
    int d = isdigit(uint8_t(*p)) ? *p - '0' : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10
            : (*p >= 'A' && *p <= 'F') ? *p - 'A' + 10 : -1;
    if (d < 0) return false;
    v = v << 4 | uint64_t(d);
  }
  *out = v;
  return true;
}

int api_by_name(Span s) {
  for (int i = 0; i < kApiCount; ++i)
    if (s.is(kApis[i].name)) return i;
  return -1;
}

// The family whose enum has this exact name, and its value.
const Family* named_in(Span s, int32_t* code) {
  for (const auto& f : kFamilies) {
    for (size_t i = 0; i < f.n; ++i) {
      if (s.is(f.names[i].name)) {
        *code = f.names[i].code;
        return &f;
      }
    }
  }
  return nullptr;
}

bool has_code(const Family& f, int32_t code) {
  for (size_t i = 0; i < f.n; ++i) {
    if (f.names[i].code == code) return true;
  }
  return false;
}

bool lookup_error(Span s, trace::Library lib, int32_t* code) {
  int64_t n;
  if (parse_i64(s, &n)) {
    if (n <= 0 || n > INT32_MAX) return false;
    *code = int32_t(n);
    return true;
  }
  // A vendor name (cudaErrorIllegalAddress, CUDA_ERROR_ECC_UNCORRECTABLE, CUDNN_STATUS_BAD_PARAM,
  // ncclSystemError): for calls of its library; a runtime name also for driver calls and the
  // other way round where the other enum has the same code (the two share most of them). A
  // success (0) is not an error.
  int32_t v = 0;
  if (const Family* f = named_in(s, &v)) {
    if (v == 0) return false;
    bool runtime_driver = (f->lib == trace::Library::kCudart && lib == trace::Library::kDriver) ||
                          (f->lib == trace::Library::kDriver && lib == trace::Library::kCudart);
    const Family* mine = family_of(lib);
    if (f->lib == lib || (runtime_driver && mine != nullptr && has_code(*mine, v))) {
      *code = v;
      return true;
    }
    // CUDNN_STATUS_ before a short name is that short name for the other libraries (docs/faults.md).
    if (f->lib != trace::Library::kCudnn || s.len() <= 13) return false;
    s.b += 13;
  }
  for (const auto& e : kErrors) {
    if (!s.is(e.name)) continue;
    *code = lib == trace::Library::kCudnn ? e.cudnn : lib == trace::Library::kNccl ? e.nccl : e.cudart;
    return *code != 0;
  }
  return false;
}

bool known_error(Span s) {
  int32_t c;
  for (const auto& f : kFamilies) {
    if (lookup_error(s, f.lib, &c)) return true;
  }
  return false;
}

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// One rule's text -> Rule, in steps: the CALLS:ERROR head (calls, then error), then each
// KEY OP VALUE option, then checks across options. Every message names the rule and quotes it.
class RuleParser {
 public:
  RuleParser(int index, Rule* r, char* err, size_t cap) : index_(index), r_(r), err_(err), cap_(cap) {}

  bool parse(Span text) {
    const char* pos = text.b;
    Span head;
    next_item(&pos, text.e, ",", &head);
    if (!start(text) || !parse_head(trim(head))) return false;
    Span item;
    while (next_item(&pos, text.e, ",", &item)) {
      item = trim(item);
      if (item.len() != 0 && !parse_option(item)) return false;
    }
    return finish();
  }

 private:
  bool start(Span text) {
    Rule* r = r_;
    memset(r, 0, sizeof *r);
    r->engine = -1;
    r->device = -1;
    r->rank = -1;
    r->pid = -1;
    r->probability = -1;
    snprintf(r->name, sizeof r->name, "rule%d", index_ + 1);
    size_t tl = text.len() < sizeof r->text - 1 ? text.len() : sizeof r->text - 1;
    if (text.len() >= sizeof r->text) {
      fail(err_, cap_, "fault rule %d is longer than %zu characters", index_ + 1, sizeof r->text - 1);
      return false;
    }
    memcpy(r->text, text.b, tl);
    r->text[tl] = 0;
    where_ = r->text;  // messages quote the rule
    return true;
  }

  // CALLS ':' ERROR
  bool parse_head(Span head) {
    const char* colon = static_cast<const char*>(memchr(head.b, ':', head.len()));
    if (colon == nullptr) {
      fail(err_, cap_, "fault rule %d ('%s'): expected CALLS:ERROR at its start, for example alloc:OOM or cudnn-execute:NOT_SUPPORTED",
           index_ + 1, where_);
      return false;
    }
    Span calls = trim(Span{head.b, colon});
    Span error = trim(Span{colon + 1, head.e});
    if (calls.len() == 0) {
      fail(err_, cap_, "fault rule %d ('%s'): no calls named before ':'; groups: %s, or an API name", index_ + 1, where_,
           group_names());
      return false;
    }
    return parse_calls(calls) && parse_error(error);
  }

  // Call groups and API names joined by '|'.
  bool parse_calls(Span calls) {
    const char* cp = calls.b;
    Span one;
    while (next_item(&cp, calls.e, "|", &one)) {
      one = trim(one);
      bool found = false;
      for (const auto& g : kGroups) {
        if (!one.is(g.name)) continue;
        found = true;
        for (int a = 0; a < kApiCount; ++a)
          if (g.has(a)) r_->apis[a / 64] |= 1ull << (a % 64);
      }
      if (found) continue;
      int a = api_by_name(one);
      if (a < 0) {
        fail(err_, cap_, "fault rule %d ('%s'): '%.*s' is neither a call group (%s) nor an intercepted API name", index_ + 1,
             where_, int(one.len()), one.b, group_names());
        return false;
      }
      if (!faultable(a)) {
        fail(err_, cap_,
             "fault rule %d ('%s'): %s cannot take faults (it is recorded only); use an allocation, copy, "
             "synchronization, cuDNN handle, execution, finalize or search call, or an NCCL communicator set-up",
             index_ + 1, where_, kApis[a].name);
        return false;
      }
      r_->apis[a / 64] |= 1ull << (a % 64);
    }
    return true;
  }

  // The error, as a code of each library the calls belong to.
  bool parse_error(Span error) {
    bool in_lib[8] = {};
    for (int a = 0; a < kApiCount; ++a) {
      if (r_->apis[a / 64] & (1ull << (a % 64))) in_lib[int(kApis[a].library) & 7] = true;
    }
    if (error.len() == 0) {
      fail(err_, cap_,
           "fault rule %d ('%s'): no error after ':'; names: OOM, NOT_SUPPORTED, NOT_SUPPORTED_SHAPE, BAD_PARAM, "
           "INTERNAL_ERROR, EXECUTION_FAILED, a name of the library's status enum (cudaErrorIllegalAddress, "
           "CUDA_ERROR_ECC_UNCORRECTABLE, CUDNN_STATUS_BAD_PARAM, ncclSystemError, ...) or a number",
           index_ + 1, where_);
      return false;
    }
    if (error.is("DELAY")) {  // no error: the call waits (delay=) and then runs
      r_->delay_only = true;
      return true;
    }
    int32_t named = -1;
    if (named_in(error, &named) != nullptr && named == 0) {
      fail(err_, cap_, "fault rule %d ('%s'): %.*s is its library's success, not an error", index_ + 1, where_,
           int(error.len()), error.b);
      return false;
    }
    if (!known_error(error)) {
      fail(err_, cap_,
           "fault rule %d ('%s'): unknown error '%.*s'; names: OOM, NOT_SUPPORTED, NOT_SUPPORTED_SHAPE, "
           "NOT_SUPPORTED_LAYOUT, BAD_PARAM, INTERNAL_ERROR, EXECUTION_FAILED, NOT_INITIALIZED, any name of "
           "cudaError_t, "
           "CUresult, cudnnStatus_t or ncclResult_t other than its success (docs/faults.md), or a positive number",
           index_ + 1, where_, int(error.len()), error.b);
      return false;
    }
    struct Slot {
      trace::Library lib;
      int32_t* code;
    };
    const Slot slots[] = {{trace::Library::kCudart, &r_->cudart_code},
                          {trace::Library::kDriver, &r_->driver_code},
                          {trace::Library::kCudnn, &r_->cudnn_code},
                          {trace::Library::kNccl, &r_->nccl_code}};
    for (const Slot& sl : slots) {
      if (!in_lib[int(sl.lib) & 7] || lookup_error(error, sl.lib, sl.code)) continue;
      // A name the rule's calls cannot return: which calls, and what they return.
      const Family* f = family_of(sl.lib);
      const char* api = "";
      for (int a = 0; a < kApiCount && !*api; ++a) {
        if ((r_->apis[a / 64] & (1ull << (a % 64))) && kApis[a].library == sl.lib) api = kApis[a].name;
      }
      char some[200];
      size_t used = 0;
      some[0] = 0;
      for (size_t i = 1; f != nullptr && i < f->n && i <= 4; ++i) {
        int n = snprintf(some + used, sizeof some - used, "%s%s", used ? ", " : "", f->names[i].name);
        if (n < 0 || size_t(n) >= sizeof some - used) break;
        used += size_t(n);
      }
      fail(err_, cap_,
           "fault rule %d ('%s'): %s calls (%s) cannot return %.*s: %s (%s, ... %zu names in all, "
           "docs/faults.md), or a short name they have, or a number",
           index_ + 1, where_, f != nullptr ? f->word : "these", api, int(error.len()), error.b,
           f != nullptr ? f->what : "", some, f != nullptr ? f->n - 1 : size_t(0));
      return false;
    }
    return true;
  }

  // KEY OP VALUE: the keys with an operator of their own (size>=, problem~), then KEY=VALUE.
  bool parse_option(Span item) {
    item_ = item;
    const char* op = item.b;
    while (op < item.e && (isalnum(uint8_t(*op)) || *op == '-' || *op == '_')) ++op;
    Span key{item.b, op};
    Span oper{op, op};
    while (oper.e < item.e && strchr("=<>~", *oper.e)) ++oper.e;
    Span val = trim(Span{oper.e, item.e});
    if (!unescape(val, value_, sizeof value_)) {
      fail(err_, cap_, "fault rule %d ('%s'): the value of '%.*s' is too long", index_ + 1, where_, int(key.len()), key.b);
      return false;
    }
    Span v{value_, value_ + strlen(value_)};
    bool eq = oper.is("=");
    if (key.len() == 0) return bad("expected KEY=VALUE");
    if (key.is("sticky")) {
      // A corrupted context (issue 32): once the rule fires, every later faultable call of the
      // process on that device fails too (the shim's sticky state, shim/faults.cpp).
      if (oper.len() != 0 && !(eq && (v.is("1") || v.is("true")))) return bad("write sticky (no value)");
      r_->sticky = true;
      return true;
    }
    if (key.is("size") || key.is("min-size")) {
      if (!(key.is("size") ? oper.is(">=") : eq)) return bad("write size>=BYTES (or min-size=BYTES)");
      if (!parse_bytes(v.b, v.len(), &r_->min_size)) return bad("not a byte count (1024, 64MiB, 1.5GiB, 2GB)");
      return true;
    }
    if (key.is("problem")) return parse_problem(oper, v);
    if (!eq) return bad("expected KEY=VALUE");
    return counting_key(key) ? parse_counting(key, v) : parse_matching(key, v);
  }

  bool parse_problem(Span oper, Span v) {
    Rule* r = r_;
    if (!oper.is("~") && !oper.is("=")) {
      return bad("write problem=TEXT (a substring of the readable signature, or its 0x hash) or problem~REGEX");
    }
    if (r->problem_kind != kProblemAny) return bad("a rule has one problem= or problem~");
    if (v.len() == 0) return bad("an empty problem matches everything; leave the key out instead");
    if (v.len() >= sizeof r->problem) return bad("a problem of at most 255 characters");
    if (oper.is("~")) {
      char msg[256];
      r->problem_re = safe_regex::compile(value_, msg, sizeof msg);
      if (r->problem_re == nullptr) {
        char why[320];
        snprintf(why, sizeof why, "regex refused: %s (docs/faults.md has the dialect)", msg);
        return bad(why);
      }
      r->problem_kind = kProblemRegex;
    } else {
      r->problem_kind = parse_hash(v, &r->problem_hash) ? kProblemHash : kProblemSubstring;
    }
    snprintf(r->problem, sizeof r->problem, "%s", value_);
    return true;
  }

  static bool counting_key(Span key) {
    static const char* const kCounting[] = {"name", "nth", "every", "first", "after", "max", "at", "p", "probability", "seed"};
    for (const char* k : kCounting)
      if (key.is(k)) return true;
    return false;
  }

  // Which matching calls fail: name, nth, every, first, after, max, at, p, seed.
  bool parse_counting(Span key, Span v) {
    Rule* r = r_;
    if (key.is("name")) {
      if (v.len() == 0 || v.len() >= sizeof r->name) return bad("a name of 1 to 47 characters");
      for (const char* p = v.b; p < v.e; ++p)
        if (!isalnum(uint8_t(*p)) && *p != '-' && *p != '_' && *p != '.') return bad("names use letters, digits, - _ .");
      snprintf(r->name, sizeof r->name, "%s", value_);
    } else if (key.is("nth") || key.is("every") || key.is("first") || key.is("after") || key.is("max")) {
      uint64_t n;
      bool zero_ok = key.is("after");
      if (!parse_u64(v, &n) || (n == 0 && !zero_ok)) {
        return bad(zero_ok ? "not a whole number (0 to 18446744073709551614)" : "not a whole number >= 1");
      }
      if (key.is("after") && n == UINT64_MAX) return bad("too large");
      (key.is("nth") ? r->nth : key.is("every") ? r->every : key.is("first") ? r->first : key.is("after") ? r->after : r->max) = n;
      if (key.is("after")) r->after = n + 1;  // stored +1 so that after=0 is distinguishable from "not given"
    } else if (key.is("at")) {
      const char* ap = v.b;
      Span n;
      while (next_item(&ap, v.e, "+", &n)) {
        uint64_t k;
        if (!parse_u64(trim(n), &k) || k == 0) return bad("a list of call numbers >= 1 joined by '+', for example at=3+7");
        if (r->n_at == kMaxAt) return bad("at most 64 call numbers");
        r->at[r->n_at++] = k;
      }
      if (r->n_at == 0) return bad("a list of call numbers joined by '+'");
    } else if (key.is("p") || key.is("probability")) {
      if (!parse_double(v, &r->probability) || !(r->probability >= 0 && r->probability <= 1)) {
        r->probability = -1;
        return bad("a probability in [0, 1], written as a decimal number (0.25, 1e-3)");
      }
    } else {  // seed
      if (!parse_u64(v, &r->seed)) return bad("a whole number from 0 to 18446744073709551615");
      seed_given_ = true;
      r->seed_given = true;
    }
    return true;
  }

  // Which calls match: engine, device, rank, pid, comm, comm-size, from, until, scope (and delay: what a fired
  // rule does besides failing); any other key is unknown.
  bool parse_matching(Span key, Span v) {
    Rule* r = r_;
    if (key.is("engine") || key.is("algo")) {
      if (!parse_i64(v, &r->engine) || r->engine < 0) return bad("an engine global index (or legacy algorithm) >= 0");
    } else if (key.is("rank") && v.is("random")) {
      r->rank = kRankRandom;  // one rank of the job, picked from the seed (random_rank)
    } else if (key.is("device") || key.is("rank")) {
      int64_t n;
      if (!parse_i64(v, &n) || n < 0 || n > 1 << 20) return bad("a number >= 0");
      (key.is("device") ? r->device : r->rank) = int32_t(n);
    } else if (key.is("comm-size")) {
      // The communicator's size (issue 32): a job's tensor-parallel groups apart from its world.
      int64_t n;
      if (!parse_i64(v, &n) || n < 1 || n > 1 << 24) return bad("a number of ranks >= 1");
      r->comm_size = int32_t(n);
    } else if (key.is("pid")) {
      if (!parse_i64(v, &r->pid) || r->pid <= 0) return bad("a process id");
    } else if (key.is("comm") || key.is("process")) {
      if (v.len() == 0 || v.len() >= sizeof r->comm) return bad("a command name of 1 to 63 characters");
      snprintf(r->comm, sizeof r->comm, "%s", value_);
    } else if (key.is("delay")) {
      // The call waits this long before it runs (or fails): a hang for watchdog tests.
      uint64_t ns = 0;
      if (parse_duration(v, &ns) != kNumberOk || ns == 0 || ns > 86400ull * 1000000000ull) {
        return bad("a wait of more than 0 and at most a day: 30, 30s, 1500ms, 10m");
      }
      r->delay_ns = ns;
    } else if (key.is("from") || key.is("until")) {
      uint64_t ns = 0;
      Number got = parse_duration(v, &ns);
      if (got == kNumberTooLarge) return bad("too large: at most 18446744073709551615ns (about 584 years)");
      if (got != kNumberOk) return bad("a time since the process started: 30, 30s, 1500ms, 2m, 1h");
      if (key.is("until") && ns == 0) return bad("until=0 ends before anything runs; leave until out for no end");
      (key.is("from") ? r->from_ns : r->until_ns) = ns;
    } else if (key.is("scope")) {
      if (v.is("process")) r->scope = kScopeProcess;
      else if (v.is("thread")) r->scope = kScopeThread;
      else return bad("scope=process (calls counted over the process) or scope=thread (counted per thread)");
    } else {
      return bad(
          "unknown key; keys: name, nth, every, first, after, at, p, seed, max, sticky, size>=, problem=, problem~, "
          "engine, device, rank, pid, comm, comm-size, delay, from, until, scope");
    }
    return true;
  }

  // Checks across options.
  bool finish() {
    if (r_->until_ns != 0 && r_->until_ns <= r_->from_ns) {
      fail(err_, cap_, "fault rule %d ('%s'): 'until' must come after 'from'", index_ + 1, where_);
      return false;
    }
    if (r_->delay_only && r_->delay_ns == 0) {
      fail(err_, cap_, "fault rule %d ('%s'): DELAY needs delay=TIME (how long the call waits before it runs)",
           index_ + 1, where_);
      return false;
    }
    if (r_->sticky && r_->cudart_code == 0 && r_->driver_code == 0) {
      fail(err_, cap_,
           "fault rule %d ('%s'): sticky is a device fault: the rule must name CUDA runtime or driver calls "
           "(alloc, memcpy, sync, or their API names), whose failure corrupts the context",
           index_ + 1, where_);
      return false;
    }
    if (r_->comm_size != 0) {
      // Only NCCL's collectives, point-to-point calls and set-ups of a known size have one.
      for (int a = 0; a < kApiCount; ++a) {
        if (!(r_->apis[a / 64] & (1ull << (a % 64)))) continue;
        if (kApis[a].library == trace::Library::kNccl && ApiId(a) != ApiId::ncclCommSplit) continue;
        fail(err_, cap_,
             "fault rule %d ('%s'): comm-size picks NCCL calls by their communicator's size, and %s has none%s; "
             "name NCCL collectives (ncclAllReduce, ...), ncclSend, ncclRecv or communicator set-ups",
             index_ + 1, where_, kApis[a].name, ApiId(a) == ApiId::ncclCommSplit ? " before it completes" : "");
        return false;
      }
    }
    if (seed_given_ && r_->probability < 0 && r_->rank != kRankRandom) {
      fail(err_, cap_, "fault rule %d ('%s'): a seed without p=PROBABILITY or rank=random does nothing", index_ + 1,
           where_);
      return false;
    }
    return true;
  }

  bool bad(const char* what) {
    fail(err_, cap_, "fault rule %d ('%s'): '%.*s': %s", index_ + 1, where_, int(item_.len()), item_.b, what);
    return false;
  }

  int index_;
  Rule* r_;
  char* err_;
  size_t cap_;
  const char* where_ = "";
  bool seed_given_ = false;
  Span item_{nullptr, nullptr};
  char value_[300];
};

bool parse_rule(Span text, int index, Rule* r, char* err, size_t cap) {
  return RuleParser(index, r, err, cap).parse(text);
}

}  // namespace

const char* group_names() {
  return "alloc, host-alloc, memcpy, sync, launch, cudnn-create, cudnn-execute, cudnn-finalize, cudnn-find, "
         "cudnn-legacy-exec";
}

int random_rank(uint64_t seed, int world_size) {
  if (world_size <= 0) return -1;
  return int(splitmix(seed ^ 0x72616e6b72616e64ull) % uint64_t(world_size));  // "rankrand"
}

const char* error_name(trace::Library lib, int32_t code) {
  const Family* f = family_of(lib);
  for (size_t i = 0; f != nullptr && i < f->n; ++i) {
    if (f->names[i].code == code) return f->names[i].name;
  }
  return nullptr;
}

bool error_code(const char* name, trace::Library lib, int32_t* code) {
  return lookup_error(Span{name, name + strlen(name)}, lib, code);
}

bool parse_bytes(const char* s, size_t len, uint64_t* out) {
  if (s == nullptr) return false;
  Span sp = trim(Span{s, s + len});
  const char* p = sp.b;
  while (p < sp.e && (isdigit(uint8_t(*p)) || *p == '.')) ++p;
  Span unit = trim(Span{p, sp.e});
  uint64_t mult;
  if (unit.len() == 0 || unit.is("B")) mult = 1;
  else if (unit.is("K") || unit.is("KiB")) mult = 1ull << 10;
  else if (unit.is("M") || unit.is("MiB")) mult = 1ull << 20;
  else if (unit.is("G") || unit.is("GiB")) mult = 1ull << 30;
  else if (unit.is("T") || unit.is("TiB")) mult = 1ull << 40;
  else if (unit.is("KB")) mult = 1'000ull;
  else if (unit.is("MB")) mult = 1'000'000ull;
  else if (unit.is("GB")) mult = 1'000'000'000ull;
  else if (unit.is("TB")) mult = 1'000'000'000'000ull;
  else return false;
  return parse_scaled(Span{sp.b, p}, mult, out) == kNumberOk;
}

bool parse_plan(const char* text, Plan* plan, char* err, size_t err_cap) {
  memset(plan, 0, sizeof *plan);
  if (text == nullptr) return true;
  const char* end = text + strlen(text);
  const char* pos = text;
  Span item;
  while (next_item(&pos, end, ";\n", &item)) {
    item = trim(item);
    if (item.len() == 0 || *item.b == '#') continue;
    if (plan->n == kMaxRules) {
      fail(err, err_cap, "a fault plan holds at most %d rules", kMaxRules);
      free_plan(plan);
      return false;
    }
    Rule& r = plan->rules[plan->n];
    if (!parse_rule(item, plan->n, &r, err, err_cap)) {
      safe_regex::release(r.problem_re);
      r.problem_re = nullptr;
      free_plan(plan);
      return false;
    }
    for (int i = 0; i < plan->n; ++i) {
      if (strcmp(plan->rules[i].name, r.name) != 0) continue;
      fail(err, err_cap, "fault rules %d and %d are both named '%s'; names must differ", i + 1, plan->n + 1, r.name);
      safe_regex::release(r.problem_re);
      r.problem_re = nullptr;
      free_plan(plan);
      return false;
    }
    if (r.problem_kind == kProblemSubstring || r.problem_kind == kProblemRegex) plan->uses_problem_text = true;
    ++plan->n;
  }
  return true;
}

void free_plan(Plan* plan) {
  for (int i = 0; i < plan->n; ++i) {
    safe_regex::release(plan->rules[i].problem_re);
    plan->rules[i].problem_re = nullptr;
  }
  plan->n = 0;
}

bool parse_mem_cap(const char* text, MemCap* cap, char* err, size_t err_cap) {
  memset(cap, 0, sizeof *cap);
  if (text == nullptr) text = "";
  const char* end = text + strlen(text);
  const char* pos = text;
  Span item;
  while (next_item(&pos, end, ",", &item)) {
    item = trim(item);
    if (item.len() == 0) continue;
    int slot = kCapDevices;
    const char* eq = static_cast<const char*>(memchr(item.b, '=', item.len()));
    Span limit = item;
    if (eq != nullptr) {
      Span dev = trim(Span{item.b, eq});
      uint64_t d;
      if (!dev.is("all")) {
        if (!parse_u64(dev, &d) || d >= uint64_t(kCapDevices)) {
          fail(err, err_cap, "memory cap '%.*s': '%.*s' is not a device index (0..%d) or 'all'", int(item.len()), item.b,
               int(dev.len()), dev.b, kCapDevices - 1);
          return false;
        }
        slot = int(d);
      }
      limit = trim(Span{eq + 1, item.e});
    }
    if (cap->bytes[slot] != 0 || cap->fraction[slot] != 0) {
      fail(err, err_cap, "memory cap '%.*s': %s has a cap already", int(item.len()), item.b,
           slot == kCapDevices ? "every device" : "this device");
      return false;
    }
    if (limit.len() > 1 && limit.e[-1] == '%') {
      double pct;
      if (!parse_double(Span{limit.b, limit.e - 1}, &pct) || pct <= 0 || pct > 100) {
        fail(err, err_cap, "memory cap '%.*s': a percentage must be in (0, 100]", int(item.len()), item.b);
        return false;
      }
      cap->fraction[slot] = pct / 100.0;
    } else if (!parse_bytes(limit.b, limit.len(), &cap->bytes[slot]) || cap->bytes[slot] == 0) {
      fail(err, err_cap, "memory cap '%.*s': expected BYTES (8GiB, 8000MB, 8589934592) or PERCENT (25%%), optionally "
           "DEVICE=... per device", int(item.len()), item.b);
      return false;
    }
    cap->any = true;
  }
  if (!cap->any) {
    fail(err, err_cap, "memory cap is empty: give BYTES or PERCENT, for example 8GiB or 25%%");
    return false;
  }
  return true;
}

uint64_t cap_bytes(const MemCap& cap, int device, uint64_t (*total)(int device, void* ctx), void* ctx) {
  if (device < 0 || device >= kCapDevices) return 0;
  const int slots[] = {device, kCapDevices};
  for (int slot : slots) {
    if (cap.bytes[slot]) return cap.bytes[slot];
    if (cap.fraction[slot] > 0) return uint64_t(double(total(device, ctx)) * cap.fraction[slot]);
  }
  return 0;
}

bool draw(const Rule& r, int rule_index, uint64_t k) {
  if (r.probability < 0) return true;
  uint64_t h = splitmix(splitmix(r.seed ^ (uint64_t(rule_index + 1) << 48)) ^ k);
  double u = double(h >> 11) * (1.0 / 9007199254740992.0);
  return u < r.probability;
}

bool triggers_fire(const Rule& r, int rule_index, uint64_t k) {
  if (r.nth && k != r.nth) return false;
  if (r.every && k % r.every != 0) return false;
  if (r.first && k > r.first) return false;
  if (r.after && k < r.after) return false;  // after holds n+1: fires from call n+1 on
  if (r.n_at) {
    bool hit = false;
    for (int i = 0; i < r.n_at && !hit; ++i) hit = r.at[i] == k;
    if (!hit) return false;
  }
  return draw(r, rule_index, k);
}

}  // namespace cuprobe::faults
