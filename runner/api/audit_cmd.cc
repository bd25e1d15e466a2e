#include "runner/api/audit_cmd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <set>
#include <string_view>
#include <utility>

#include "runner/api/audit_sandbox_checks.h"
#include "runner/config/state_dir.h"
#include "runner/policy/allowlist_pattern.h"
#include "runner/policy/exec_options.h"
#include "runner/policy/host_resolution.h"
#include "runner/policy/inline_eval.h"
#include "sandbox/base/json.h"
#include "sandbox/base/strings.h"
#include "sandbox/harden/profile_file.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::api {
namespace {

constexpr const char* kApprovalsName = "exec-approvals.json";
constexpr size_t kMaxApprovalsBytes = 16u << 20;

// Probes for "does this pattern cover a shell / an interpreter / everything": real paths where
// such programs live (path globs) and the names they are invoked by (bare-name globs).
constexpr std::array<std::string_view, 8> kShellPaths = {
    "/bin/sh",   "/usr/bin/sh",   "/bin/bash", "/usr/bin/bash",
    "/bin/dash", "/usr/bin/dash", "/bin/zsh",  "/usr/bin/zsh"};
constexpr std::array<std::string_view, 4> kShellNames = {"sh", "bash", "dash", "zsh"};
constexpr std::array<std::string_view, 10> kInterpreterPaths = {
    "/usr/bin/python3",    "/usr/local/bin/python3", "/usr/bin/perl", "/usr/bin/node",
    "/usr/local/bin/node", "/usr/bin/awk",           "/usr/bin/find", "/usr/bin/xargs",
    "/usr/bin/sed",        "/usr/bin/ruby"};
constexpr std::array<std::string_view, 10> kInterpreterNames = {
    "python3", "node", "perl", "ruby", "awk", "sed", "find", "xargs", "make", "php"};
// A pattern matching all of these matches every executable there is.
constexpr std::array<std::string_view, 6> kEverywherePaths = {
    "/usr/bin/python3",   "/bin/sh", "/usr/local/bin/node", "/home/u/.local/bin/tool",
    "/opt/a/b/c/d/bin/e", "/tmp/x"};
constexpr std::array<std::string_view, 5> kEveryName = {"x", "python3", "sh", "rg", "my-tool_2.0"};

template <size_t N>
std::string FirstMatch(std::string_view pattern, const std::array<std::string_view, N>& probes) {
  for (std::string_view probe : probes) {
    if (policy::GlobMatchPath(pattern, probe)) return std::string(probe);
  }
  return "";
}

template <size_t N>
bool MatchesAll(std::string_view pattern, const std::array<std::string_view, N>& probes) {
  return std::all_of(probes.begin(), probes.end(),
                     [&](std::string_view p) { return policy::GlobMatchPath(pattern, p); });
}

// The basename of a pattern with the glob characters removed, lowercased: "/usr/bin/python*"
// -> "python".
std::string StrippedBasename(std::string_view pattern) {
  std::string s(pattern);
  std::replace(s.begin(), s.end(), '\\', '/');
  size_t slash = s.rfind('/');
  if (slash != std::string::npos) s.erase(0, slash + 1);
  std::erase_if(s, [](char c) { return c == '*' || c == '?' || c == '[' || c == ']'; });
  return Lower(s);
}

struct PatternRisk {
  bool everything = false;
  std::string shell;        // what makes it cover a shell: a name or a probe path; "" if none
  std::string interpreter;  // the same for an interpreter
};

PatternRisk ClassifyPattern(std::string_view raw) {
  PatternRisk r;
  const std::string pattern = Trim(raw);
  if (pattern.empty() || pattern.starts_with("=command:")) return r;
  const bool path = policy::IsPathPattern(pattern);
  // "~" patterns are expanded with the runner's $HOME at match time; the probes do not know it,
  // so such patterns are judged by their basename only.
  const bool home = pattern.starts_with("~");
  if (pattern == "*" ||
      (!home && (path ? MatchesAll(pattern, kEverywherePaths) : MatchesAll(pattern, kEveryName)))) {
    r.everything = true;
    return r;
  }
  const std::string base = StrippedBasename(pattern);
  if (policy::IsShellName(base)) {
    r.shell = base;
  } else if (!home) {
    r.shell = path ? FirstMatch(pattern, kShellPaths) : FirstMatch(pattern, kShellNames);
  }
  if (policy::IsInterpreterLike(pattern)) {
    r.interpreter = base;
  } else if (!home) {
    r.interpreter =
        path ? FirstMatch(pattern, kInterpreterPaths) : FirstMatch(pattern, kInterpreterNames);
  }
  return r;
}

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string OctalMode(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777u);
  return buf;
}

