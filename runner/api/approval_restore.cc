#include "runner/api/approval_restore.h"

#include <filesystem>

#include "runner/api/tool_call.h"
#include "runner/config/approval_records.h"
#include "runner/config/ids.h"
#include "sandbox/base/json.h"

namespace sandrun::api {

std::string PrincipalToJson(const Principal& who) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  WriteJsonField(w, "tenant", who.tenant);
  WriteJsonField(w, "role", who.role);
  WriteJsonField(w, "tokenName", who.token_name);
  WriteJsonField(w, "agent", who.agent);
  WriteJsonField(w, "session", who.session);
  WriteJsonField(w, "workspaceRoot", who.workspace_root);
  WriteJsonField(w, "provider", who.provider);
  WriteJsonField(w, "sender", who.sender);
  w.Key("uid");
  w.Int64(who.uid);
  WriteJsonField(w, "cwd", who.cwd);
  w.EndObject();
  return buffer.GetString();
}

Result<Principal> PrincipalFromJson(std::string_view json) {
  auto doc = ParseJson(std::string(json));
  if (!doc || !doc->IsObject()) {
    return Error(ErrorCode::kInvalidArgument, "the record does not say who asked");
  }
  Principal who;
  who.tenant = JsonString(*doc, "tenant");
  who.role = JsonString(*doc, "role", who.role);
  who.token_name = JsonString(*doc, "tokenName");
  who.agent = JsonString(*doc, "agent", who.agent);
  who.session = JsonString(*doc, "session", who.session);
  who.workspace_root = JsonString(*doc, "workspaceRoot");
  who.provider = JsonString(*doc, "provider", who.provider);
  who.sender = JsonString(*doc, "sender");
  who.uid = JsonInt(*doc, "uid", -1);
  who.cwd = JsonString(*doc, "cwd");
  // The ids name paths and scopes: a record cannot smuggle in what no caller could send.
  if (auto bad = config::CallerIdsError(who.agent, who.session)) {
    return Error(ErrorCode::kInvalidArgument, *bad);
  }
  if (!who.tenant.empty()) {
    if (auto bad = config::TenantIdError(who.tenant)) {
      return Error(ErrorCode::kInvalidArgument, *bad);
    }
  }
  return who;
}

namespace {

void RestoreTenant(const std::string& state_dir, const std::string& tenant, ApprovalBroker& broker,
                   const RebuildFn& rebuild, RestoreReport* report) {
  auto loaded = config::LoadApprovalRecords(config::ApprovalRecordsPath(state_dir, tenant));
  if (!loaded) {
    report->warnings.push_back("pending approvals of tenant \"" + tenant +
                               "\" were not restored: " + loaded.error().ToString());
    return;
  }
  for (const config::ApprovalRecord& record : loaded->file.records) {
    if (record.status != "pending") continue;
    auto fail = [&](const std::string& why) {
      broker.Drop(record, tenant, why);
      ++report->dropped;
    };
    auto who = PrincipalFromJson(record.principal_json);
    if (!who) {
      fail(who.error().ToString());
      continue;
    }
    if (who->tenant != tenant) {
      fail("the record names tenant \"" + who->tenant + "\"");
      continue;
    }
    auto call = ParseToolCall(record.request_json);
    if (!call || call->tool != "exec") {
      fail(call ? "the record is not an exec call" : call.error().ToString());
      continue;
    }
    auto pending = rebuild(*who, call->exec);
    if (!pending) {
      fail(pending.error().ToString());
      continue;
    }
    pending->id = record.id;
    pending->created_ms = record.created_ms;
    pending->expires_ms = record.expires_ms;
    pending->principal_json = record.principal_json;
    broker.Restore(std::move(*pending));
    ++report->restored;
  }
}

}  // namespace

RestoreReport RestorePendingApprovals(const std::string& state_dir, ApprovalBroker& broker,
                                      const RebuildFn& rebuild) {
  RestoreReport report;
  RestoreTenant(state_dir, "", broker, rebuild, &report);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(state_dir + "/tenants", ec)) {
    const std::string id = entry.path().filename().string();
    if (entry.is_symlink(ec) || !entry.is_directory(ec) || config::TenantIdError(id)) continue;
    RestoreTenant(state_dir, id, broker, rebuild, &report);
  }
  return report;
}

}  // namespace sandrun::api
