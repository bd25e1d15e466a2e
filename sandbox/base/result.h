// Errors as values: Result<T> holds a T or an Error, never throws.
//
// Pattern of use:
//   Result<int> ParsePort(std::string_view s);
//   SANDRUN_ASSIGN_OR_RETURN(int port, ParsePort(text));
//   if (!ok) return Error(ErrorCode::kInvalidArgument, "port out of range");
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace sandrun {

enum class ErrorCode {
  kInvalidArgument,    // the caller's input is wrong
  kNotFound,           // a named thing does not exist (engine 404, missing file)
  kConflict,           // the thing exists or is in the wrong state (engine 409)
  kDockerUnreachable,  // nothing answers at DOCKER_HOST: connect failed, socket missing
  kDockerApi,          // the engine answered with an error status (other than 404/409)
  kProtocol,           // the peer said something we cannot parse
  kTimeout,            // a deadline passed
  kCancelled,          // the caller cancelled
  kSyscall,            // an OS call failed; sys_errno says why
  kIo,                 // reading or writing a file or stream failed
  kRefused,            // policy or validation said no before anything ran; `wire` says why
  kInternal,           // a bug in sandrun
};

const char* ErrorCodeName(ErrorCode code);

// A value type: code, errno (0 if none), HTTP status (0 if none), a message, and context added
// on the way up ("while creating container x"). `wire` is the stable code callers outside the
// process see ({"error":{"code": ...}}, the CLI's exit code): one of the codes HACKING.md lists;
// empty means WireCode() derives it from `code`. Errors are rendered only at the edge.
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  int sys_errno = 0;
  int http_status = 0;
  std::string message;
  std::vector<std::string> context;
  std::string wire;

  Error() = default;
  Error(ErrorCode c, std::string msg) : code(c), message(std::move(msg)) {}

  // A refusal with its wire code ("denied", "host-not-allowed", ...), code kRefused.
  static Error Refusal(std::string wire_code, std::string msg) {
    Error e(ErrorCode::kRefused, std::move(msg));
    e.wire = std::move(wire_code);
    return e;
  }
  // Any error with an explicit wire code ("sandbox-unavailable", "spawn-failed", ...).
  Error&& WithWire(std::string wire_code) && {
    wire = std::move(wire_code);
    return std::move(*this);
  }
  // `wire`, else by code: invalid-argument -> invalid-request, not-found, conflict, timeout,
  // cancelled, docker-* -> sandbox-unavailable, refused -> denied, anything else -> internal.
  std::string WireCode() const;

  // "<what>: <strerror(err)>", code kSyscall.
  static Error FromErrno(int err, const std::string& what);

  // Adds a line of context; returns *this for chaining.
  Error& Wrap(std::string what) & {
    context.push_back(std::move(what));
    return *this;
  }
  Error&& Wrap(std::string what) && {
    context.push_back(std::move(what));
    return std::move(*this);
  }

  // The message with its context, outermost first: "starting exec: engine said ...".
  std::string ToString() const;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design

  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& { return error_; }
  Error&& error() && { return std::move(error_); }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

inline Status Ok() { return Status(); }

}  // namespace sandrun

#define SANDRUN_CONCAT_INNER_(a, b) a##b
#define SANDRUN_CONCAT_(a, b) SANDRUN_CONCAT_INNER_(a, b)

// Returns the error of a Result/Status expression from the enclosing function.
#define SANDRUN_RETURN_IF_ERROR(expr)                                \
  do {                                                               \
    auto sandrun_status_ = (expr);                                   \
    if (!sandrun_status_) return std::move(sandrun_status_).error(); \
  } while (0)

// Declares/assigns lhs from a Result expression, or returns its error.
#define SANDRUN_ASSIGN_OR_RETURN(lhs, expr) \
  SANDRUN_ASSIGN_OR_RETURN_IMPL_(SANDRUN_CONCAT_(sandrun_result_, __LINE__), lhs, expr)
#define SANDRUN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp) return std::move(tmp).error();             \
  lhs = std::move(tmp).value()