class Auditor {
 public:
  explicit Auditor(const AuditInput& in) : in_(in) {
    if (in_.config != nullptr) {
      config_ = in_.config;
    } else {
      default_config_.emplace();
      config_ = &*default_config_;
    }
  }

  std::vector<AuditFinding> Run() {
    ApprovalsFileChecks();
    ScopeChecks("tools.exec", config_->global, nullptr);
    for (const auto& [id, settings] : config_->agents) {
      ScopeChecks("agents." + id + ".tools.exec", settings, &global_keys_);
    }
    if (in_.approvals != nullptr) {
      for (const auto& [agent, policy] : in_.approvals->agents) AllowlistChecks(agent, policy);
    }
    for (const std::string& agent : AgentIds()) SecurityFullCheck(agent);
    for (AuditFinding& f : AuditHostAndSandbox(*config_)) findings_.push_back(std::move(f));
    return std::move(findings_);
  }

 private:
  void Add(std::string id, const char* severity, std::string where, std::string message) {
    findings_.push_back(
        AuditFinding{std::move(id), severity, std::move(where), std::move(message)});
  }

  // --- the approvals file itself --------------------------------------------------------------

  void ApprovalsFileChecks() {
    const std::string& path = in_.approvals_path;
    if (in_.approvals_mode && (*in_.approvals_mode & 077u) != 0) {
      const unsigned mode = *in_.approvals_mode;
      std::string what;
      if ((mode & 044u) != 0) what = "read";
      if ((mode & 022u) != 0) what += what.empty() ? "write" : " and write";
      if (what.empty()) what = "access";
      Add("approvals-file-permissions", "warn", kApprovalsName,
          path + " has mode " + OctalMode(mode) + ": other users can " + what +
              " the allowlists and the socket token; run chmod 600 " + path);
    }
    if (!in_.approvals_owned_by_us) {
      Add("approvals-file-owner", "warn", kApprovalsName,
          path +
              " is owned by another user, who decides what runs without approval; chown it "
              "to yourself (or remove it) and keep it mode 0600");
    }
    if (!in_.approvals_read_error.empty()) {
      Add("approvals-file-unreadable", "warn", kApprovalsName,
          path + " cannot be used (" + in_.approvals_read_error +
              "), so sandrun refuses it and commands that need the allowlist fail; replace it "
              "with a regular file of mode 0600 or remove it");
    }
    if (!in_.approvals_error.empty()) {
      Add("approvals-file-corrupt", "warn", kApprovalsName,
          path + " cannot be parsed (" + in_.approvals_error +
              "); the next command that reads it moves it aside to " + path +
              ".corrupt-<time> and starts with no allowlist; fix the JSON or remove the file");
    }
  }

  // --- safeBins and safeBinTrustedDirs of one scope -------------------------------------------

