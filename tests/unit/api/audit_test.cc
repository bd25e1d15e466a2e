#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "runner/api/audit_cmd.h"
#include "sandbox/base/json.h"

namespace sandrun::api {
namespace {

// Everything one table row may change; AuditInput is built from it.
struct Fixture {
  config::Config cfg;
  std::optional<config::ApprovalsFile> approvals;
  std::optional<unsigned> mode;
  bool owned = true;
  std::string error;
  std::string read_error;
  bool probe = true;
  std::map<std::string, unsigned> dir_modes;  // what the trusted-dir probe finds

  config::AgentSettings& Agent(const std::string& id) {
    auto it = cfg.agents.find(id);
    if (it == cfg.agents.end()) it = cfg.agents.emplace(id, cfg.global).first;
    return it->second;
  }
  config::ApprovalsPolicy& Section(const std::string& id) {
    if (!approvals) approvals.emplace();
    return approvals->agents[id];
  }
  void Allow(const std::string& agent, std::vector<std::string> patterns) {
    for (std::string& p : patterns) {
      config::AllowlistEntry e;
      e.id = "id-" + p;
      e.pattern = std::move(p);
      Section(agent).allowlist.push_back(std::move(e));
    }
  }
};

const std::map<std::string, policy::SafeBinProfile>& Builtin() {
  static const auto* profiles = [] {
    auto* m = new std::map<std::string, policy::SafeBinProfile>;
    for (const char* bin : {"cut", "uniq", "head", "tail", "tr", "wc", "grep", "sort"}) {
      (*m)[bin] = policy::SafeBinProfile{};
    }
    return m;
  }();
  return *profiles;
}

// The shipped profiles/exec-options/default.json.
const policy::ExecOptionTable& ExecOptions() {
  static const auto* table = [] {
    auto r = policy::LoadExecOptionTable(SANDRUN_TEST_PROFILES_DIR);
    EXPECT_TRUE(r) << r.error().ToString();
    return new policy::ExecOptionTable(r ? std::move(*r) : policy::ExecOptionTable());
  }();
  return *table;
}

std::vector<AuditFinding> Audit(const Fixture& f) {
  AuditInput in;
  in.exec_options = &ExecOptions();
  in.config = &f.cfg;
  in.approvals = f.approvals ? &*f.approvals : nullptr;
  in.approvals_mode = f.mode;
  in.approvals_owned_by_us = f.owned;
  in.approvals_error = f.error;
  in.approvals_read_error = f.read_error;
  in.builtin_profiles = &Builtin();
  if (f.probe) {
    in.trusted_dir_mode = [modes = f.dir_modes](const std::string& dir) -> std::optional<unsigned> {
      auto it = modes.find(dir);
      if (it == modes.end()) return std::nullopt;
      return it->second;
    };
  }
  return AuditExecPolicy(in);
}

using IdWhere = std::pair<std::string, std::string>;

struct Case {
  const char* name;
  std::function<void(Fixture&)> setup;
  std::vector<IdWhere> expected;  // every finding, in order: (id, where)
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

constexpr const char* kBins = "tools.exec.safeBins";
constexpr const char* kDirs = "tools.exec.safeBinTrustedDirs";
constexpr const char* kFile = "exec-approvals.json";
constexpr const char* kJq = "safe-bin-jq";
constexpr const char* kInterp = "safe-bin-interpreter";
constexpr const char* kUnprof = "safe-bin-unprofiled";
constexpr const char* kRel = "safe-bin-trusted-dir-relative";
constexpr const char* kWritable = "safe-bin-trusted-dir-writable";
constexpr const char* kWild = "allowlist-wildcard";
constexpr const char* kShell = "shell-allowlisted";
constexpr const char* kStrict = "interpreter-allowlisted-without-strict-inline-eval";
constexpr const char* kFull = "security-full-gateway";
constexpr const char* kExecOpt = "exec-option-program-allowlisted";

std::string Entry(const std::string& agent, int i) {
  return std::string(kFile) + " agents." + agent + ".allowlist[" + std::to_string(i) + "]";
}

void Bins(Fixture& f, std::vector<std::string> bins) { f.cfg.global.exec.safe_bins = bins; }
void StrictOn(Fixture& f) { f.cfg.global.exec.strict_inline_eval = true; }
void Gateway(Fixture& f) { f.cfg.global.exec.host = "gateway"; }

const Case kCases[] = {
    // --- safeBins: jq, interpreters, shells, unprofiled ---------------------------------------
    {"Defaults", [](Fixture&) {}, {}},
    {"DefaultBinsExplicit",
     [](Fixture& f) { Bins(f, {"cut", "uniq", "head", "tail", "tr", "wc"}); },
     {}},
    {"EmptyBins", [](Fixture& f) { Bins(f, {}); }, {}},
    {"BuiltinProfiledGrepSort", [](Fixture& f) { Bins(f, {"grep", "sort"}); }, {}},
    {"Jq", [](Fixture& f) { Bins(f, {"wc", "jq"}); }, {{kJq, kBins}}},
    {"JqNormalised", [](Fixture& f) { Bins(f, {" JQ "}); }, {{kJq, kBins}}},
    {"JqWithCustomProfileStillWarns",
     [](Fixture& f) {
       Bins(f, {"jq"});
       f.cfg.global.exec.safe_bin_profiles["jq"] = {};
     },
     {{kJq, kBins}}},
    {"Python3", [](Fixture& f) { Bins(f, {"python3"}); }, {{kInterp, kBins}}},
    {"PythonVersioned", [](Fixture& f) { Bins(f, {"python3.11"}); }, {{kInterp, kBins}}},
    {"Awk", [](Fixture& f) { Bins(f, {"awk"}); }, {{kInterp, kBins}}},
    {"Sed", [](Fixture& f) { Bins(f, {"sed"}); }, {{kInterp, kBins}}},
    {"Xargs", [](Fixture& f) { Bins(f, {"xargs"}); }, {{kInterp, kBins}}},
    {"Node", [](Fixture& f) { Bins(f, {"Node"}); }, {{kInterp, kBins}}},
    {"Bash", [](Fixture& f) { Bins(f, {"bash"}); }, {{kInterp, kBins}}},
    {"Sh", [](Fixture& f) { Bins(f, {"sh"}); }, {{kInterp, kBins}}},
    {"InterpreterWithCustomProfileStillWarns",
     [](Fixture& f) {
       Bins(f, {"perl"});
       f.cfg.global.exec.safe_bin_profiles["perl"] = {};
     },
     {{kInterp, kBins}}},
    {"Unprofiled", [](Fixture& f) { Bins(f, {"rg"}); }, {{kUnprof, kBins}}},
    {"CustomProfile",
     [](Fixture& f) {
       Bins(f, {"rg"});
       f.cfg.global.exec.safe_bin_profiles["rg"] = {};
     },
     {}},
    {"CustomProfileNameNormalised",
     [](Fixture& f) {
       Bins(f, {"RG"});
       f.cfg.global.exec.safe_bin_profiles[" Rg "] = {};
     },
     {}},
    {"SeveralInOrder", [](Fixture& f) { Bins(f, {"rg", "jq", "python3", "wc", "rg"}); },
     {{kUnprof, kBins}, {kJq, kBins}, {kInterp, kBins}}},
    // --- safeBins per agent -----------------------------------------------------------------
    {"AgentJq", [](Fixture& f) { f.Agent("ops").exec.safe_bins = {{"wc", "jq"}}; },
     {{kJq, "agents.ops.tools.exec.safeBins"}}},
    {"AgentInheritsGlobalNoRepeat",
     [](Fixture& f) {
       Bins(f, {"jq"});
       f.Agent("ops");
     },
     {{kJq, kBins}}},
    {"AgentAddsToGlobalOnlyNew",
     [](Fixture& f) {
       Bins(f, {"jq"});
       f.Agent("ops").exec.safe_bins = {{"jq", "rg"}};
     },
     {{kJq, kBins}, {kUnprof, "agents.ops.tools.exec.safeBins"}}},
    {"AgentDropsGlobalProfile",
     [](Fixture& f) {
       Bins(f, {"rg"});
       f.cfg.global.exec.safe_bin_profiles["rg"] = {};
       f.Agent("ops").exec.safe_bin_profiles.clear();
     },
     {{kUnprof, "agents.ops.tools.exec.safeBins"}}},
    {"AgentFixesGlobalNoFinding",
     [](Fixture& f) {
       Bins(f, {"python3"});
       f.Agent("ops").exec.safe_bins = std::vector<std::string>{"wc"};
     },
     {{kInterp, kBins}}},
    {"TwoAgentsSorted",
     [](Fixture& f) {
       f.Agent("zeta").exec.safe_bins = {{"jq"}};
       f.Agent("alpha").exec.safe_bins = {{"bash"}};
     },
     {{kInterp, "agents.alpha.tools.exec.safeBins"}, {kJq, "agents.zeta.tools.exec.safeBins"}}},
    // --- safeBinTrustedDirs ---------------------------------------------------------------
    {"TrustedDirRelative", [](Fixture& f) { f.cfg.global.exec.safe_bin_trusted_dirs = {"bin"}; },
     {{kRel, kDirs}}},
    {"TrustedDirDotRelative",
     [](Fixture& f) { f.cfg.global.exec.safe_bin_trusted_dirs = {"./tools/bin"}; },
     {{kRel, kDirs}}},
    {"TrustedDirWorldWritable",
     [](Fixture& f) {
       f.cfg.global.exec.safe_bin_trusted_dirs = {"/tmp"};
       f.dir_modes["/tmp"] = 01777;
     },
     {{kWritable, kDirs}}},
    {"TrustedDirPrivate",
     [](Fixture& f) {
       f.cfg.global.exec.safe_bin_trusted_dirs = {"/opt/bin"};
       f.dir_modes["/opt/bin"] = 0755;
     },
     {}},
    {"TrustedDirGroupWritableNotWorld",
     [](Fixture& f) {
       f.cfg.global.exec.safe_bin_trusted_dirs = {"/usr/local/bin"};
       f.dir_modes["/usr/local/bin"] = 02775;
     },
     {}},
    {"TrustedDirMissing", [](Fixture& f) { f.cfg.global.exec.safe_bin_trusted_dirs = {"/nope"}; },
     {}},
    {"TrustedDirNoProbe",
     [](Fixture& f) {
       f.cfg.global.exec.safe_bin_trusted_dirs = {"/tmp", "rel"};
       f.dir_modes["/tmp"] = 01777;
       f.probe = false;
     },
     {{kRel, kDirs}}},
    {"TrustedDirAgent",
     [](Fixture& f) {
       f.Agent("ops").exec.safe_bin_trusted_dirs = {"/srv/drop"};
       f.dir_modes["/srv/drop"] = 0777;
     },
     {{kWritable, "agents.ops.tools.exec.safeBinTrustedDirs"}}},
    {"TrustedDirInheritedNoRepeat",
     [](Fixture& f) {
       f.cfg.global.exec.safe_bin_trusted_dirs = {"bin"};
       f.Agent("ops");
     },
     {{kRel, kDirs}}},
    // --- allowlists: wildcards ------------------------------------------------------------
    {"AllowlistPlain",
     [](Fixture& f) { f.Allow("main", {"/usr/bin/rg", "~/bin/tool", "rg", "rg*"}); }, {}},
    {"AllowlistStar", [](Fixture& f) { f.Allow("main", {"*"}); }, {{kWild, Entry("main", 0)}}},
    {"AllowlistStarTrimmed", [](Fixture& f) { f.Allow("main", {" * "}); },
     {{kWild, Entry("main", 0)}}},
    {"AllowlistDoubleStar", [](Fixture& f) { f.Allow("main", {"**"}); },
     {{kWild, Entry("main", 0)}}},
    {"AllowlistSlashDoubleStar", [](Fixture& f) { f.Allow("main", {"/**"}); },
     {{kWild, Entry("main", 0)}}},
    {"AllowlistAnyDirDeep", [](Fixture& f) { f.Allow("main", {"/*/**"}); },
     {{kWild, Entry("main", 0)}}},
    {"AllowlistAnyBareName", [](Fixture& f) { f.Allow("main", {"?*"}); },
     {{kWild, Entry("main", 0)}}},
    {"AllowlistWildcardSecondEntry", [](Fixture& f) { f.Allow("main", {"/usr/bin/rg", "*"}); },
     {{kWild, Entry("main", 1)}}},
    {"AllowlistWildcardInStarSection", [](Fixture& f) { f.Allow("*", {"/**"}); },
     {{kWild, Entry("*", 0)}}},
    {"AllowlistWildcardEvenWithStrict",
     [](Fixture& f) {
       StrictOn(f);
       f.Allow("ops", {"*"});
     },
     {{kWild, Entry("ops", 0)}}},
    {"AllowlistHomeTreeNotEverything", [](Fixture& f) { f.Allow("main", {"~/**"}); }, {}},
    {"AllowlistUsrTreeCoversShellAndInterpreter", [](Fixture& f) { f.Allow("main", {"/usr/**"}); },
     {{kShell, Entry("main", 0)}, {kStrict, Entry("main", 0)}, {kExecOpt, Entry("main", 0)}}},
    // --- allowlists: shells (always) ------------------------------------------------------
    {"ShellPath", [](Fixture& f) { f.Allow("main", {"/bin/bash"}); },
     {{kShell, Entry("main", 0)}}},
    {"ShellPathStrictOnStillWarns",
     [](Fixture& f) {
       StrictOn(f);
       f.Allow("main", {"/usr/bin/sh"});
     },
     {{kShell, Entry("main", 0)}}},
    {"ShellBareName", [](Fixture& f) { f.Allow("main", {"zsh"}); }, {{kShell, Entry("main", 0)}}},
    {"ShellGlobByProbe", [](Fixture& f) { f.Allow("main", {"/usr/bin/b*sh"}); },
     {{kShell, Entry("main", 0)}}},
    {"ShellGlobStripped", [](Fixture& f) { f.Allow("main", {"/bin/da?h"}); },
     {{kShell, Entry("main", 0)}}},
    {"ShellInStarSection", [](Fixture& f) { f.Allow("*", {"/bin/sh"}); },
     {{kShell, Entry("*", 0)}}},
    {"BusyboxIsNotAShell", [](Fixture& f) { f.Allow("main", {"/bin/busybox"}); }, {}},
    // --- allowlists: interpreters vs strictInlineEval -------------------------------------
    {"InterpreterStrictOff", [](Fixture& f) { f.Allow("main", {"/usr/bin/python3"}); },
     {{kStrict, Entry("main", 0)}}},
    {"InterpreterStrictOn",
     [](Fixture& f) {
       StrictOn(f);
       f.Allow("main", {"/usr/bin/python3"});
     },
     {}},
    {"InterpreterBareGlob", [](Fixture& f) { f.Allow("main", {"python*"}); },
     {{kStrict, Entry("main", 0)}}},
    {"InterpreterHomePath", [](Fixture& f) { f.Allow("main", {"~/.local/bin/node"}); },
     {{kStrict, Entry("main", 0)}}},
    {"InterpreterVersioned", [](Fixture& f) { f.Allow("main", {"/usr/bin/perl5.36"}); },
     {{kStrict, Entry("main", 0)}}},
    {"InterpreterFindXargsMake",
     [](Fixture& f) { f.Allow("main", {"/usr/bin/find", "/usr/bin/xargs", "/usr/bin/make"}); },
     {{kStrict, Entry("main", 0)},
      {kExecOpt, Entry("main", 0)},
      {kStrict, Entry("main", 1)},
      {kExecOpt, Entry("main", 1)},
      {kStrict, Entry("main", 2)}}},
    {"InterpreterSecondEntry",
     [](Fixture& f) { f.Allow("main", {"/usr/bin/rg", "/usr/bin/node"}); },
     {{kStrict, Entry("main", 1)}}},
    {"DirectoryGlobStrictOff", [](Fixture& f) { f.Allow("main", {"/usr/bin/*"}); },
     {{kShell, Entry("main", 0)}, {kStrict, Entry("main", 0)}, {kExecOpt, Entry("main", 0)}}},
    {"DirectoryGlobStrictOn",
     [](Fixture& f) {
       StrictOn(f);
       f.Allow("main", {"/usr/bin/*"});
     },
     {{kShell, Entry("main", 0)}, {kExecOpt, Entry("main", 0)}}},
    // --- allowlists: programs that run commands through their options (always) --------------
    {"ExecOptionPath", [](Fixture& f) { f.Allow("main", {"/usr/bin/rg", "/usr/bin/git"}); },
     {{kExecOpt, Entry("main", 1)}}},
    {"ExecOptionStrictOnStillWarns",
     [](Fixture& f) {
       StrictOn(f);
       f.Allow("main", {"/usr/bin/tar"});
     },
     {{kExecOpt, Entry("main", 0)}}},
    {"ExecOptionBareName", [](Fixture& f) { f.Allow("main", {"ssh"}); },
     {{kExecOpt, Entry("main", 0)}}},
    {"ExecOptionBareGlob", [](Fixture& f) { f.Allow("main", {"git*"}); },
     {{kExecOpt, Entry("main", 0)}}},
    {"ExecOptionAlias", [](Fixture& f) { f.Allow("main", {"/usr/bin/vi"}); },
     {{kExecOpt, Entry("main", 0)}}},
    {"ExecOptionGlobByProbe", [](Fixture& f) { f.Allow("main", {"/usr/bin/ta?"}); },
     {{kExecOpt, Entry("main", 0)}}},
    {"ExecOptionBareGlobByProbe", [](Fixture& f) { f.Allow("main", {"rsyn?"}); },
     {{kExecOpt, Entry("main", 0)}}},
    {"ExecOptionHomePath", [](Fixture& f) { f.Allow("main", {"~/.local/bin/zip"}); },
     {{kExecOpt, Entry("main", 0)}}},
    {"ExecOptionInStarSection", [](Fixture& f) { f.Allow("*", {"/usr/bin/less"}); },
     {{kExecOpt, Entry("*", 0)}}},
    {"ExecOptionWildcardOnlyOnce", [](Fixture& f) { f.Allow("main", {"*"}); },
     {{kWild, Entry("main", 0)}}},
    {"ExecOptionExactCommandIgnored",
     [](Fixture& f) { f.Allow("main", {"=command:0123456789abcdef", "/usr/bin/cat"}); },
     {}},
    {"ExactCommandEntryIgnored", [](Fixture& f) { f.Allow("main", {"=command:0123456789abcdef"}); },
     {}},
    {"AgentStrictOffGlobalOn",
     [](Fixture& f) {
       StrictOn(f);
       f.Agent("main").exec.strict_inline_eval = false;
       f.Allow("main", {"/usr/bin/python3"});
     },
     {{kStrict, Entry("main", 0)}}},
    {"AgentStrictOnGlobalOff",
     [](Fixture& f) {
       f.Agent("ops").exec.strict_inline_eval = true;
       f.Allow("ops", {"/usr/bin/python3"});
     },
     {}},
    {"SectionForUnconfiguredAgentUsesGlobal",
     [](Fixture& f) { f.Allow("ci", {"/usr/bin/ruby"}); }, {{kStrict, Entry("ci", 0)}}},
    {"StarSectionGlobalOff", [](Fixture& f) { f.Allow("*", {"/usr/bin/python3"}); },
     {{kStrict, Entry("*", 0)}}},
    {"StarSectionGlobalOnAgentOff",
     [](Fixture& f) {
       StrictOn(f);
       f.Agent("ops").exec.strict_inline_eval = false;
       f.Allow("*", {"/usr/bin/python3"});
     },
     {{kStrict, Entry("*", 0)}}},
    {"StarSectionAllOn",
     [](Fixture& f) {
       StrictOn(f);
       f.Agent("ops");
       f.Allow("*", {"/usr/bin/python3"});
     },
     {}},
    {"SectionsInIdOrder",
     [](Fixture& f) {
       f.Allow("ops", {"/usr/bin/node"});
       f.Allow("*", {"*"});
       f.Allow("main", {"/bin/sh"});
     },
     {{kWild, Entry("*", 0)}, {kShell, Entry("main", 0)}, {kStrict, Entry("ops", 0)}}},
    // --- the approvals file -----------------------------------------------------------------
    {"Mode0600", [](Fixture& f) { f.mode = 0600; }, {}},
    {"Mode0400", [](Fixture& f) { f.mode = 0400; }, {}},
    {"Mode0644", [](Fixture& f) { f.mode = 0644; }, {{"approvals-file-permissions", kFile}}},
    {"Mode0660", [](Fixture& f) { f.mode = 0660; }, {{"approvals-file-permissions", kFile}}},
    {"Mode0604", [](Fixture& f) { f.mode = 0604; }, {{"approvals-file-permissions", kFile}}},
    {"Mode0602", [](Fixture& f) { f.mode = 0602; }, {{"approvals-file-permissions", kFile}}},
    {"Mode0610", [](Fixture& f) { f.mode = 0610; }, {{"approvals-file-permissions", kFile}}},
    {"NotOwned",
     [](Fixture& f) {
       f.mode = 0600;
       f.owned = false;
     },
     {{"approvals-file-owner", kFile}}},
    {"NotOwnedAndOpen",
     [](Fixture& f) {
       f.mode = 0666;
       f.owned = false;
     },
     {{"approvals-file-permissions", kFile}, {"approvals-file-owner", kFile}}},
    {"Corrupt",
     [](Fixture& f) {
       f.mode = 0600;
       f.error = "exec-approvals.json:3:7: Missing a comma";
     },
     {{"approvals-file-corrupt", kFile}}},
    {"Unreadable",
     [](Fixture& f) {
       f.mode = 0777;
       f.read_error = "it is a symbolic link";
     },
     {{"approvals-file-permissions", kFile}, {"approvals-file-unreadable", kFile}}},
    // --- security=full on the gateway (info) -------------------------------------------------
    {"GatewayFull", Gateway, {{kFull, "tools.exec.security"}}},
    {"GatewayAllowlist",
     [](Fixture& f) {
       Gateway(f);
       f.cfg.global.exec.security = config::Security::kAllowlist;
     },
     {}},
    {"GatewayModeFull",
     [](Fixture& f) {
       Gateway(f);
       f.cfg.global.exec.mode = config::ExecMode::kFull;
     },
     {{kFull, "tools.exec.security"}}},
    {"GatewayModeAsk",
     [](Fixture& f) {
       Gateway(f);
       f.cfg.global.exec.mode = config::ExecMode::kAsk;
     },
     {}},
    {"GatewayLoweredByApprovalsDefaults",
     [](Fixture& f) {
       Gateway(f);
       f.approvals.emplace();
       f.approvals->defaults.security = config::Security::kAllowlist;
     },
     {}},
    {"GatewayLoweredByApprovalsAgent",
     [](Fixture& f) {
       Gateway(f);
       f.Section("main").security = config::Security::kDeny;
     },
     {}},
    {"GatewayLoweredByApprovalsStar",
     [](Fixture& f) {
       Gateway(f);
       f.Section("*").security = config::Security::kAllowlist;
     },
     {}},
    {"SandboxOffAuto",
     [](Fixture& f) { f.cfg.global.sandbox.mode = config::SandboxMode::kOff; },
     {{kFull, "tools.exec.security"}}},
    {"SandboxNonMainAuto",
     [](Fixture& f) { f.cfg.global.sandbox.mode = config::SandboxMode::kNonMain; },
     {{kFull, "tools.exec.security"}}},
    {"SandboxOffButHostSandbox",
     [](Fixture& f) {
       f.cfg.global.sandbox.mode = config::SandboxMode::kOff;
       f.cfg.global.exec.host = "sandbox";
     },
     {}},
    {"HostNode", [](Fixture& f) { f.cfg.global.exec.host = "node"; }, {}},
    {"AgentGateway", [](Fixture& f) { f.Agent("ops").exec.host = "gateway"; },
     {{kFull, "agents.ops.tools.exec.security"}}},
    {"GatewayGlobalAgentAllowlist",
     [](Fixture& f) {
       Gateway(f);
       f.Agent("ops").exec.security = config::Security::kAllowlist;
     },
     {{kFull, "tools.exec.security"}}},
    {"GatewayPerApprovalsAgent",
     [](Fixture& f) {
       Gateway(f);
       f.Section("ci");
     },
     {{kFull, "tools.exec.security"}, {kFull, "tools.exec.security"}}},
    // --- everything at once: the order ------------------------------------------------------
    {"Order",
     [](Fixture& f) {
       Gateway(f);
       f.mode = 0644;
       Bins(f, {"jq"});
       f.cfg.global.exec.safe_bin_trusted_dirs = {"bin"};
       f.Agent("ops").exec.safe_bins = {{"jq", "awk"}};
       f.Allow("main", {"/bin/sh"});
     },
     {{"approvals-file-permissions", kFile},
      {kJq, kBins},
      {kRel, kDirs},
      {kInterp, "agents.ops.tools.exec.safeBins"},
      {kShell, Entry("main", 0)},
      {kFull, "tools.exec.security"},
      {kFull, "agents.ops.tools.exec.security"}}},
};

class AuditTableTest : public testing::TestWithParam<Case> {};

TEST_P(AuditTableTest, Findings) {
  Fixture f;
  GetParam().setup(f);
  std::vector<IdWhere> got;
  for (const AuditFinding& finding : Audit(f)) {
    got.emplace_back(finding.id, finding.where);
    EXPECT_EQ(finding.severity, finding.id == kFull ? "info" : "warn") << finding.id;
    EXPECT_FALSE(finding.message.empty());
  }
  EXPECT_EQ(got, GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(Table, AuditTableTest, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case>& p) { return p.param.name; });

std::string Message(const Fixture& f, const std::string& id) {
  for (const AuditFinding& finding : Audit(f)) {
    if (finding.id == id) return finding.message;
  }
  return "";
}

TEST(AuditMessagesTest, SayWhatAndHowToFix) {
  Fixture f;
  Bins(f, {"jq", "python3", "rg"});
  EXPECT_NE(Message(f, kJq).find("environment"), std::string::npos);
  EXPECT_NE(Message(f, kInterp).find("ignores the entry"), std::string::npos);
  EXPECT_NE(Message(f, kUnprof).find("tools.exec.safeBinProfiles.rg"), std::string::npos);

  Fixture a;
  a.Allow("main", {"/usr/bin/python3"});
  EXPECT_NE(Message(a, kStrict).find("tools.exec.strictInlineEval is off for agent main"),
            std::string::npos);
  EXPECT_NE(Message(a, kStrict).find("python3 -c"), std::string::npos);

  Fixture s;
  StrictOn(s);
  s.Agent("ops").exec.strict_inline_eval = false;
  s.Agent("qa").exec.strict_inline_eval = false;
  s.Allow("*", {"/usr/bin/node"});
  EXPECT_NE(Message(s, kStrict).find("off for agents ops, qa"), std::string::npos);

  AuditInput in;
  in.builtin_profiles = &Builtin();
  in.approvals_mode = 0664u;
  in.approvals_path = "/h/.sandrun/exec-approvals.json";
  std::vector<AuditFinding> got = AuditExecPolicy(in);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].message.find("mode 0664"), std::string::npos);
  EXPECT_NE(got[0].message.find("read and write"), std::string::npos);
  EXPECT_NE(got[0].message.find("chmod 600 /h/.sandrun/exec-approvals.json"), std::string::npos);

