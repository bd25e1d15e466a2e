#include "runner/api/apply_patch_tool.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <variant>

#include "runner/api/exec_cmd.h"
#include "runner/api/exec_tool.h"
#include "runner/api/runtime.h"
#include "runner/config/config.h"
#include "runner/config/state_dir.h"
#include "runner/patch/patch.h"
#include "runner/policy/tool_policy.h"
#include "runner/wire/tool_result.h"
#include "sandbox/base/json.h"
#include "sandbox/executors/docker/host_mounts.h"
#include "sandbox/os/file.h"

namespace sandrun::api {
namespace {

using Writer = JsonWriter;

ApplyPatchToolResult Refused(std::string code, std::string message) {
  ApplyPatchToolResult r;
  r.refused = true;
  r.error = Error::Refusal(std::move(code), std::move(message));
  r.json = RenderToolError(r.error);
  return r;
}

// `code`: internal, or apply-failed (writing failed and was rolled back).
ApplyPatchToolResult Internal(std::string code, std::string message) {
  ApplyPatchToolResult r;
  r.internal = true;
  r.error = Error(ErrorCode::kInternal, std::move(message)).WithWire(std::move(code));
  r.json = RenderToolError(r.error);
  return r;
}

void WriteList(Writer& w, const char* key, const std::vector<std::string>& items) {
  w.Key(key);
  w.StartArray();
  for (const auto& item : items) WriteJsonString(w, item);
  w.EndArray();
}

std::string RenderApplied(const patch::ApplySummary& summary, const std::string& text,
                          const std::string& cwd, const std::string& host, int64_t duration_ms) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  BeginToolResult(w, text);
  w.Key("status");
  w.String("completed");
  WriteList(w, "added", summary.added);
  WriteList(w, "updated", summary.updated);
  WriteList(w, "deleted", summary.deleted);
  w.Key("moved");
  w.StartArray();
  for (const auto& m : summary.moved) {
    w.StartObject();
    w.Key("from");
    WriteJsonString(w, m.from);
    w.Key("to");
    WriteJsonString(w, m.to);
    w.EndObject();
  }
  w.EndArray();
  w.Key("cwd");
  WriteJsonString(w, cwd);
  w.Key("host");
  WriteJsonString(w, host);
  w.Key("durationMs");
  w.Int64(duration_ms);
  EndToolResult(w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// What ApplyPatch's errors mean for the caller (apply.h documents the codes).
ApplyPatchToolResult FromApplyError(const Error& e) {
  if (e.code == ErrorCode::kIo || e.code == ErrorCode::kInternal) {
    return Internal("apply-failed", e.ToString());
  }
  if (e.sys_errno == EXDEV) return Refused("path-not-allowed", e.ToString());
  return Refused("patch-failed", e.ToString());
}

}  // namespace

ApplyPatchToolResult RunApplyPatchTool(const GlobalOptions& global, const policy::Caller& caller,
                                       const ApplyPatchRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  auto state_dir = config::StateDirPath();
  if (!state_dir) return Internal("internal", state_dir.error().ToString());
  if (auto ok = config::EnsureStateDir(*state_dir); !ok) {
    return Internal("internal", ok.error().ToString());
  }
  auto cfg = config::LoadConfigFor(global.config_file, *state_dir);
  if (!cfg) return Refused("invalid-config", cfg.error().ToString());
  for (const auto& w : cfg->warnings) PrintWarning(w);
  const CallSettings picked = SettingsForCall(*cfg, caller.tenant, global.agent);
  const config::AgentSettings& settings = picked.settings;

  policy::ApplyPatchContext ctx;
  ctx.settings = &settings;
  ctx.tools = {&picked.global_tools, &settings.tools};
  ctx.caller = caller;
  ctx.caller.host_execution = picked.host_execution;
  ctx.state_dir = *state_dir;
  auto workspace = CallWorkspaceDir(global, caller, settings, *state_dir);
  if (!workspace) {
    const Error& e = workspace.error();
    return e.code == ErrorCode::kRefused ? Refused(e.WireCode(), e.message)
                                         : Internal("internal", e.ToString());
  }
  ctx.workspace_dir = *workspace;
  if (const char* home = std::getenv("HOME")) ctx.home = home;
  ctx.workdir = request.workdir;
  ctx.model = request.model;
  auto target = policy::GateApplyPatch(ctx);
  if (!target) return Refused(target.error().WireCode(), target.error().message);

  auto parsed = patch::ParsePatch(request.input);
  if (!parsed) return Refused("invalid-patch", parsed.error().message);
  exec::SandboxSpec scratch;
  if (target->scratch) {
    // The per-scope scratch dir exists once a container used it; a patch may come first. It is
    // made as the sandbox makes it (never through a link, mounted from its image when bounded).
    scratch.state_dir = *state_dir;
    scratch.scope_key = target->scope_key;
    scratch.workspace_host_dir = target->root;
    scratch.scratch = true;
    scratch.user = target->sandbox_user;
    scratch.scratch_limit_bytes = target->scratch_limit_bytes;
    if (auto made = exec::EnsureScratch(scratch, exec::DetectMountSupport(true)); !made) {
      return Internal("internal", "cannot prepare the sandbox workspace " + target->root + ": " +
                                      made.error().ToString());
    }
  }
  patch::ApplyOptions options;
  options.root = target->root;
  options.workdir = target->workdir;
  options.workspace_only = target->workspace_only;
  options.alias_root = target->alias_root;
  if (target->sandboxed) options.fence = "the sandbox sees only " + target->alias_root;
  auto applied = patch::ApplyPatch(*parsed, options);
  if (!applied) return FromApplyError(applied.error());
  // What the patch made in the scratch dir belongs to the sandbox user, who must be able to change
  // it (the sandbox never runs as root by default).
  if (target->scratch) (void)exec::GiveScratchToSandboxUser(scratch);

  ApplyPatchToolResult result;
  result.summary = std::move(applied).value();
  result.text = patch::SummaryText(result.summary);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  result.json = RenderApplied(result.summary, result.text, target->display_cwd,
                              target->sandboxed ? "sandbox" : "gateway", ms);
  return result;
}

int RunApplyPatchCommand(const GlobalOptions& global, const ApplyPatchFlags& flags) {
  ApplyPatchRequest request;
  if (flags.file.empty() || flags.file == "-") {
    request.input.assign(std::istreambuf_iterator<char>(std::cin),
                         std::istreambuf_iterator<char>());
  } else {
    auto text = ReadFile(flags.file, patch::kMaxPatchBytes);
    if (!text) {
      PrintError("cannot read the patch: " + text.error().ToString());
      return kExitRefused;
    }
    request.input = std::move(text).value();
  }
  if (!flags.workdir.empty()) request.workdir = flags.workdir;
  if (!flags.model.empty()) request.model = flags.model;
  ApplyPatchToolResult result =
      Runtime::StartOneShot(global)->ApplyPatch(CliPrincipal(global), request);
  if (flags.json) {
    std::printf("%s\n", result.json.c_str());
  } else if (result.refused || result.internal) {
    PrintError(result.error.ToString());
  } else {
    std::printf("%s\n", result.text.c_str());
  }
  return result.refused ? kExitRefused : result.internal ? kExitFailure : kExitOk;
}

}  // namespace sandrun::api
