// A minimal builder for one JSON object per line, fast enough for millions of events
// (nlohmann::json allocates per value; this appends into one reused buffer).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "utf8.h"

namespace cuprobe {

class JsonLine {
 public:
  void begin() {
    buf_.clear();
    buf_.push_back('{');
    first_ = true;
  }
  void end(std::FILE* out) {
    buf_.push_back('}');
    buf_.push_back('\n');
    std::fwrite(buf_.data(), 1, buf_.size(), out);
  }
  // Closes the object and returns it without a newline (for nesting into another line).
  std::string_view finish() {
    buf_.push_back('}');
    return {buf_.data(), buf_.size()};
  }
  static std::string quote(std::string_view s) {
    JsonLine j;
    j.buf_.clear();
    j.str_value(s);
    return std::string(j.buf_.data(), j.buf_.size());
  }

  void key(std::string_view k) {
    if (!first_) buf_.push_back(',');
    first_ = false;
    str_value(k);
    buf_.push_back(':');
  }
  void num(std::string_view k, uint64_t v) { key(k); fmt::format_to(std::back_inserter(buf_), "{}", v); }
  void inum(std::string_view k, int64_t v) { key(k); fmt::format_to(std::back_inserter(buf_), "{}", v); }
  // JSON has no NaN or infinity: null.
  void dbl(std::string_view k, double v) {
    key(k);
    if (v != v || v - v != 0) {
      buf_.append(std::string_view("null"));
    } else {
      fmt::format_to(std::back_inserter(buf_), "{}", v);
    }
  }
  void hex(std::string_view k, uint64_t v) { key(k); fmt::format_to(std::back_inserter(buf_), "\"0x{:x}\"", v); }
  void boolean(std::string_view k, bool v) {
    key(k);
    buf_.append(v ? std::string_view("true") : std::string_view("false"));
  }
  void str(std::string_view k, std::string_view v) { key(k); str_value(v); }
  void raw(std::string_view k, std::string_view json) { key(k); buf_.append(json.data(), json.data() + json.size()); }

  // Text from a trace may hold any bytes: those that are not UTF-8 become U+FFFD.
  void str_value(std::string_view in) {
    std::string fixed;
    std::string_view s = in;
    for (char c : in) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        if (!utf8::valid(in)) s = fixed = utf8::sanitize(in);
        break;
      }
    }
    buf_.push_back('"');
    for (char c : s) {
      switch (c) {
        case '"': buf_.append(std::string_view("\\\"")); break;
        case '\\': buf_.append(std::string_view("\\\\")); break;
        case '\n': buf_.append(std::string_view("\\n")); break;
        case '\t': buf_.append(std::string_view("\\t")); break;
        case '\r': buf_.append(std::string_view("\\r")); break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            fmt::format_to(std::back_inserter(buf_), "\\u{:04x}", int(c));
          } else {
            buf_.push_back(c);
          }
      }
    }
    buf_.push_back('"');
  }

 private:
  fmt::memory_buffer buf_;
  bool first_ = true;
};

}  // namespace cuprobe
