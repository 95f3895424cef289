// UTF-8 for text that comes from a trace: command lines, paths, host names and interned strings
// are whatever bytes the traced process had, and JSON output must be valid UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cuprobe::utf8 {

// Length of the well-formed UTF-8 sequence at s[i] (1-4), or 0 when the bytes there are not
// one (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, cut short).
inline size_t sequence_at(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;  // no surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
  }
  return n;
}

inline bool valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = sequence_at(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// The text with every byte that is not part of a well-formed sequence replaced by U+FFFD.
inline std::string sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = sequence_at(s, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

// At most max_bytes of the text, cut between characters, with "…" when something was cut.
inline std::string truncate(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t end = 0;
  for (size_t i = 0; i < s.size();) {
    size_t n = sequence_at(s, i);
    if (n == 0) n = 1;
    if (i + n > max_bytes) break;
    i += n;
    end = i;
  }
  return std::string(s.substr(0, end)) + "\xe2\x80\xa6";
}

// The text as a terminal may show it: control characters (C0 but tab, DEL, C1 as UTF-8
// U+0080-U+009F) become visible escapes (\n, \x1b, \u009b) and bytes that are not UTF-8 \xNN,
// so that a host name or path from a trace cannot clear the screen, retitle the window, write
// the clipboard (OSC 52) or forge a line of output; the bidirectional overrides and isolates
// (U+202A-U+202E, U+2066-U+2069), which reorder what is shown, become \u escapes too. Printable
// text is unchanged.
inline std::string terminal_safe(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  auto hex2 = [&](const char* prefix, unsigned v) {
    out += prefix;
    out += kHex[(v >> 4) & 15];
    out += kHex[v & 15];
  };
  for (size_t i = 0; i < s.size();) {
    size_t n = sequence_at(s, i);
    auto c = static_cast<unsigned char>(s[i]);
    if (n == 0) {
      hex2("\\x", c);
      ++i;
      continue;
    }
    auto next = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    if (n == 1 && (c < 0x20 || c == 0x7f) && c != '\t') {
      if (c == '\n') out += "\\n";
      else if (c == '\r') out += "\\r";
      else hex2("\\x", c);
    } else if (n == 2 && c == 0xc2 && next(1) < 0xa0) {
      hex2("\\u00", next(1));
    } else if (n == 3 && c == 0xe2 && ((next(1) == 0x80 && next(2) >= 0xaa && next(2) <= 0xae) ||
                                       (next(1) == 0x81 && next(2) >= 0xa6 && next(2) <= 0xa9))) {
      hex2("\\u20", unsigned(((next(1) & 0x3f) << 6 | (next(2) & 0x3f)) & 0xff));
    } else {
      out.append(s.data() + i, n);
    }
    i += n;
  }
  return out;
}

}  // namespace cuprobe::utf8