  // `skip`: the (id, entry) keys the global level already reported (null for the global level,
  // which records its keys into global_keys_).
  void ScopeChecks(const std::string& scope, const config::AgentSettings& settings,
                   const std::set<std::pair<std::string, std::string>>* skip) {
    auto report = [&](const char* id, const std::string& entry, const std::string& where,
                      std::string message) {
      std::pair<std::string, std::string> key(id, entry);
      if (skip != nullptr && skip->contains(key)) return;
      if (skip == nullptr) global_keys_.insert(key);
      Add(id, "warn", where, std::move(message));
    };

    const config::ExecSettings& exec = settings.exec;
    const std::string bins_where = scope + ".safeBins";
    const std::vector<std::string> bins =
        policy::NormalizeSafeBinNames(exec.safe_bins.value_or(policy::DefaultSafeBins()));
    for (const std::string& bin : bins) {
      const std::string base = StrippedBasename(bin);
      if (base == "jq") {
        report("safe-bin-jq", bin, bins_where,
               Quoted(bin) +
                   " is never a safe bin: jq can read the environment (env, $ENV) and load "
                   "modules from files, so sandrun ignores the entry; remove it from safeBins "
                   "and allowlist the exact jq commands you trust instead");
      } else if (policy::IsShellName(base) || policy::IsInterpreterLike(bin)) {
        const char* kind = policy::IsShellName(base) ? "a shell" : "an interpreter";
        report("safe-bin-interpreter", bin, bins_where,
               Quoted(bin) + " is " + kind +
                   ", never a safe bin: it runs whatever program it is given, so sandrun "
                   "ignores the entry; remove it from safeBins");
      } else if (!HasProfile(exec, bin)) {
        report("safe-bin-unprofiled", bin, bins_where,
               Quoted(bin) +
                   " has no safe-bin profile (neither built in nor in "
                   "tools.exec.safeBinProfiles), so sandrun ignores the entry; define "
                   "tools.exec.safeBinProfiles." +
                   bin + " or use the allowlist");
      }
    }

    const std::string dirs_where = scope + ".safeBinTrustedDirs";
    for (const std::string& raw : exec.safe_bin_trusted_dirs) {
      const std::string dir = Trim(raw);
      if (dir.empty()) continue;
      if (dir[0] != '/') {
        report("safe-bin-trusted-dir-relative", dir, dirs_where,
               Quoted(dir) +
                   " is relative, so sandrun ignores it (trusted dirs are never resolved "
                   "against a working directory or PATH); use an absolute path");
        continue;
      }
      if (!in_.trusted_dir_mode) continue;
      std::optional<unsigned> mode = in_.trusted_dir_mode(dir);
      if (mode && (*mode & 002u) != 0) {
        report("safe-bin-trusted-dir-writable", dir, dirs_where,
               Quoted(dir) + " is world-writable (mode " + OctalMode(*mode) +
                   "): anyone can put a program named like a safe bin there; remove it from "
                   "safeBinTrustedDirs or run chmod o-w " +
                   dir);
      }
    }
  }

  bool HasProfile(const config::ExecSettings& exec, const std::string& bin) const {
    if (in_.builtin_profiles != nullptr && in_.builtin_profiles->contains(bin)) return true;
    return std::any_of(exec.safe_bin_profiles.begin(), exec.safe_bin_profiles.end(),
                       [&](const auto& kv) { return Lower(Trim(kv.first)) == bin; });
  }

  // --- allowlists -----------------------------------------------------------------------------

  // Why inline eval is unchecked for the agents `section` applies to; "" when it is checked.
  std::string StrictInlineEvalOff(const std::string& section) const {
    if (section != "*") {
      if (config_->ForAgent(section).exec.strict_inline_eval) return "";
      return config_->agents.contains(section)
                 ? "agents." + section + ".tools.exec.strictInlineEval is off"
                 : "tools.exec.strictInlineEval is off for agent " + section;
    }
    if (!config_->global.exec.strict_inline_eval) return "tools.exec.strictInlineEval is off";
    std::string off;
    for (const auto& [id, settings] : config_->agents) {
      if (settings.exec.strict_inline_eval) continue;
      off += (off.empty() ? "" : ", ") + id;
    }
    return off.empty() ? "" : "tools.exec.strictInlineEval is off for agents " + off;
  }

