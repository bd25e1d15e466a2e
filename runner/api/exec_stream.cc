#include "runner/api/exec_stream.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>

#include "runner/wire/tool_result.h"
#include "sandbox/base/json.h"

namespace sandrun::api {
namespace {

// The result's first text block, the way the tool result words it.
std::string ResultText(const std::string& json) {
  auto doc = ParseJson(json);
  if (!doc || !doc->IsObject()) return "";
  const auto* content = JsonMember(*doc, "content");
  if (content == nullptr || !content->IsArray() || content->Empty()) return "";
  return JsonString((*content)[0], "text");
}

std::string DetailsString(const std::string& json, const char* key) {
  auto doc = ParseJson(json);
  if (!doc || !doc->IsObject()) return "";
  const auto* details = JsonMember(*doc, "details");
  return details ? JsonString(*details, key) : "";
}

}  // namespace

ExecReport ReportError(const Error& error, bool internal) {
  ExecReport r;
  r.json = RenderToolError(error);
  r.message = error.ToString();
  r.call_exit = internal ? kExitFailure : kExitRefused;
  const std::string code = error.WireCode();
  if (internal || code == "internal" || code == "spawn-failed") {
    r.exit_code = kExecExitInternal;
  } else if (code == "sandbox-unavailable") {
    r.exit_code = kExecExitUnavailable;
  } else if (code == "approval-pending") {
    r.exit_code = kExecExitApprovalPending;  // --wait with no server to wait through
  } else {
    r.exit_code = kExecExitRefused;
  }
  return r;
}

ExecReport ReportExec(const ExecToolResult& result, int cancelled_by) {
  if (result.refused || result.internal) {
    ExecReport r = ReportError(result.error, result.internal);
    r.json = result.json;
    return r;
  }
  ExecReport r;
  r.json = result.json;
  r.call_exit = kExitOk;
  if (result.running || result.pending) {
    // Nothing finished: the id to follow up with on stdout, the explanation on stderr.
    r.id = DetailsString(result.json, result.running ? "sessionId" : "approvalId");
    r.message = ResultText(result.json);
    r.exit_code = result.running ? kExitOk : kExecExitApprovalPending;
    return r;
  }
  r.warnings = result.warnings;
  const auto& out = result.outcome;
  using Status = exec::ExecOutcome::Status;
  std::string reason = FailureReason(out, result.timeout_seconds);
  switch (out.status) {
    case Status::kExited:
      r.exit_code = out.exit_code;
      return r;
    case Status::kSignaled:
      r.message = reason;
      r.exit_code = 128 + out.signal;
      return r;
    case Status::kTimedOut:
      r.message = reason;
      r.exit_code = kExecExitTimeout;
      return r;
    case Status::kAborted:
      r.message = reason;
      r.exit_code = cancelled_by > 0 ? 128 + cancelled_by : kExecExitInternal;
      return r;
  }
  return r;
}

std::string ExecReportToJson(const ExecReport& report) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto str = [&](const char* key, const std::string& v) {
    w.Key(key);
    w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  };
  w.StartObject();
  w.Key("exitCode");
  w.Int(report.exit_code);
  w.Key("callExit");
  w.Int(report.call_exit);
  str("id", report.id);
  str("message", report.message);
  for (const auto& [key, lines] :
       {std::pair{"warnings", &report.warnings}, std::pair{"diagnostics", &report.diagnostics}}) {
    w.Key(key);
    w.StartArray();
    for (const auto& line : *lines) {
      w.String(line.c_str(), static_cast<rapidjson::SizeType>(line.size()));
    }
    w.EndArray();
  }
  str("result", report.json);
  w.EndObject();
  return buffer.GetString();
}

Result<ExecReport> ExecReportFromJson(std::string_view json) {
  auto doc = ParseJson(std::string(json));
  if (!doc || !doc->IsObject())
    return Error(ErrorCode::kProtocol, "the server's report is not JSON");
  const auto* code = JsonMember(*doc, "exitCode");
  const auto* call = JsonMember(*doc, "callExit");
  if (code == nullptr || !code->IsInt() || call == nullptr || !call->IsInt()) {
    return Error(ErrorCode::kProtocol, "the server's report has no exit code");
  }
  ExecReport r;
  r.exit_code = code->GetInt();
  r.call_exit = call->GetInt();
  r.id = JsonString(*doc, "id");
  r.message = JsonString(*doc, "message");
  r.json = JsonString(*doc, "result");
  for (const auto& [key, lines] :
       {std::pair{"warnings", &r.warnings}, std::pair{"diagnostics", &r.diagnostics}}) {
    if (const auto* list = JsonMember(*doc, key); list && list->IsArray()) {
      for (const auto& line : list->GetArray()) {
        if (line.IsString()) lines->emplace_back(line.GetString(), line.GetStringLength());
      }
    }
  }
  return r;
}

int PrintExecReport(const ExecReport& report, bool json, bool exit_code_table) {
  for (const auto& d : report.diagnostics) PrintWarning(d);
  if (json) {
    std::printf("%s\n", report.json.c_str());
    std::fflush(stdout);
    return exit_code_table ? report.exit_code : report.call_exit;
  }
  for (const auto& w : report.warnings) PrintWarning(w);
  if (!report.message.empty()) PrintError(report.message);
  if (!report.id.empty()) std::printf("%s\n", report.id.c_str());
  std::fflush(stdout);
  return report.exit_code;
}

std::string Frame(char type, std::string_view payload) {
  std::string f;
  f.reserve(5 + payload.size());
  f.push_back(type);
  uint32_t n = static_cast<uint32_t>(payload.size());
  for (int shift = 24; shift >= 0; shift -= 8) f.push_back(static_cast<char>((n >> shift) & 0xff));
  f.append(payload);
  return f;
}

std::optional<FrameReader::Item> FrameReader::Next() {
  if (invalid_ || buffer_.size() < 5) return std::nullopt;
  uint32_t n = 0;
  for (size_t i = 1; i <= 4; ++i) n = (n << 8) | static_cast<unsigned char>(buffer_[i]);
  if (n > max_) {
    invalid_ = true;
    return std::nullopt;
  }
  if (buffer_.size() < 5 + static_cast<size_t>(n)) return std::nullopt;
  Item item{buffer_[0], buffer_.substr(5, n)};
  buffer_.erase(0, 5 + static_cast<size_t>(n));
  return item;
}

}  // namespace sandrun::api
