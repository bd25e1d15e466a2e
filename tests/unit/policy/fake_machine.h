// A fake machine for the approvals tables: executables (path -> real path) and EvaluateApprovals
// over them with the shipped safe-bin and exec-option profiles, for one row's security, ask and
// strictInlineEval. The approvals file tightens nothing (security full, ask off, askFallback
// full), cwd is /work and HOME /home/u.
//
// Pattern of use:
//   static const FakeMachine machine = FakeMachine::WithBins({"ls", "echo"});
//   ApprovalVerdict v = machine.Evaluate("ls", Security::kAllowlist, Ask::kOff, false, entries);
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runner/policy/approval_flow.h"

namespace sandrun::policy::testing {

struct FakeMachine {
  std::map<std::string, std::string> files;  // executable path -> real path

  // /usr/bin/NAME and /bin/NAME for each name, both really /usr/bin/NAME.
  static FakeMachine WithBins(std::initializer_list<const char*> names) {
    FakeMachine m;
    for (const char* name : names) {
      m.files[std::string("/usr/bin/") + name] = std::string("/usr/bin/") + name;
      m.files[std::string("/bin/") + name] = std::string("/usr/bin/") + name;
    }
    return m;
  }

  static std::vector<config::AllowlistEntry> Entries(std::initializer_list<const char*> patterns) {
    std::vector<config::AllowlistEntry> e;
    for (const char* p : patterns) {
      config::AllowlistEntry entry;
      entry.id = std::string("id-") + p;
      entry.pattern = p;
      e.push_back(std::move(entry));
    }
    return e;
  }

  // `settings` carries everything but strictInlineEval, which `strict` sets on a copy.
  ApprovalVerdict Evaluate(const std::string& command, config::Security security, config::Ask ask,
                           bool strict, std::vector<config::AllowlistEntry> entries,
                           const config::AgentSettings& settings = {},
                           const std::string& path = "/usr/bin:/bin") const {
    config::AgentSettings s = settings;
    s.exec.strict_inline_eval = strict;
    Decision d;
    d.effective_host = Host::kGateway;
    d.effective.security = security;
    d.effective.ask = ask;
    d.approvals_apply = true;
    ApprovalInputs in;
    in.settings = &s;
    in.approvals.security = config::Security::kFull;  // the file tightens nothing here
    in.approvals.ask = config::Ask::kOff;
    in.approvals.ask_fallback = config::Security::kFull;
    in.approvals.auto_allow_skills = true;
    in.approvals.allowlist = std::move(entries);
    static const std::map<std::string, SafeBinProfile> builtin = [] {
      auto p = LoadSafeBinProfiles(SANDRUN_TEST_PROFILES_DIR);
      return p ? *p : std::map<std::string, SafeBinProfile>{};
    }();
    in.builtin_safe_bin_profiles = &builtin;
    // in.exec_options stays null: the shipped table, as the exec path loads it.
    in.resolve.path = path;
    in.resolve.cwd = "/work";
    in.resolve.home = "/home/u";
    in.resolve.is_executable = [this](const std::string& p) { return files.count(p) > 0; };
    in.resolve.real_path = [this](const std::string& p) {
      auto it = files.find(p);
      return it == files.end() ? std::string() : it->second;
    };
    in.analyse_always = true;
    return EvaluateApprovals(d, command, in);
  }
};

}  // namespace sandrun::policy::testing
