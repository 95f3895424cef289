// Errors as values for the analyzer side: Result<T> holds a T or an Error with a message that
// names the bad input; the reader, the trackers, the rules and the exports report failures this
// way. Exceptions are used in three bounded places: a deep parse may throw its own type to unwind
// and catch it at its entry point, where it becomes an Error (the JSON Lines reader's BadValue and
// TooMany, the SQLite export's SqlError); the fault plan builder's PlanError, documented on each
// function that throws it (faults/plan_builder.h), is caught by the commands that build plans; and
// the CLI boundary (main.cpp, options.cpp) turns UsageError, CLI11's parse errors and anything
// else into one line on stderr and exit code 2.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace cuprobe {

struct Error {
  std::string message;
};

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error e) : v_(std::move(e)) {}      // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace cuprobe