  Fixture c;
  c.error = "exec-approvals.json:3:7: Missing a comma";
  EXPECT_NE(Message(c, "approvals-file-corrupt").find("3:7: Missing a comma"), std::string::npos);

  Fixture sh;
  sh.Allow("main", {"/bin/bash"});
  EXPECT_NE(Message(sh, kShell).find("`bash -c '<anything>'`"), std::string::npos);
  Fixture sp;
  sp.Allow("main", {"/usr/bin/b*sh"});
  EXPECT_NE(Message(sp, kShell).find("a shell (/usr/bin/bash): `bash -c"), std::string::npos);
  Fixture w;
  w.Allow("main", {"*"});
  EXPECT_NE(Message(w, kWild).find("the same as full"), std::string::npos);

  Fixture git;
  git.Allow("main", {"/usr/bin/git"});
  const std::string git_message = Message(git, kExecOpt);
  EXPECT_NE(git_message.find("\"/usr/bin/git\" allowlists git, which runs commands through some "
                             "of its options and subcommands (git -c, git --config-env"),
            std::string::npos)
      << git_message;
  EXPECT_NE(git_message.find("hooks"), std::string::npos) << "the program's why is quoted";
  EXPECT_NE(git_message.find("every time with tools.exec.strictInlineEval"), std::string::npos);
  Fixture vim;
  vim.Allow("main", {"/usr/bin/vim"});
  EXPECT_NE(Message(vim, kExecOpt).find("runs commands by itself, in every use"),
            std::string::npos);

