// A small regular-expression engine for fault plans (problem~REGEX, common/fault_plan.h).
//
// Matching time and memory are bounded by the pattern, whatever the text: a pattern is compiled
// once into a Thompson NFA of at most kMaxStates states, and a search simulates it over the text
// (O(text length x states), no backtracking). Patterns that cannot be matched that way are
// refused with a message: back-references, and repetitions that expand past the state bound.
//
// The dialect is a subset of POSIX extended regular expressions, matched on bytes:
//   c        a literal; \c a literal for any punctuation c (\. \[ \( \\ \* \{ ...)
//   .        any byte
//   [...]    a bracket expression: [abc] [^abc] [a-z] [[:digit:]] ...; a backslash inside is a
//            backslash (POSIX); ']' first and '-' first or last are literal
//   \d \w \s (and \D \W \S) digit, word character [_[:alnum:]], white space
//   ^ $      start, end of the text
//   (...)    a group; X|Y alternation; X* X+ X? X{m} X{m,} X{m,n} with m, n <= kMaxRepeat
// Search semantics as regexec's: the pattern matches when it matches some part of the text.
//
// Plain C++ over malloc (the shim links no C++ runtime): no exceptions, no static state.
#pragma once

#include <stddef.h>

namespace cuprobe::safe_regex {

inline constexpr int kMaxStates = 4096;     // NFA states of one compiled pattern
inline constexpr int kMaxRepeat = 1000;     // the largest count in {m,n}
inline constexpr int kMaxNesting = 64;      // groups and repetitions nested in one another
inline constexpr size_t kMaxPattern = 1024; // bytes of pattern

struct Regex;

// Compiles a NUL-terminated pattern. nullptr when refused (or out of memory), with a message in
// err that says why.
Regex* compile(const char* pattern, char* err, size_t err_cap);

// Whether the pattern matches somewhere in text[0, len). Safe to call from several threads at
// once on one Regex; allocates nothing unless two threads search the same Regex at the same time.
bool search(const Regex* re, const char* text, size_t len);

// The compiled pattern's NFA states (for tests and messages).
int state_count(const Regex* re);

void release(Regex* re);

}  // namespace cuprobe::safe_regex
