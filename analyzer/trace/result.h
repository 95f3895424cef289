// Errors as values for the analyzer side: Result<T> holds a T or an Error with a message that
// names the bad input. Exceptions are used only at the CLI boundary.
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