  void AllowlistChecks(const std::string& agent, const config::ApprovalsPolicy& policy) {
    for (size_t i = 0; i < policy.allowlist.size(); ++i) {
      const std::string& pattern = policy.allowlist[i].pattern;
      const std::string where = std::string(kApprovalsName) + " agents." + agent + ".allowlist[" +
                                std::to_string(i) + "]";
      PatternRisk risk = ClassifyPattern(pattern);
      if (risk.everything) {
        Add("allowlist-wildcard", "warn", where,
            Quoted(pattern) +
                " matches every command, which makes security=allowlist the same as full; "
                "remove it and allowlist the programs themselves");
        continue;
      }
      if (!risk.shell.empty()) {
        Add("shell-allowlisted", "warn", where,
            Quoted(pattern) + " allowlists a shell (" + risk.shell + "): `" +
                StrippedBasename(risk.shell) +
                " -c '<anything>'` then runs without approval, and strictInlineEval does not "
                "look inside shell payloads; remove it and allowlist the programs the scripts "
                "run");
      }
      if (!risk.interpreter.empty()) {
        std::string off = StrictInlineEvalOff(agent);
        if (!off.empty()) {
          Add("interpreter-allowlisted-without-strict-inline-eval", "warn", where,
              Quoted(pattern) + " allowlists an interpreter (" + risk.interpreter + ") while " +
                  off +
                  ", so inline code (`python3 -c ...`, `node -e ...`, `awk '...'`) runs "
                  "anything without approval; set tools.exec.strictInlineEval to true or "
                  "remove the entry");
        }
      }
      if (const policy::ExecOptionProgram* program = ExecOptionProgramOf(pattern)) {
        Add("exec-option-program-allowlisted", "warn", where,
            Quoted(pattern) + " allowlists " + program->name + ", which " +
                ExecOptionForms(*program) + " (" + program->scope.why +
                "). sandrun never counts such a use as allowlisted: it needs an approval, every "
                "time with tools.exec.strictInlineEval (without it allow-always keeps the exact "
                "command); approve those commands one by one or run the program in the sandbox");
      }
    }
  }

  // The program of profiles/exec-options that `pattern` covers (by its basename without glob
  // characters, else by probing /usr/bin, /bin and /usr/local/bin, or the bare names); null when
  // none or when there is no table.
  const policy::ExecOptionProgram* ExecOptionProgramOf(const std::string& raw) const {
    if (in_.exec_options == nullptr) return nullptr;
    const std::string pattern = Trim(raw);
    if (pattern.empty() || pattern.starts_with("=command:")) return nullptr;
    if (const auto* p = in_.exec_options->Find(StrippedBasename(pattern))) return p;
    if (pattern.starts_with("~")) return nullptr;  // judged by the basename only (see above)
    const bool path = policy::IsPathPattern(pattern);
    for (const policy::ExecOptionProgram& p : in_.exec_options->programs()) {
      std::vector<std::string> names = {p.name};
      names.insert(names.end(), p.aliases.begin(), p.aliases.end());
      for (const std::string& name : names) {
        if (!path && policy::GlobMatchPath(pattern, name)) return &p;
        if (!path) continue;
        for (const char* dir : {"/usr/bin/", "/bin/", "/usr/local/bin/"}) {
          if (policy::GlobMatchPath(pattern, dir + name)) return &p;
        }
      }
    }
    return nullptr;
  }

  // "runs commands by itself" or "runs commands through some of its options and subcommands
  // (git -c, git --config-env, git config, ...)".
  static std::string ExecOptionForms(const policy::ExecOptionProgram& p) {
    if (p.scope.any_use) return "runs commands by itself, in every use";
    std::vector<std::string> forms;
    for (const policy::ExecOptionRule& r : p.scope.options) {
      std::string o = r.option;
      if (o.ends_with('=')) o.pop_back();
      forms.push_back(p.name + " " + o);
    }
    for (const auto& [sub, scope] : p.subcommands) {
      if (scope.any_use) forms.push_back(p.name + " " + sub);
    }
    for (const auto& [sub, scope] : p.subcommands) {
      for (const policy::ExecOptionRule& r : scope.options) {
        std::string o = r.option;
        if (o.ends_with('=')) o.pop_back();
        forms.push_back(p.name + " " + sub + " " + o);
      }
    }
    std::string list;
    constexpr size_t kShown = 5;
    for (size_t i = 0; i < forms.size() && i < kShown; ++i) list += (i ? ", " : "") + forms[i];
    if (forms.size() > kShown) list += ", ...";
    return "runs commands through some of its options and subcommands (" + list + ")";
  }

