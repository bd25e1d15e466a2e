#include "runner/config/approval_records.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>

#include "runner/config/approvals_file.h"
#include "runner/config/config_reader.h"
#include "runner/config/json_lines.h"

namespace sandrun::config {
namespace {

using internal::Field;
using internal::Value;

const std::vector<const char*> kStatuses = {"pending", "approved", "denied",
                                            "expired", "failed",   "dropped"};

class Parser : public internal::ConfigReader {
 public:
  using ConfigReader::ConfigReader;

  Result<ApprovalRecords> Parse(const Value& root) {
    ApprovalRecords out;
    SANDRUN_RETURN_IF_ERROR(ExpectVersion1(root));
    auto approvals = [&](const Value& v, const std::string& p) -> Status {
      if (!v.IsArray()) return Expected(p, "an array", v);
      for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        ApprovalRecord r;
        SANDRUN_RETURN_IF_ERROR(Record(v[i], p + "[" + std::to_string(i) + "]", &r));
        out.records.push_back(std::move(r));
      }
      return Ok();
    };
    SANDRUN_RETURN_IF_ERROR(Members(root, "", {{"version", {}}, {"approvals", approvals}}));
    return out;
  }

 private:
  Field Raw(const char* key, std::string* out) {
    return {key, [this, out](const Value& v, const std::string& p) -> Status {
              if (!v.IsObject()) return Expected(p, "an object", v);
              *out = ToJson(v);
              return Ok();
            }};
  }

  Status Record(const Value& v, const std::string& path, ApprovalRecord* r) {
    SANDRUN_RETURN_IF_ERROR(Members(
        v, path,
        {Str("id", &r->id, internal::Rule::kNonEmpty), Name("status", &r->status, kStatuses),
         Str("command", &r->command), Str("host", &r->host), Str("cwd", &r->cwd),
         Str("agentId", &r->agent_id), Str("sessionKey", &r->session_key),
         Int("createdAtMs", &r->created_ms), Int("expiresAtMs", &r->expires_ms),
         List("allowedDecisions", &r->allowed_decisions), Str("reason", &r->reason),
         Raw("request", &r->request_json), Raw("principal", &r->principal_json),
         Str("decision", &r->decision), Str("decidedBy", &r->decided_by),
         Int("decidedAtMs", &r->decided_ms), Str("sessionId", &r->session_id),
         Str("text", &r->text)}));
    if (r->id.empty()) return Fail(path, "a record without an \"id\"");
    return Ok();
  }
};

using PrettyWriter = PrettyJsonWriter;

const StateFileFormat<ApprovalRecords>& RecordsFormat() {
  static const StateFileFormat<ApprovalRecords> format{"approvals record", ParseApprovalRecords,
                                                       SerializeApprovalRecords};
  return format;
}

}  // namespace

std::string ApprovalRecordsPath(const std::string& state_dir, const std::string& tenant) {
  return (tenant.empty() ? state_dir : TenantStateDir(state_dir, tenant)) +
         "/approvals-record.json";
}

Result<ApprovalRecords> ParseApprovalRecords(std::string_view text, const std::string& path,
                                             std::vector<std::string>* warnings) {
  return internal::ParseWithReader<Parser, ApprovalRecords>(text, path, warnings);
}

std::string SerializeApprovalRecords(const ApprovalRecords& records) {
  return VersionedFileText([&](PrettyJsonWriter& w) {
    w.Key("approvals");
    w.StartArray();
    for (const ApprovalRecord& r : records.records) {
      w.StartObject();
      auto str = [&](const char* key, const std::string& value, bool always = false) {
        if (value.empty() && !always) return;
        w.Key(key);
        w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
      };
      auto num = [&](const char* key, int64_t value) {
        w.Key(key);
        w.Int64(value);
      };
      auto raw = [&](const char* key, const std::string& json) {
        if (json.empty()) return;
        w.Key(key);
        w.RawValue(json.data(), json.size(), rapidjson::kObjectType);
      };
      str("id", r.id, true);
      str("status", r.status, true);
      str("command", r.command, true);
      str("host", r.host);
      str("cwd", r.cwd);
      str("agentId", r.agent_id);
      str("sessionKey", r.session_key);
      num("createdAtMs", r.created_ms);
      num("expiresAtMs", r.expires_ms);
      w.Key("allowedDecisions");
      w.StartArray();
      for (const std::string& d : r.allowed_decisions) {
        w.String(d.data(), static_cast<rapidjson::SizeType>(d.size()));
      }
      w.EndArray();
      str("reason", r.reason);
      raw("request", r.request_json);
      raw("principal", r.principal_json);
      str("decision", r.decision);
      str("decidedBy", r.decided_by);
      if (r.decided_ms != 0) num("decidedAtMs", r.decided_ms);
      str("sessionId", r.session_id);
      str("text", r.text);
      w.EndObject();
    }
    w.EndArray();
  });
}

Result<LoadedState<ApprovalRecords>> LoadApprovalRecords(const std::string& path) {
  return LoadStateFile(path, RecordsFormat());
}

Status UpsertApprovalRecord(const std::string& path, const ApprovalRecord& record) {
  auto updated =
      UpdateStateFile<ApprovalRecords>(path, RecordsFormat(), [&](ApprovalRecords& file) -> Status {
        auto& list = file.records;
        auto it = std::find_if(list.begin(), list.end(),
                               [&](const ApprovalRecord& r) { return r.id == record.id; });
        if (it != list.end()) {
          *it = record;
        } else {
          list.push_back(record);
        }
        size_t decided = static_cast<size_t>(
            std::count_if(list.begin(), list.end(),
                          [](const ApprovalRecord& r) { return r.status != "pending"; }));
        for (auto r = list.begin(); decided > kMaxDecidedRecords && r != list.end();) {
          if (r->status != "pending") {
            r = list.erase(r);
            --decided;
          } else {
            ++r;
          }
        }
        return Ok();
      });
  if (!updated) return std::move(updated).error();
  return Ok();
}

}  // namespace sandrun::config
