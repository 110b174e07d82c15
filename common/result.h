// A small expected-like Result<T>: a value or a one-line error message that
// tells the user what to do. C++20 has no std::expected.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace arcprof {

// What kind of failure an Error is; the command line maps it to an exit code
// (cli/exit_codes.h), the layers below never choose exit codes.
enum class ErrorKind : uint8_t {
  kFailed = 0,   // bad input, a usage or output error
  kCapture = 1,  // a capture or store is missing, corrupt, foreign or newer than this build
};

struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::kFailed;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

inline Error MakeError(std::string message, ErrorKind kind = ErrorKind::kFailed) {
  return Error{std::move(message), kind};
}

}  // namespace arcprof
