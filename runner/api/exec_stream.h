// `sandrun exec`'s contract, shared by the in-process CLI and the server's /v1/exec route: the
// exit code table and the byte protocol the CLI and the server speak after the upgrade.
//
// Exit codes of `sandrun exec` (after `docker run`; `sandrun call` and `exec --json` keep 0/1/2):
//   the command's own code | 124 timeout | 128+N killed by signal N
//   125 refused before anything ran (bad input, policy, config, approval denied)
//   123 the sandbox or its engine is unavailable (nothing ran)
//   122 waiting for an operator's approval (nothing ran yet; the approval id on stdout)
//   121 internal error of sandrun (including `spawn-failed`: the request passed every check and
//       sandrun could not create the host process, a fault of the runner and not of the input)
//
// The stream (POST /v1/exec, `Upgrade: sandrun-exec/1`, answered 101): frames of one type byte,
// a 4-byte big-endian length and the payload, in both directions.
//   client -> server: 'I' stdin bytes (<= kMaxClientFrame), 'E' stdin EOF, 'C' cancel
//   server -> client: 'O' stdout bytes, 'R' stderr bytes, 'W' a warning line,
//                     'X' the end: an ExecReport as JSON, then the server closes.
// The connection ending before 'X' cancels the run (TERM, then KILL after 3 s).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/api/exec_tool.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

inline constexpr int kExecExitInternal = 121;
inline constexpr int kExecExitApprovalPending = 122;
inline constexpr int kExecExitUnavailable = 123;
inline constexpr int kExecExitTimeout = 124;
inline constexpr int kExecExitRefused = 125;

inline constexpr const char* kExecUpgrade = "sandrun-exec/1";
inline constexpr size_t kMaxClientFrame = 64 * 1024;         // stdin chunks, cancel, EOF
inline constexpr size_t kMaxServerFrame = 64 * 1024 * 1024;  // the end report holds the result

// What the CLI prints and how it exits for one exec, whichever path ran it.
struct ExecReport {
  int exit_code = kExecExitInternal;  // the table above
  int call_exit = 1;                  // 0 handled, 1 internal, 2 refused (`call`, `exec --json`)
  std::string id;                     // a session id (yielded) or approval id (pending), or ""
  std::string message;                // for stderr as "sandrun: ...", or ""
  std::vector<std::string> warnings;  // "Warning: ..." lines, for stderr
  // The config loaders' warnings of a call the server ran, for the CLI's stderr (with --json
  // too: they are not in the result object). A one-shot CLI printed them itself.
  std::vector<std::string> diagnostics;
  std::string json;  // the result object
};
// `cancelled_by` is the signal the CLI got (0: none), for a run that ended without a status.
ExecReport ReportExec(const ExecToolResult& result, int cancelled_by);
// The refusal of a request the server could not even parse (exit 125, or 121 when internal).
ExecReport ReportError(const Error& error, bool internal);

std::string ExecReportToJson(const ExecReport& report);
Result<ExecReport> ExecReportFromJson(std::string_view json);

// Prints `report` as the CLI does and returns the exit code: the result object with --json
// (exit 0/1/2, or the table with --exit-code), else the id on stdout, the message and warnings
// on stderr (the command's own output was streamed already).
int PrintExecReport(const ExecReport& report, bool json, bool exit_code_table);

// One frame: type, big-endian length, payload.
std::string Frame(char type, std::string_view payload);

// Reassembles frames from a byte stream. Feed bytes, then take frames while Next returns one;
// a frame longer than `max_payload` makes the stream invalid (the peer is dropped).
class FrameReader {
 public:
  explicit FrameReader(size_t max_payload) : max_(max_payload) {}
  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  struct Item {
    char type;
    std::string payload;
  };
  std::optional<Item> Next();
  bool invalid() const { return invalid_; }

 private:
  size_t max_;
  std::string buffer_;
  bool invalid_ = false;
};

}  // namespace sandrun::api