  // --- security=full on the gateway -----------------------------------------------------------

  // "main", the agents of config.agents and the agent sections of the approvals file.
  std::set<std::string> AgentIds() const {
    std::set<std::string> ids = {"main"};
    for (const auto& [id, settings] : config_->agents) ids.insert(id);
    if (in_.approvals != nullptr) {
      for (const auto& [id, policy] : in_.approvals->agents) {
        if (id != "*") ids.insert(id);
      }
    }
    return ids;
  }

  void SecurityFullCheck(const std::string& agent) {
    const config::AgentSettings settings = config_->ForAgent(agent);
    const policy::SecurityAsk configured = policy::ConfiguredSecurityAsk(settings.exec);
    config::Security security = configured.security;
    if (in_.approvals != nullptr) {
      // The exec path's rule (reference §4.3): the file can only lower the tool's security.
      security = std::min(security, config::ResolveApprovals(*in_.approvals, agent,
                                                             configured.security, configured.ask)
                                        .security);
    }
    if (security != config::Security::kFull) return;
    const std::string host = Lower(Trim(settings.exec.host));
    std::string runs;
    if (host == "gateway") {
      runs = "runs its commands on the gateway (tools.exec.host gateway)";
    } else if (host == "auto" && settings.sandbox.mode == config::SandboxMode::kOff) {
      runs = "runs its commands on the gateway (sandbox.mode off)";
    } else if (host == "auto" && settings.sandbox.mode == config::SandboxMode::kNonMain) {
      runs = "runs the commands of its main session (" + settings.sandbox.main_session_key +
             ") on the gateway (sandbox.mode non-main)";
    } else {
      return;
    }
    const std::string scope =
        config_->agents.contains(agent) ? "agents." + agent + ".tools.exec" : "tools.exec";
    Add("security-full-gateway", "info", scope + ".security",
        "agent " + agent + " " + runs +
            " with security=full: every command runs on this machine, outside any sandbox, "
            "without approval; set tools.exec.security to allowlist (or sandbox.mode to all) "
            "unless that is intended");
  }

  const AuditInput& in_;
  std::optional<config::Config> default_config_;
  const config::Config* config_ = nullptr;
  std::set<std::pair<std::string, std::string>> global_keys_;
  std::vector<AuditFinding> findings_;
};

// What RunAuditCommand learned about the approvals file.
struct ApprovalsOnDisk {
  std::optional<config::ApprovalsFile> file;
  std::optional<unsigned> mode;
  bool owned_by_us = true;
  std::string parse_error;
  std::string read_error;
  std::vector<std::string> warnings;
};

// Read-only, as LoadApprovals reads it but without its side effects: never moves a corrupt file
// aside, never follows a symlink.
ApprovalsOnDisk ReadApprovals(const std::string& path) {
  ApprovalsOnDisk out;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) out.read_error = Error::FromErrno(errno, "lstat " + path).ToString();
    return out;
  }
  out.mode = static_cast<unsigned>(st.st_mode) & 07777u;
  out.owned_by_us = st.st_uid == ::geteuid();
  if (S_ISLNK(st.st_mode)) {
    out.read_error = "it is a symbolic link, which sandrun refuses to follow";
    return out;
  }
  if (!S_ISREG(st.st_mode)) {
    out.read_error = "it is not a regular file";
    return out;
  }
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    out.read_error = Error::FromErrno(errno, "open " + path).ToString();
    return out;
  }
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.read_error = Error::FromErrno(errno, "read " + path).ToString();
      return out;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxApprovalsBytes) {
      out.read_error = "it is larger than " + std::to_string(kMaxApprovalsBytes) + " bytes";
      return out;
    }
  }
  auto parsed = config::ParseApprovals(text, path, &out.warnings);
  if (!parsed) {
    out.parse_error = parsed.error().ToString();
    return out;
  }
  out.file = std::move(*parsed);
  return out;
}