  Fixture g;
  g.cfg.global.sandbox.mode = config::SandboxMode::kNonMain;
  EXPECT_NE(Message(g, kFull).find("main session"), std::string::npos);
}

TEST(AuditExecPolicyTest, NullInputsMeanDefaults) {
  AuditInput in;  // no config, no approvals, no profiles: the default safe bins are unprofiled
  std::vector<AuditFinding> got = AuditExecPolicy(in);
  ASSERT_EQ(got.size(), 6u);
  for (const AuditFinding& f : got) EXPECT_EQ(f.id, kUnprof);
}

TEST(AuditFormatTest, Text) {
  std::vector<AuditFinding> findings = {{"safe-bin-jq", "warn", "tools.exec.safeBins", "jq is bad"},
                                        {kFull, "info", "tools.exec.security", "full"}};
  EXPECT_EQ(FormatAuditText(findings),
            "sandrun audit: WARN tools.exec.safeBins: jq is bad\n"
            "sandrun audit: INFO tools.exec.security: full\n"
            "sandrun audit: 1 warning, 1 note\n");
  EXPECT_EQ(FormatAuditText({}), "sandrun audit: no findings\n");
}

TEST(AuditFormatTest, Json) {
  std::vector<AuditFinding> findings = {
      {"safe-bin-jq", "warn", "tools.exec.safeBins", "say \"jq\""},
      {"allowlist-wildcard", "warn", "exec-approvals.json agents.*.allowlist[0]", "*"},
      {kFull, "info", "tools.exec.security", "full"}};
  std::string text = FormatAuditJson(findings);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  auto doc = ParseJson(text);
  ASSERT_TRUE(doc) << doc.error().ToString();
  EXPECT_EQ(JsonInt(*doc, "warnings"), 2);
  const rapidjson::Value* list = JsonMember(*doc, "findings");
  ASSERT_TRUE(list != nullptr && list->IsArray());
  ASSERT_EQ(list->Size(), 3u);
  EXPECT_EQ(JsonString((*list)[0], "message"), "say \"jq\"");
  EXPECT_EQ(JsonString((*list)[1], "where"), "exec-approvals.json agents.*.allowlist[0]");
  EXPECT_EQ(JsonString((*list)[2], "severity"), "info");
  EXPECT_EQ(JsonString((*list)[2], "id"), kFull);
  EXPECT_EQ(FormatAuditJson({}), "{\"findings\":[],\"warnings\":0}\n");
}

// RunAuditCommand in-process, with $SANDRUN_HOME in a temp dir (each test case runs in its own
// process under ctest).
class RunAuditTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sandrun-audit-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    home_ = tmpl;
    ::setenv("SANDRUN_HOME", home_.c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(home_, ec);
  }
  void Write(const std::string& name, const std::string& text, unsigned mode) {
    const std::string path = home_ + "/" + name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
  }
  int Run(bool json, std::string* out, const std::string& config_file = "") {
    std::ostringstream captured;
    std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
    GlobalOptions global;
    global.config_file = config_file;
    int rc = RunAuditCommand(global, json);
    std::cout.rdbuf(old);
    *out = captured.str();
    return rc;
  }
  std::vector<std::string> Files() {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(home_)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string home_;
};

TEST_F(RunAuditTest, CleanIsExitZero) {
  std::string out;
  EXPECT_EQ(Run(false, &out), 0);
  EXPECT_EQ(out, "sandrun audit: no findings\n");
}

TEST_F(RunAuditTest, WarningsAreExitOne) {
  Write("config.json", R"({"tools": {"exec": {"safeBins": ["jq", "wc"]}}})", 0600);
  Write("exec-approvals.json", R"({"version": 1, "agents": {"*": {"allowlist": ["*"]}}})", 0644);
  std::string out;
  EXPECT_EQ(Run(true, &out), 1);
  auto doc = ParseJson(out);
  ASSERT_TRUE(doc) << out;
  EXPECT_EQ(JsonInt(*doc, "warnings"), 3);
  const rapidjson::Value& list = *JsonMember(*doc, "findings");
  ASSERT_EQ(list.Size(), 3u);
  EXPECT_EQ(JsonString(list[0], "id"), "approvals-file-permissions");
  EXPECT_EQ(JsonString(list[1], "id"), "safe-bin-jq");
  EXPECT_EQ(JsonString(list[2], "id"), "allowlist-wildcard");
}

TEST_F(RunAuditTest, InfoOnlyIsExitZero) {
  Write("config.json", R"({"tools": {"exec": {"host": "gateway"}}})", 0600);
  std::string out;
  EXPECT_EQ(Run(false, &out), 0);
  EXPECT_NE(out.find("sandrun audit: INFO tools.exec.security: agent main"), std::string::npos);
  EXPECT_NE(out.find("sandrun audit: 0 warnings, 1 note\n"), std::string::npos);
}

TEST_F(RunAuditTest, AllowlistedGitIsAWarningFromTheShippedTable) {
  Write("exec-approvals.json",
        R"({"version": 1, "agents": {"main": {"allowlist": ["/usr/bin/git"]}}})", 0600);
  std::string out;
  EXPECT_EQ(Run(false, &out), 1);
  EXPECT_NE(out.find("sandrun audit: WARN exec-approvals.json agents.main.allowlist[0]: "
                     "\"/usr/bin/git\" allowlists git"),
            std::string::npos)
      << out;
}

TEST_F(RunAuditTest, CorruptApprovalsIsReportedAndLeftAlone) {
  const std::string text = "{\"version\": 1, \"agents\": {\n";
  Write("exec-approvals.json", text, 0600);
  std::string out;
  EXPECT_EQ(Run(false, &out), 1);
  EXPECT_NE(out.find("sandrun audit: WARN exec-approvals.json: "), std::string::npos);
  EXPECT_NE(out.find("cannot be parsed"), std::string::npos);
  // Nothing moved aside, nothing rewritten.
  EXPECT_EQ(Files(), std::vector<std::string>{"exec-approvals.json"});
  std::ifstream in(home_ + "/exec-approvals.json");
  std::string now((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(now, text);
}

TEST_F(RunAuditTest, SymlinkedApprovalsIsUnreadable) {
  Write("real.json", R"({"version": 1})", 0600);
  ASSERT_EQ(::symlink((home_ + "/real.json").c_str(), (home_ + "/exec-approvals.json").c_str()), 0);
  std::string out;
  EXPECT_EQ(Run(true, &out), 1);
  EXPECT_NE(out.find("approvals-file-unreadable"), std::string::npos);
}

TEST_F(RunAuditTest, WorldWritableTrustedDir) {
  const std::string dir = home_ + "/drop";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  Write("config.json", R"({"tools": {"exec": {"safeBinTrustedDirs": [")" + dir + R"("]}}})", 0600);
  std::string out;
  EXPECT_EQ(Run(false, &out), 1);
  EXPECT_NE(out.find("WARN tools.exec.safeBinTrustedDirs: \"" + dir + "\" is world-writable"),
            std::string::npos);
}

TEST_F(RunAuditTest, HostAccessAndContainerKeysOfTheFile) {
  Write("config.json", R"({
    "tools": {"elevated": {"enabled": true, "defaultLevel": "full", "allowFrom": {"cli": ["*"]}}},
    "sandbox": {"docker": {"capDrop": [], "network": "bridge", "readOnlyRoot": false,
                           "seccompProfile": "unconfined"}},
    "tenants": {"acme": {"hostExecution": true}}})",
        0600);
  std::string out;
  EXPECT_EQ(Run(false, &out), 1);
  for (const char* line :
       {"WARN tools.elevated.defaultLevel: tools.elevated.enabled is true and defaultLevel",
        "WARN tools.elevated.allowFrom.cli: ", "WARN sandbox.docker.capDrop: ",
        "WARN sandbox.docker.network: ", "WARN sandbox.docker.seccompProfile: ",
        "INFO sandbox.docker.readOnlyRoot: ", "WARN tenants.acme.hostExecution: ",
        "sandrun audit: 6 warnings, 1 note\n"}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << " in:\n" << out;
  }
}

TEST_F(RunAuditTest, BadConfigIsExitTwo) {
  Write("config.json", "{\"tools\": ", 0600);
  std::string out;
  EXPECT_EQ(Run(false, &out), 2);
  EXPECT_EQ(out, "");
  EXPECT_EQ(Run(false, &out, home_ + "/missing.json"), 2);
}

}  // namespace
}  // namespace sandrun::api
