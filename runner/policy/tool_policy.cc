#include "runner/policy/tool_policy.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "runner/policy/host_resolution.h"
#include "runner/policy/sandbox_spec.h"
#include "sandbox/base/strings.h"

namespace sandrun::policy {
namespace {

// OpenClaw's TOOL_GROUPS.
const std::map<std::string, std::vector<std::string>>& ToolGroups() {
  static const std::map<std::string, std::vector<std::string>> kGroups = {
      {"group:fs", {"read", "write", "edit", "apply_patch"}},
      {"group:runtime", {"exec", "process"}},
      {"group:web", {"web_search", "web_fetch"}},
      {"group:memory", {"memory_search", "memory_get"}},
      {"group:sessions",
       {"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "session_status"}},
      {"group:ui", {"browser", "canvas"}},
      {"group:automation", {"cron", "gateway"}},
      {"group:messaging", {"message"}},
      {"group:nodes", {"nodes"}},
  };
  return kGroups;
}

bool MatchesAny(const std::vector<std::string>& patterns, std::string_view tool) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return GlobMatch(p, tool); });
}

Error Denied(std::string_view tool, const char* list) {
  return Error::Refusal("tool-denied",
                        "Tool " + std::string(tool) + " is denied by tool policy (" + list + ").");
}

// "openai/gpt-5.4" -> {"openai", "gpt-5.4"}; "gpt-5.4" -> {"", "gpt-5.4"}.
std::pair<std::string, std::string> SplitModel(const std::string& id) {
  std::string s = Lower(Trim(id));
  size_t slash = s.find('/');
  if (slash == std::string::npos) return {"", s};
  return {s.substr(0, slash), s.substr(slash + 1)};
}

std::string JoinPath(const std::string& dir, const std::string& rel) {
  return NormalizePosixPath(dir == "/" ? "/" + rel : dir + "/" + rel);
}

}  // namespace

std::string NormalizeToolName(std::string_view name) {
  std::string n = Lower(Trim(name));
  if (n == "bash") return "exec";
  if (n == "apply-patch") return "apply_patch";
  return n;
}

