// The fault plans' regular expressions: see safe_regex.h.
//
// A pattern is parsed into a small tree, then emitted back to front into a Thompson NFA (every
// state knows its successor when it is made, so no patching lists are needed), and a search runs
// the NFA over the text with two sparse state sets (Pike VM without captures).
#include "safe_regex.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace cuprobe::safe_regex {

namespace impl {

enum Op : uint8_t { kOpByte, kOpAny, kOpClass, kOpSplit, kOpBol, kOpEol, kOpMatch };

struct Inst {
  uint8_t op;
  uint8_t byte;
  uint16_t cls;
  uint16_t x, y;  // the next state; a split's second one
};

struct Class {
  uint32_t bits[8];
};

}  // namespace impl

struct Regex {
  int n;      // states
  int start;
  impl::Inst* prog;
  impl::Class* cls;
  uint16_t* scratch;  // 5 * n: two sparse sets (dense, sparse) and a stack
  int busy;           // the scratch is in use by a search
};

namespace {

using impl::Class;
using impl::Inst;

static_assert(kMaxStates < 65535, "states are numbered in 16 bits");

bool has(const Class& c, uint8_t b) { return (c.bits[b >> 5] >> (b & 31)) & 1; }
void add(Class* c, uint8_t b) { c->bits[b >> 5] |= 1u << (b & 31); }

// ASCII predicates, independent of the locale (the traced program may change it).
bool is_digit(int b) { return b >= '0' && b <= '9'; }
bool is_upper(int b) { return b >= 'A' && b <= 'Z'; }
bool is_lower(int b) { return b >= 'a' && b <= 'z'; }
bool is_alpha(int b) { return is_upper(b) || is_lower(b); }
bool is_alnum(int b) { return is_alpha(b) || is_digit(b); }
bool is_space(int b) { return b == ' ' || (b >= '\t' && b <= '\r'); }
bool is_blank(int b) { return b == ' ' || b == '\t'; }
bool is_cntrl(int b) { return b < 32 || b == 127; }
bool is_print(int b) { return b >= 32 && b < 127; }
bool is_graph(int b) { return b > 32 && b < 127; }
bool is_punct(int b) { return is_graph(b) && !is_alnum(b); }
bool is_xdigit(int b) { return is_digit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }
bool is_word(int b) { return is_alnum(b) || b == '_'; }

struct NamedClass {
  const char* name;
  bool (*has)(int b);
};
const NamedClass kNamedClasses[] = {
    {"alpha", is_alpha}, {"digit", is_digit}, {"alnum", is_alnum}, {"upper", is_upper},
    {"lower", is_lower}, {"space", is_space}, {"blank", is_blank}, {"cntrl", is_cntrl},
    {"print", is_print}, {"graph", is_graph}, {"punct", is_punct}, {"xdigit", is_xdigit},
};

void add_all(Class* c, bool (*pred)(int), bool negate) {
  for (int b = 0; b < 256; ++b)
    if (pred(b) != negate) add(c, uint8_t(b));
}

enum Kind : uint8_t { kEmpty, kByte, kAny, kClass, kBol, kEol, kCat, kAlt, kRep };

struct Node {
  uint8_t kind;
  uint8_t byte;
  uint16_t cls;
  int32_t first, last;  // children (cat, alt); a repetition's node is `first`
  int32_t prev, next;   // siblings
  int32_t min, max;     // repetition counts; max -1: no bound
  int32_t nest;         // groups and repetitions around the deepest leaf, this node included
};

struct Parser {
  const uint8_t* p;
  const uint8_t* end;
  Node* nodes;
  int n_nodes, cap_nodes;
  Class* cls;
  int n_cls, cap_cls;
  int groups;  // open groups
  char* err;
  size_t err_cap;
  bool failed;
};

void failf(char* err, size_t cap, bool* failed, const char* fmt, ...) __attribute__((format(printf, 4, 5)));
void failf(char* err, size_t cap, bool* failed, const char* fmt, ...) {
  if (*failed) return;  // the first reason is the one reported
  *failed = true;
  if (err == nullptr || cap == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
}
#define PFAIL(ps, ...) failf((ps)->err, (ps)->err_cap, &(ps)->failed, __VA_ARGS__)

int new_node(Parser* ps, Kind kind) {
  if (ps->n_nodes == ps->cap_nodes) {
    PFAIL(ps, "too complex");
    return -1;
  }
  Node& n = ps->nodes[ps->n_nodes];
  memset(&n, 0, sizeof n);
  n.kind = kind;
  n.first = n.last = n.prev = n.next = -1;
  return ps->n_nodes++;
}

int new_class(Parser* ps) {
  if (ps->n_cls == ps->cap_cls) {
    PFAIL(ps, "too many bracket expressions");
    return -1;
  }
  memset(&ps->cls[ps->n_cls], 0, sizeof(Class));
  return ps->n_cls++;
}

void append(Parser* ps, int parent, int child) {
  Node& p = ps->nodes[parent];
  Node& c = ps->nodes[child];
  c.prev = p.last;
  c.next = -1;
  if (p.last >= 0) ps->nodes[p.last].next = child;
  else p.first = child;
  p.last = child;
  if (c.nest > p.nest) p.nest = c.nest;
}

int parse_alt(Parser* ps);

int class_node(Parser* ps, int cls) {
  int n = new_node(ps, kClass);
  if (n >= 0) ps->nodes[n].cls = uint16_t(cls);
  return n;
}

// After '[': a bracket expression, through its ']'.
int parse_bracket(Parser* ps) {
  int ci = new_class(ps);
  if (ci < 0) return -1;
  Class* c = &ps->cls[ci];
  bool negate = false;
  if (ps->p < ps->end && *ps->p == '^') {
    negate = true;
    ++ps->p;
  }
  for (bool first = true;; first = false) {
    if (ps->p == ps->end) {
      PFAIL(ps, "missing ']' (a bracket expression is not closed)");
      return -1;
    }
    uint8_t ch = *ps->p;
    if (ch == ']' && !first) {
      ++ps->p;
      break;
    }
    if (ch == '[' && ps->p + 1 < ps->end && (ps->p[1] == ':' || ps->p[1] == '.' || ps->p[1] == '=')) {
      uint8_t kind = ps->p[1];
      const uint8_t* q = ps->p + 2;
      while (q + 1 < ps->end && !(q[0] == kind && q[1] == ']')) ++q;
      if (q + 1 >= ps->end) {
        PFAIL(ps, "missing '%c]' in a bracket expression", kind);
        return -1;
      }
      if (kind != ':') {
        PFAIL(ps, "collating elements [. .] and equivalence classes [= =] are not supported");
        return -1;
      }
      const char* name = reinterpret_cast<const char*>(ps->p + 2);
      int name_len = int(q - (ps->p + 2));
      const NamedClass* found = nullptr;
      for (const auto& nc : kNamedClasses)
        if (int(strlen(nc.name)) == name_len && strncmp(nc.name, name, size_t(name_len)) == 0) found = &nc;
      if (found == nullptr) {
        PFAIL(ps, "unknown character class [:%.*s:]; classes: alpha digit alnum upper lower space blank cntrl "
              "print graph punct xdigit", name_len, name);
        return -1;
      }
      add_all(c, found->has, false);
      ps->p = q + 2;
      if (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']') {
        PFAIL(ps, "a range cannot start at a character class");
        return -1;
      }
      continue;
    }
    uint8_t lo = ch;
    ++ps->p;
    if (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']') {
      uint8_t hi = ps->p[1];
      if (hi == '[' && ps->p + 2 < ps->end && (ps->p[2] == ':' || ps->p[2] == '.' || ps->p[2] == '=')) {
        PFAIL(ps, "a range cannot end at a character class");
        return -1;
      }
      ps->p += 2;
      if (hi < lo) {
        PFAIL(ps, "the range %c-%c in a bracket expression is reversed", lo, hi);
        return -1;
      }
      for (int b = lo; b <= hi; ++b) add(c, uint8_t(b));
    } else {
      add(c, lo);
    }
  }
  if (negate)
    for (uint32_t& w : c->bits) w = ~w;
  return class_node(ps, ci);
}

// After '\'.
int parse_escape(Parser* ps) {
  if (ps->p == ps->end) {
    PFAIL(ps, "the pattern ends in a lone backslash");
    return -1;
  }
  uint8_t c = *ps->p++;
  if (c >= '1' && c <= '9') {
    PFAIL(ps, "back-references (\\%c) are not supported: problem~ patterns are matched without backtracking", c);
    return -1;
  }
  bool (*pred)(int) = nullptr;
  switch (c) {
    case 'd': case 'D': pred = is_digit; break;
    case 'w': case 'W': pred = is_word; break;
    case 's': case 'S': pred = is_space; break;
    default: break;
  }
  if (pred != nullptr) {
    int ci = new_class(ps);
    if (ci < 0) return -1;
    add_all(&ps->cls[ci], pred, is_upper(c));
    return class_node(ps, ci);
  }
  if (c == 'b' || c == 'B' || c == '<' || c == '>' || c == '`' || c == '\'') {
    PFAIL(ps, "\\%c (word boundaries, buffer anchors) is not supported; use ^ and $", c);
    return -1;
  }
  if (is_alnum(c)) {
    PFAIL(ps, "unknown escape \\%c; write the character without the backslash, or use a bracket expression", c);
    return -1;
  }
  int n = new_node(ps, kByte);
  if (n >= 0) ps->nodes[n].byte = c;
  return n;
}

int parse_atom(Parser* ps) {
  uint8_t c = *ps->p;
  switch (c) {
    case '(': {
      if (ps->groups >= kMaxNesting) {
        PFAIL(ps, "groups nested more than %d deep", kMaxNesting);
        return -1;
      }
      ++ps->p;
      ++ps->groups;
      int inner = parse_alt(ps);
      --ps->groups;
      if (inner < 0) return -1;
      if (ps->p == ps->end || *ps->p != ')') {
        PFAIL(ps, "missing ')' (a group is not closed; write \\( for a parenthesis)");
        return -1;
      }
      ++ps->p;
      ps->nodes[inner].nest += 1;
      return inner;
    }
    case '*': case '+': case '?': case '{':
      PFAIL(ps, "'%c' has nothing to repeat (write \\%c for the character)", c, c);
      return -1;
    case '.': ++ps->p; return new_node(ps, kAny);
    case '^': ++ps->p; return new_node(ps, kBol);
    case '$': ++ps->p; return new_node(ps, kEol);
    case '[': ++ps->p; return parse_bracket(ps);
    case '\\': ++ps->p; return parse_escape(ps);
    default: {
      ++ps->p;
      int n = new_node(ps, kByte);
      if (n >= 0) ps->nodes[n].byte = c;
      return n;
    }
  }
}

// A count of {m,n}; -1 when there are no digits.
int parse_count(Parser* ps) {
  if (ps->p == ps->end || !is_digit(*ps->p)) return -1;
  long v = 0;
  while (ps->p < ps->end && is_digit(*ps->p)) {
    if (v <= kMaxRepeat) v = v * 10 + (*ps->p - '0');
    ++ps->p;
  }
  if (v > kMaxRepeat) {
    PFAIL(ps, "a repetition count is larger than %d", kMaxRepeat);
    return -1;
  }
  return int(v);
}

// After '{': m}, m,}, m,n}, ,n}.
bool parse_interval(Parser* ps, int* min, int* max) {
  const char* usage = "'{' starts a repetition {m}, {m,} or {m,n}; write \\{ for a brace";
  *min = parse_count(ps);
  if (ps->failed) return false;
  if (*min < 0 && ps->p < ps->end && *ps->p == ',') *min = 0;  // {,n}: as glibc reads it, {0,n}
  if (*min < 0) {
    PFAIL(ps, "%s", usage);
    return false;
  }
  *max = *min;
  if (ps->p < ps->end && *ps->p == ',') {
    ++ps->p;
    *max = parse_count(ps);
    if (ps->failed) return false;
  }
  if (ps->p == ps->end || *ps->p != '}') {
    PFAIL(ps, "%s", usage);
    return false;
  }
  ++ps->p;
  if (*max >= 0 && *max < *min) {
    PFAIL(ps, "the repetition {%d,%d} has a maximum below its minimum", *min, *max);
    return false;
  }
  return true;
}

int parse_piece(Parser* ps) {
  int atom = parse_atom(ps);
  if (atom < 0) return -1;
  while (ps->p < ps->end && (*ps->p == '*' || *ps->p == '+' || *ps->p == '?' || *ps->p == '{')) {
    int min = 0, max = -1;
    uint8_t op = *ps->p++;
    if (op == '+') min = 1;
    else if (op == '?') max = 1;
    else if (op == '{' && !parse_interval(ps, &min, &max)) return -1;
    if (ps->nodes[atom].kind == kEmpty) continue;  // nothing repeated is still nothing
    if (max == 0) {                                 // X{0}: nothing
      atom = new_node(ps, kEmpty);
      if (atom < 0) return -1;
      continue;
    }
    int rep = new_node(ps, kRep);
    if (rep < 0) return -1;
    Node& r = ps->nodes[rep];
    r.first = r.last = atom;
    r.min = min;
    r.max = max;
    r.nest = ps->nodes[atom].nest + 1;
    if (r.nest > kMaxNesting) {
      PFAIL(ps, "groups and repetitions nested more than %d deep", kMaxNesting);
      return -1;
    }
    atom = rep;
  }
  return atom;
}

int parse_cat(Parser* ps) {
  int cat = new_node(ps, kCat);
  if (cat < 0) return -1;
  int count = 0;
  while (ps->p < ps->end && *ps->p != '|' && *ps->p != ')') {
    int piece = parse_piece(ps);
    if (piece < 0) return -1;
    if (ps->nodes[piece].kind == kEmpty) continue;
    append(ps, cat, piece);
    ++count;
  }
  if (count == 0) ps->nodes[cat].kind = kEmpty;
  else if (count == 1) return ps->nodes[cat].first;
  return cat;
}

int parse_alt(Parser* ps) {
  int first = parse_cat(ps);
  if (first < 0 || ps->p == ps->end || *ps->p != '|') return first;
  int alt = new_node(ps, kAlt);
  if (alt < 0) return -1;
  append(ps, alt, first);
  bool all_empty = ps->nodes[first].kind == kEmpty;
  while (ps->p < ps->end && *ps->p == '|') {
    ++ps->p;
    int branch = parse_cat(ps);
    if (branch < 0) return -1;
    all_empty = all_empty && ps->nodes[branch].kind == kEmpty;
    append(ps, alt, branch);
  }
  if (all_empty) ps->nodes[alt].kind = kEmpty;
  return alt;
}

struct Emitter {
  Inst* prog;
  int n;
  const Node* nodes;
  const char* pattern;
  char* err;
  size_t err_cap;
  bool failed;
};

int new_inst(Emitter* e, impl::Op op, int x, int y = 0) {
  if (e->n >= kMaxStates) {
    failf(e->err, e->err_cap, &e->failed,
          "too large: it expands to more than %d states (repetition counts multiply, as in (a{1000}){1000}); "
          "use a simpler pattern", kMaxStates);
    return -1;
  }
  Inst& in = e->prog[e->n];
  memset(&in, 0, sizeof in);
  in.op = op;
  in.x = uint16_t(x);
  in.y = uint16_t(y);
  return e->n++;
}

// Emits node `ni` to run before state `next`; returns its first state, -1 when too large.
int emit(Emitter* e, int ni, int next) {
  const Node& nd = e->nodes[ni];
  switch (nd.kind) {
    case kEmpty: return next;
    case kByte: {
      int s = new_inst(e, impl::kOpByte, next);
      if (s >= 0) e->prog[s].byte = nd.byte;
      return s;
    }
    case kAny: return new_inst(e, impl::kOpAny, next);
    case kClass: {
      int s = new_inst(e, impl::kOpClass, next);
      if (s >= 0) e->prog[s].cls = nd.cls;
      return s;
    }
    case kBol: return new_inst(e, impl::kOpBol, next);
    case kEol: return new_inst(e, impl::kOpEol, next);
    case kCat:
      for (int c = nd.last; c >= 0 && next >= 0; c = e->nodes[c].prev) next = emit(e, c, next);
      return next;
    case kAlt: {
      int acc = -1;
      for (int c = nd.last; c >= 0; c = e->nodes[c].prev) {
        int s = emit(e, c, next);
        if (s < 0) return -1;
        acc = acc < 0 ? s : new_inst(e, impl::kOpSplit, s, acc);
        if (acc < 0) return -1;
      }
      return acc;
    }
    case kRep: {
      int min = nd.min, cont = next;
      if (nd.max < 0) {
        // X*: a split into X (which comes back to it) or on; X{m,} is X{m-1} then X+.
        int split = new_inst(e, impl::kOpSplit, 0, next);
        if (split < 0) return -1;
        int body = emit(e, nd.first, split);
        if (body < 0) return -1;
        e->prog[split].x = uint16_t(body);
        cont = split;
        if (min > 0) {
          cont = body;
          --min;
        }
      } else {
        // X{0,k}: k nested optional copies, each of which may skip to the end.
        for (int i = 0; i < nd.max - nd.min; ++i) {
          int body = emit(e, nd.first, cont);
          if (body < 0) return -1;
          cont = new_inst(e, impl::kOpSplit, body, next);
          if (cont < 0) return -1;
        }
      }
      for (int i = 0; i < min; ++i) {
        cont = emit(e, nd.first, cont);
        if (cont < 0) return -1;
      }
      return cont;
    }
    default: return -1;
  }
}

struct Set {
  uint16_t* dense;
  uint16_t* sparse;
  int count;
  bool has(int s) const {
    int i = sparse[s];
    return i < count && dense[i] == s;
  }
  void add(int s) {
    sparse[s] = uint16_t(count);
    dense[count++] = uint16_t(s);
  }
};

// Adds state s and every state reachable from it without reading a byte, at text position pos;
// true when the match state is among them.
bool closure(const Regex* re, Set* set, int s, size_t pos, size_t len, uint16_t* stack) {
  if (set->has(s)) return false;
  int sp = 0;
  set->add(s);
  stack[sp++] = uint16_t(s);
  while (sp > 0) {
    const Inst& in = re->prog[stack[--sp]];
    int to[2];
    int n_to = 0;
    switch (in.op) {
      case impl::kOpMatch: return true;
      case impl::kOpSplit: to[n_to++] = in.x; to[n_to++] = in.y; break;
      case impl::kOpBol: if (pos == 0) to[n_to++] = in.x; break;
      case impl::kOpEol: if (pos == len) to[n_to++] = in.x; break;
      default: break;  // reads a byte: stays in the set for the next step
    }
    for (int i = 0; i < n_to; ++i) {
      if (set->has(to[i])) continue;
      set->add(to[i]);
      stack[sp++] = uint16_t(to[i]);
    }
  }
  return false;
}

bool run(const Regex* re, const uint8_t* text, size_t len, uint16_t* buf) {
  int n = re->n;
  Set cur{buf, buf + n, 0};
  Set nxt{buf + 2 * n, buf + 3 * n, 0};
  uint16_t* stack = buf + 4 * n;
  if (closure(re, &cur, re->start, 0, len, stack)) return true;
  for (size_t i = 0; i < len; ++i) {
    uint8_t c = text[i];
    nxt.count = 0;
    for (int k = 0; k < cur.count; ++k) {
      const Inst& in = re->prog[cur.dense[k]];
      bool step = (in.op == impl::kOpByte && in.byte == c) || in.op == impl::kOpAny ||
                  (in.op == impl::kOpClass && has(re->cls[in.cls], c));
      if (step && closure(re, &nxt, in.x, i + 1, len, stack)) return true;
    }
    // Search: a match may also start at the next position.
    if (closure(re, &nxt, re->start, i + 1, len, stack)) return true;
    Set t = cur;
    cur = nxt;
    nxt = t;
  }
  return false;
}

}  // namespace

Regex* compile(const char* pattern, char* err, size_t err_cap) {
  if (err != nullptr && err_cap > 0) err[0] = 0;
  bool failed = false;
  if (pattern == nullptr) {
    failf(err, err_cap, &failed, "no pattern");
    return nullptr;
  }
  size_t len = strnlen(pattern, kMaxPattern + 1);
  if (len > kMaxPattern) {
    failf(err, err_cap, &failed, "the pattern is longer than %zu bytes", kMaxPattern);
    return nullptr;
  }
  Parser ps{};
  ps.p = reinterpret_cast<const uint8_t*>(pattern);
  ps.end = ps.p + len;
  ps.cap_nodes = int(4 * len + 8);
  ps.cap_cls = int(len / 2 + 2);
  ps.nodes = static_cast<Node*>(malloc(size_t(ps.cap_nodes) * sizeof(Node)));
  ps.cls = static_cast<Class*>(malloc(size_t(ps.cap_cls) * sizeof(Class)));
  ps.err = err;
  ps.err_cap = err_cap;
  Emitter em{};
  em.prog = static_cast<Inst*>(malloc(size_t(kMaxStates) * sizeof(Inst)));
  Regex* re = nullptr;
  if (ps.nodes == nullptr || ps.cls == nullptr || em.prog == nullptr) {
    PFAIL(&ps, "out of memory");
  } else {
    int root = parse_alt(&ps);
    if (!ps.failed && ps.p != ps.end) PFAIL(&ps, "unmatched ')' (write \\) for a parenthesis)");
    if (!ps.failed && root >= 0) {
      em.nodes = ps.nodes;
      em.pattern = pattern;
      em.err = err;
      em.err_cap = err_cap;
      int match = new_inst(&em, impl::kOpMatch, 0);
      int start = emit(&em, root, match);
      if (start >= 0 && !em.failed) {
        int n = em.n;
        size_t bytes = sizeof(Regex) + size_t(ps.n_cls) * sizeof(Class) + size_t(n) * sizeof(Inst) +
                       5 * size_t(n) * sizeof(uint16_t);
        char* block = static_cast<char*>(calloc(1, bytes));
        if (block == nullptr) {
          failf(err, err_cap, &failed, "out of memory");
        } else {
          re = reinterpret_cast<Regex*>(block);
          re->n = n;
          re->start = start;
          re->cls = reinterpret_cast<Class*>(block + sizeof(Regex));
          re->prog = reinterpret_cast<Inst*>(block + sizeof(Regex) + size_t(ps.n_cls) * sizeof(Class));
          re->scratch = reinterpret_cast<uint16_t*>(reinterpret_cast<char*>(re->prog) + size_t(n) * sizeof(Inst));
          if (ps.n_cls > 0) memcpy(re->cls, ps.cls, size_t(ps.n_cls) * sizeof(Class));
          memcpy(re->prog, em.prog, size_t(n) * sizeof(Inst));
        }
      }
    }
  }
  free(ps.nodes);
  free(ps.cls);
  free(em.prog);
  return re;
}

bool search(const Regex* re, const char* text, size_t len) {
  if (re == nullptr || (text == nullptr && len > 0)) return false;
  auto* r = const_cast<Regex*>(re);
  const auto* t = reinterpret_cast<const uint8_t*>(text);
  if (__atomic_exchange_n(&r->busy, 1, __ATOMIC_ACQUIRE) == 0) {
    bool hit = run(re, t, len, r->scratch);
    __atomic_store_n(&r->busy, 0, __ATOMIC_RELEASE);
    return hit;
  }
  // Another thread is searching this pattern: a buffer of its own (small ones on the stack).
  size_t words = 5 * size_t(re->n);
  uint16_t local[5 * 128];
  if (words <= sizeof local / sizeof local[0]) {
    memset(local, 0, words * sizeof(uint16_t));
    return run(re, t, len, local);
  }
  auto* buf = static_cast<uint16_t*>(calloc(words, sizeof(uint16_t)));
  if (buf == nullptr) return false;
  bool hit = run(re, t, len, buf);
  free(buf);
  return hit;
}

int state_count(const Regex* re) { return re ? re->n : 0; }

void release(Regex* re) { free(re); }

}  // namespace cuprobe::safe_regex
