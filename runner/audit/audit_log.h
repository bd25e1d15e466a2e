// The audit log, $SANDRUN_HOME/audit/audit.jsonl: one JSON line per exec decision and per operator
// action, for the operators of a hosted sandrun (who ran what, for which tenant and agent, what
// policy said, who answered an approval, how it ended).
//
//   {"time":1790000000000,"tenant":"acme","token":"ci-bot","role":"agent","agent":"main",
//    "session":"main","tool":"exec","command":"make test","commandSha256":"<hex>",
//    "host":"sandbox","decision":"allow","reason":"","approvalId":"","answeredBy":"",
//    "exitCode":0,"durationMs":812}
//
// - `command` is capped at kMaxCommandChars (the sha256 is of the whole command, so two long
//   commands with the same head are still told apart); absent numbers are omitted.
// - Appends are one write(2) of a whole line to a file opened O_APPEND, under an flock on
//   audit.lock shared by every process of the state dir (the server, one-shot CLIs), so lines
//   never interleave or tear; the file and the directory are 0600/0700 and never followed
//   through a symlink.
// - Rotation by size: when audit.jsonl would pass max_bytes it becomes audit.jsonl.1 (.1 -> .2,
//   ...; the oldest beyond `keep` is removed). Readers read the rotated files oldest first.
// - A line that does not parse (a disk that filled mid-write before this writer existed, an
//   edit) is skipped by the reader and counted, never fatal.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(auto log, audit::AuditLog::Open(audit::AuditDir(state_dir)));
//   audit::AuditRecord r; r.tenant = ...; r.decision = "allow"; ...
//   SANDRUN_RETURN_IF_ERROR(log->Append(r));
//   auto read = audit::ReadAuditLog(audit::AuditDir(state_dir), {.tenant = "acme"});
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::audit {

inline constexpr size_t kMaxCommandChars = 4096;

struct AuditRecord {
  int64_t time_ms = 0;
  std::string tenant;
  std::string token;  // the token's name ("" on the local socket)
  std::string role;
  std::string agent;
  std::string session;
  std::string tool;            // exec, process, apply_patch, approval, ...
  std::string action;          // an operator action (approve, deny, kill, ...); "" for a tool call
  std::string command;         // capped by Append
  std::string command_sha256;  // filled by Append from the whole command
  std::string host;            // sandbox, gateway, node
  std::string decision;        // allow, deny, ask, needs-review, ...
  std::string reason;
  std::string approval_id;
  std::string answered_by;
  std::optional<int64_t> exit_code;
  std::optional<int64_t> duration_ms;
  bool operator==(const AuditRecord&) const = default;
};

std::string AuditDir(const std::string& state_dir);
// The line for `record` (no newline); the command capped and its digest set.
std::string AuditLine(AuditRecord record);
Result<AuditRecord> ParseAuditLine(std::string_view line);

class AuditLog {
 public:
  struct Options {
    int64_t max_bytes = int64_t{64} << 20;  // per file before rotation
    int keep = 5;                           // rotated files kept
  };
  // Creates `dir` (0700) if missing; refuses a symlinked one.
  static Result<std::unique_ptr<AuditLog>> Open(const std::string& dir, Options options);
  static Result<std::unique_ptr<AuditLog>> Open(const std::string& dir) {
    return Open(dir, Options{});
  }

  // Appends one line (time_ms = now when 0). Thread-safe, and safe across processes.
  Status Append(AuditRecord record);
  // Whether the current file can be opened for appending (created if missing), now.
  Status Writable();

 private:
  AuditLog(std::string dir, Options options) : dir_(std::move(dir)), options_(options) {}
  Status RotateIfNeeded(size_t incoming);

  std::string dir_;
  Options options_;
  std::mutex mu_;
};

struct AuditFilter {
  std::optional<std::string> tenant;  // nullopt: every tenant
  int64_t since_ms = 0;               // records at or after
};
struct AuditRead {
  std::vector<AuditRecord> records;  // oldest first
  size_t skipped_lines = 0;          // lines that did not parse
};
// Reads the rotated files and the current one, oldest first. A missing log is empty.
Result<AuditRead> ReadAuditLog(const std::string& dir, const AuditFilter& filter);

}  // namespace sandrun::audit