std::optional<unsigned> StatDirMode(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  return static_cast<unsigned>(st.st_mode) & 07777u;
}

size_t CountWarnings(const std::vector<AuditFinding>& findings) {
  return static_cast<size_t>(
      std::count_if(findings.begin(), findings.end(),
                    [](const AuditFinding& f) { return f.severity == "warn"; }));
}

std::string Plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace

std::vector<AuditFinding> AuditExecPolicy(const AuditInput& in) { return Auditor(in).Run(); }

std::string FormatAuditText(const std::vector<AuditFinding>& findings) {
  std::string out;
  for (const AuditFinding& f : findings) {
    out += "sandrun audit: " + std::string(f.severity == "warn" ? "WARN " : "INFO ") + f.where +
           ": " + f.message + "\n";
  }
  const size_t warnings = CountWarnings(findings);
  if (findings.empty()) {
    out += "sandrun audit: no findings\n";
  } else {
    out += "sandrun audit: " + Plural(warnings, "warning") + ", " +
           Plural(findings.size() - warnings, "note") + "\n";
  }
  return out;
}

std::string FormatAuditJson(const std::vector<AuditFinding>& findings) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("findings");
  w.StartArray();
  for (const AuditFinding& f : findings) {
    w.StartObject();
    w.Key("id");
    WriteJsonString(w, f.id);
    w.Key("severity");
    WriteJsonString(w, f.severity);
    w.Key("where");
    WriteJsonString(w, f.where);
    w.Key("message");
    WriteJsonString(w, f.message);
    w.EndObject();
  }
  w.EndArray();
  w.Key("warnings");
  w.Uint64(CountWarnings(findings));
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

int RunAuditCommand(const GlobalOptions& global, bool json) {
  auto state_dir = config::StateDirPath();
  if (!state_dir) {
    PrintError(state_dir.error().ToString());
    return kExitRefused;
  }
  auto cfg = config::LoadConfigFor(global.config_file, *state_dir);
  if (!cfg) {
    PrintError(cfg.error().ToString());
    return kExitRefused;
  }
  for (const std::string& w : cfg->warnings) PrintWarning(w);
  auto builtin = policy::LoadSafeBinProfiles(harden::DefaultProfilesDir());
  if (!builtin) {
    PrintError(builtin.error().ToString());
    return kExitRefused;
  }
  auto exec_options = policy::LoadExecOptionTable(harden::DefaultProfilesDir());
  if (!exec_options) {
    PrintError(exec_options.error().ToString());
    return kExitRefused;
  }

  const std::string path = config::ApprovalsPath(*state_dir);
  ApprovalsOnDisk approvals = ReadApprovals(path);
  for (const std::string& w : approvals.warnings) PrintWarning(w);

  AuditInput in;
  in.config = &*cfg;
  in.approvals = approvals.file ? &*approvals.file : nullptr;
  in.approvals_path = path;
  in.approvals_mode = approvals.mode;
  in.approvals_owned_by_us = approvals.owned_by_us;
  in.approvals_error = approvals.parse_error;
  in.approvals_read_error = approvals.read_error;
  in.builtin_profiles = &*builtin;
  in.exec_options = &*exec_options;
  in.trusted_dir_mode = StatDirMode;
  const std::vector<AuditFinding> findings = AuditExecPolicy(in);

  std::cout << (json ? FormatAuditJson(findings) : FormatAuditText(findings)) << std::flush;
  return CountWarnings(findings) == 0 ? kExitOk : kExitFailure;
}

}  // namespace sandrun::api
