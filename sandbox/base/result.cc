#include "sandbox/base/result.h"

#include <cstring>

namespace sandrun {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid-argument";
    case ErrorCode::kNotFound:
      return "not-found";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kDockerUnreachable:
      return "docker-unreachable";
    case ErrorCode::kDockerApi:
      return "docker-api";
    case ErrorCode::kProtocol:
      return "protocol";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kCancelled:
      return "cancelled";
    case ErrorCode::kSyscall:
      return "syscall";
    case ErrorCode::kIo:
      return "io";
    case ErrorCode::kRefused:
      return "refused";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Error::WireCode() const {
  if (!wire.empty()) return wire;
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid-request";
    case ErrorCode::kNotFound:
      return "not-found";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kCancelled:
      return "cancelled";
    case ErrorCode::kDockerUnreachable:
    case ErrorCode::kDockerApi:
      return "sandbox-unavailable";
    case ErrorCode::kRefused:
      return "denied";
    default:
      return "internal";
  }
}

Error Error::FromErrno(int err, const std::string& what) {
  Error e(ErrorCode::kSyscall, what + ": " + std::strerror(err));
  e.sys_errno = err;
  return e;
}

std::string Error::ToString() const {
  std::string out;
  for (auto it = context.rbegin(); it != context.rend(); ++it) {
    out += *it;
    out += ": ";
  }
  out += message;
  return out;
}

}  // namespace sandrun
