#include "runner/audit/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <utility>

#include "sandbox/base/clock.h"
#include "sandbox/base/json.h"
#include "sandbox/base/sha256.h"
#include "sandbox/base/strings.h"
#include "sandbox/os/file.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::audit {
namespace {

constexpr const char* kFileName = "audit.jsonl";
constexpr size_t kMaxLineBytes = 64u << 10;

std::string Rotated(const std::string& dir, int n) {
  return dir + "/" + kFileName + "." + std::to_string(n);
}

// At most `max` bytes of `s`, not cutting a UTF-8 sequence.
std::string Capped(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t end = max;
  while (end > 0 && IsUtf8Continuation(s[end])) --end;
  return s.substr(0, end);
}

void Field(JsonWriter& w, const char* key, const std::string& value) {
  w.Key(key);
  WriteJsonString(w, value);
}

Status CheckRealDirectory(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return Error::FromErrno(errno, "audit log " + dir);
  if (!S_ISDIR(st.st_mode)) {
    return Error(ErrorCode::kInvalidArgument,
                 dir + " is not a directory (a symlink is refused); the audit log needs one");
  }
  return Ok();
}

}  // namespace

std::string AuditDir(const std::string& state_dir) { return state_dir + "/audit"; }

std::string AuditLine(AuditRecord r) {
  r.command_sha256 = Sha256Hex(r.command);
  r.command = Capped(r.command, kMaxCommandChars);
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("time");
  w.Int64(r.time_ms);
  Field(w, "tenant", r.tenant);
  Field(w, "token", r.token);
  Field(w, "role", r.role);
  Field(w, "agent", r.agent);
  Field(w, "session", r.session);
  Field(w, "tool", r.tool);
  if (!r.action.empty()) Field(w, "action", r.action);
  Field(w, "command", r.command);
  Field(w, "commandSha256", r.command_sha256);
  Field(w, "host", r.host);
  Field(w, "decision", r.decision);
  Field(w, "reason", Capped(r.reason, kMaxCommandChars));
  Field(w, "approvalId", r.approval_id);
  Field(w, "answeredBy", r.answered_by);
  if (r.exit_code) {
    w.Key("exitCode");
    w.Int64(*r.exit_code);
  }
  if (r.duration_ms) {
    w.Key("durationMs");
    w.Int64(*r.duration_ms);
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

Result<AuditRecord> ParseAuditLine(std::string_view line) {
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(line));
  if (!doc.IsObject() || !doc.HasMember("time") || !doc["time"].IsInt64()) {
    return Error(ErrorCode::kInvalidArgument, "not an audit record");
  }
  AuditRecord r;
  r.time_ms = doc["time"].GetInt64();
  r.tenant = JsonString(doc, "tenant");
  r.token = JsonString(doc, "token");
  r.role = JsonString(doc, "role");
  r.agent = JsonString(doc, "agent");
  r.session = JsonString(doc, "session");
  r.tool = JsonString(doc, "tool");
  r.action = JsonString(doc, "action");
  r.command = JsonString(doc, "command");
  r.command_sha256 = JsonString(doc, "commandSha256");
  r.host = JsonString(doc, "host");
  r.decision = JsonString(doc, "decision");
  r.reason = JsonString(doc, "reason");
  r.approval_id = JsonString(doc, "approvalId");
  r.answered_by = JsonString(doc, "answeredBy");
  if (doc.HasMember("exitCode") && doc["exitCode"].IsInt64()) {
    r.exit_code = doc["exitCode"].GetInt64();
  }
  if (doc.HasMember("durationMs") && doc["durationMs"].IsInt64()) {
    r.duration_ms = doc["durationMs"].GetInt64();
  }
  return r;
}

Result<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& dir, Options options) {
  if (options.max_bytes < 4096 || options.keep < 1) {
    return Error(ErrorCode::kInvalidArgument, "audit log: max_bytes >= 4096 and keep >= 1");
  }
  SANDRUN_RETURN_IF_ERROR(EnsureDirectory(dir, 0700));
  SANDRUN_RETURN_IF_ERROR(CheckRealDirectory(dir));
  return std::unique_ptr<AuditLog>(new AuditLog(dir, options));
}

Status AuditLog::RotateIfNeeded(size_t incoming) {
  const std::string current = dir_ + "/" + kFileName;
  struct stat st {};
  if (::lstat(current.c_str(), &st) != 0) return Ok();  // nothing yet
  if (st.st_size + static_cast<off_t>(incoming) <= options_.max_bytes) return Ok();
  ::unlink(Rotated(dir_, options_.keep).c_str());
  for (int n = options_.keep - 1; n >= 1; --n) {
    if (::rename(Rotated(dir_, n).c_str(), Rotated(dir_, n + 1).c_str()) != 0 && errno != ENOENT) {
      return Error::FromErrno(errno, "rotating the audit log");
    }
  }
  if (::rename(current.c_str(), Rotated(dir_, 1).c_str()) != 0) {
    return Error::FromErrno(errno, "rotating the audit log");
  }
  return Ok();
}

Status AuditLog::Writable() {
  std::lock_guard<std::mutex> guard(mu_);
  const std::string current = dir_ + "/" + kFileName;
  UniqueFd fd(
      ::open(current.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Error::FromErrno(errno, "opening the audit log " + current);
  return Ok();
}

Status AuditLog::Append(AuditRecord record) {
  if (record.time_ms == 0) record.time_ms = UnixMillis();
  std::string line = AuditLine(std::move(record));
  if (line.size() > kMaxLineBytes) line.resize(kMaxLineBytes);  // never reached: fields capped
  line += '\n';
  std::lock_guard<std::mutex> guard(mu_);
  SANDRUN_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(dir_ + "/audit.lock"));
  SANDRUN_RETURN_IF_ERROR(RotateIfNeeded(line.size()));
  const std::string current = dir_ + "/" + kFileName;
  UniqueFd fd(
      ::open(current.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Error::FromErrno(errno, "opening the audit log " + current);
  ssize_t n = ::write(fd.get(), line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    return Error::FromErrno(n < 0 ? errno : EIO, "writing the audit log " + current);
  }
  return Ok();
}

Result<AuditRead> ReadAuditLog(const std::string& dir, const AuditFilter& filter) {
  AuditRead out;
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) return out;
  SANDRUN_RETURN_IF_ERROR(CheckRealDirectory(dir));
  std::vector<std::string> files;
  for (int n = 64; n >= 1; --n) {
    if (::lstat(Rotated(dir, n).c_str(), &st) == 0) files.push_back(Rotated(dir, n));
  }
  files.push_back(dir + "/" + kFileName);
  for (const std::string& path : files) {
    if (::lstat(path.c_str(), &st) != 0) continue;
    if (!S_ISREG(st.st_mode)) {
      return Error(ErrorCode::kInvalidArgument, path + " is not a regular file");
    }
    SANDRUN_ASSIGN_OR_RETURN(std::string text, ReadFile(path, size_t{1} << 30));
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string_view line(text.data() + start, end - start);
      start = end + 1;
      if (line.empty()) continue;
      auto record = ParseAuditLine(line);
      if (!record) {
        ++out.skipped_lines;
        continue;
      }
      if (filter.tenant && record->tenant != *filter.tenant) continue;
      if (record->time_ms < filter.since_ms) continue;
      out.records.push_back(std::move(*record));
    }
  }
  return out;
}

}  // namespace sandrun::audit