std::vector<std::string> ExpandToolGroups(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  auto add = [&](const std::string& n) {
    if (!n.empty() && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (const std::string& raw : names) {
    std::string n = NormalizeToolName(raw);
    auto group = ToolGroups().find(n);
    if (group == ToolGroups().end()) {
      add(n);
    } else {
      for (const std::string& member : group->second) add(member);
    }
  }
  return out;
}

ToolVerdict EvaluateToolPolicy(const config::ToolPolicy& policy, std::string_view tool) {
  const std::string name = NormalizeToolName(tool);
  if (MatchesAny(ExpandToolGroups(policy.deny), name)) return ToolVerdict::kDenied;
  const std::vector<std::string> allow = ExpandToolGroups(policy.allow);
  if (allow.empty() || MatchesAny(allow, name)) return ToolVerdict::kAllowed;
  // apply_patch is a kind of write: allowing write allows it (OpenClaw's docs).
  if (name == kToolApplyPatch && MatchesAny(allow, "write")) return ToolVerdict::kAllowed;
  return ToolVerdict::kNotAllowed;
}

std::optional<Error> CheckToolAllowed(const ToolPolicyLayers& layers, std::string_view tool) {
  const std::string name = NormalizeToolName(tool);
  for (const config::ToolPolicy* layer : layers) {
    if (layer == nullptr) continue;
    switch (EvaluateToolPolicy(*layer, name)) {
      case ToolVerdict::kAllowed:
        break;
      case ToolVerdict::kDenied:
        return Denied(name, "tools.deny");
      case ToolVerdict::kNotAllowed:
        return Denied(name, "tools.allow");
    }
  }
  return std::nullopt;
}

bool IsToolAllowed(const ToolPolicyLayers& layers, std::string_view tool) {
  return !CheckToolAllowed(layers, tool).has_value();
}

bool ApplyPatchAllowedForModel(const config::ApplyPatchSettings& settings,
                               const std::optional<std::string>& model) {
  std::vector<std::string> entries;
  for (const std::string& e : settings.allow_models) {
    if (!Trim(e).empty()) entries.push_back(e);
  }
  if (entries.empty()) return true;
  if (!model.has_value() || Trim(*model).empty()) return false;
  const auto [provider, id] = SplitModel(*model);
  return std::any_of(entries.begin(), entries.end(), [&](const std::string& entry) {
    const auto [entry_provider, entry_id] = SplitModel(entry);
    if (entry_id != id) return false;
    return entry_provider.empty() || provider.empty() || entry_provider == provider;
  });
}

Result<ApplyPatchTarget> GateApplyPatch(const ApplyPatchContext& ctx) {
  if (ctx.settings == nullptr) {
    return Error::Refusal("invalid-config", "internal: apply_patch was called without settings.");
  }
  const config::AgentSettings& s = *ctx.settings;
  const config::ApplyPatchSettings& ap = s.exec.apply_patch;
  if (auto denied = CheckToolAllowed(ctx.tools, kToolApplyPatch)) return *denied;
  if (!ap.enabled) {
    return Error::Refusal("tool-denied",
                          "Tool apply_patch is disabled (tools.exec.applyPatch.enabled is false).");
  }
  if (!ApplyPatchAllowedForModel(ap, ctx.model)) {
    std::string list;
    for (const std::string& m : ap.allow_models) list += (list.empty() ? "" : ", ") + m;
    const std::string who = ctx.model.has_value() && !Trim(*ctx.model).empty()
                                ? "model " + Trim(*ctx.model)
                                : "a call without a model";
    return Error::Refusal("tool-denied", "Tool apply_patch is not allowed for " + who +
                                             " (tools.exec.applyPatch.allowModels: " + list + ").");
  }

  if (auto bad = ValidateCallerIds(ctx.caller)) return *bad;
  ApplyPatchTarget t;
  t.sandboxed = IsSessionSandboxed(s.sandbox, ctx.caller);
  const std::string requested = ctx.workdir.has_value() ? Trim(*ctx.workdir) : "";
  if (!t.sandboxed) {
    // A hosted tenant without host execution never writes the gateway's file system: its
    // sessions must be sandboxed (the exec gate's rule, tenants.<id>.hostExecution).
    if (!ctx.caller.tenant.empty() && !ctx.caller.host_execution) {
      return Error::Refusal("forbidden", "apply_patch on the gateway is not allowed for tenant \"" +
                                             ctx.caller.tenant +
                                             "\": its sessions must run in the sandbox "
                                             "(tenants." +
                                             ctx.caller.tenant + ".hostExecution is not true).");
    }
    // Gateway: the real workspace; the workdir is relative to it.
    if (ctx.workspace_dir.empty() || ctx.workspace_dir[0] != '/') {
      return Error::Refusal("invalid-config",
                            "apply_patch needs the agent's workspace directory "
                            "(absolute), got \"" +
                                ctx.workspace_dir + "\".");
    }
    t.root = NormalizePosixPath(ctx.workspace_dir);
    t.workspace_only = ap.workspace_only;
    t.workdir = requested.empty()     ? t.root
                : requested[0] == '/' ? NormalizePosixPath(requested)
                                      : JoinPath(t.root, requested);
    if (t.workspace_only && !PathIsWithin(t.workdir, t.root)) {
      return Error::Refusal("invalid-request", "apply_patch workdir \"" + requested +
                                                   "\" is outside the workspace " + t.root +
                                                   " (tools.exec.applyPatch.workspaceOnly).");
    }
    t.display_cwd = t.workdir;
    return t;
  }

  // Sandbox: the host side of the /workspace mount, never a path the container cannot see.
  t.workspace_only = true;
  t.alias_root = NormalizePosixPath(s.sandbox.docker.workdir.empty() ? "/workspace"
                                                                     : s.sandbox.docker.workdir);
  switch (s.sandbox.workspace_access) {
    case config::WorkspaceAccess::kRo:
      return Error::Refusal("read-only-workspace",
                            "apply_patch cannot write: the sandbox workspace is read-only "
                            "(sandbox.workspaceAccess is \"ro\").");
    case config::WorkspaceAccess::kRw:
      if (ctx.workspace_dir.empty() || ctx.workspace_dir[0] != '/') {
        return Error::Refusal("invalid-config",
                              "sandbox.workspaceAccess \"rw\" needs the agent's "
                              "workspace directory (absolute), got \"" +
                                  ctx.workspace_dir + "\".");
      }
      t.root = NormalizePosixPath(ctx.workspace_dir);
      break;
    case config::WorkspaceAccess::kNone: {
      std::string base = Trim(s.sandbox.workspace_root);
      if (base == "~" || base.rfind("~/", 0) == 0) {
        base = ctx.home.empty() ? std::string() : ctx.home + base.substr(1);
      }
      if (base.empty() && Trim(s.sandbox.workspace_root).empty()) {
        base = ctx.state_dir.empty() ? std::string() : ctx.state_dir + "/sandboxes";
      }
      if (base.empty() || base[0] != '/') {
        return Error::Refusal(
            "invalid-config",
            "the sandbox scratch workspace needs an absolute sandbox.workspaceRoot "
            "or state dir.");
      }
      t.scope_key = SandboxScopeKey(s.sandbox.scope, ctx.caller);
      t.root = ScratchWorkspaceDir(base, s.sandbox.scope, t.scope_key);
      t.scratch = true;
      const HostProbe probe = DefaultHostProbe();
      t.sandbox_user = SandboxUser(s.sandbox.docker, probe.uid, probe.gid);
      t.scratch_limit_bytes = s.sandbox.scratch_limit_bytes;
      break;
    }
  }
  std::string container_dir = t.alias_root;
  if (requested.empty()) {
    t.workdir = t.root;
  } else {
    const std::string wanted =
        requested[0] == '/' ? NormalizePosixPath(requested) : JoinPath(t.alias_root, requested);
    if (PathIsWithin(wanted, t.alias_root)) {
      const std::string rel = wanted.substr(std::min(wanted.size(), t.alias_root.size() + 1));
      t.workdir = rel.empty() || wanted == t.alias_root ? t.root : JoinPath(t.root, rel);
      container_dir = wanted;
    } else if (PathIsWithin(wanted, t.root)) {
      t.workdir = wanted;
      const std::string rel = wanted.substr(std::min(wanted.size(), t.root.size() + 1));
      container_dir = wanted == t.root ? t.alias_root : JoinPath(t.alias_root, rel);
    } else {
      return Error::Refusal("invalid-request", "apply_patch workdir \"" + requested +
                                                   "\" is outside the sandbox workspace " +
                                                   t.alias_root + ".");
    }
  }
  t.display_cwd = container_dir;
  return t;
}

}  // namespace sandrun::policy
