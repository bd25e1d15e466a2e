// `sandrun audit`'s findings about host access and the sandbox's container settings
// (runner/api/audit_sandbox_checks.h), on settings built in code; audit_test.cc runs the
// command on a config file.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runner/api/audit_cmd.h"
#include "runner/api/audit_sandbox_checks.h"

namespace sandrun::api {
namespace {

using IdWhere = std::pair<std::string, std::string>;

config::AgentSettings& Agent(config::Config& cfg, const std::string& id) {
  auto it = cfg.agents.find(id);
  if (it == cfg.agents.end()) it = cfg.agents.emplace(id, cfg.global).first;
  return it->second;
}

config::TenantConfig& Tenant(config::Config& cfg, const std::string& id, bool host_execution) {
  config::TenantConfig& t = cfg.tenants[id];
  t.global = cfg.global;
  t.host_execution = host_execution;
  return t;
}

void ElevatedFull(config::ElevatedSettings& e, std::vector<std::string> senders = {"alice"}) {
  e.enabled = true;
  e.default_level = "full";
  e.allow_from["cli"] = std::move(senders);
}

std::vector<IdWhere> IdsAndWheres(const std::vector<AuditFinding>& findings) {
  std::vector<IdWhere> out;
  for (const AuditFinding& f : findings) out.emplace_back(f.id, f.where);
  return out;
}

struct Case {
  const char* name;
  std::function<void(config::Config&)> setup;
  std::vector<IdWhere> expected;  // every finding, in order
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

constexpr const char* kFull = "elevated-default-full";
constexpr const char* kAny = "elevated-allow-from-any";
constexpr const char* kCaps = "sandbox-cap-drop";
constexpr const char* kNet = "sandbox-network";
constexpr const char* kUnconfined = "sandbox-unconfined";
constexpr const char* kRoot = "sandbox-writable-root";
constexpr const char* kTenant = "tenant-host-execution";
constexpr const char* kAllowNet = "sandbox-allow-network";

const Case kCases[] = {
    // --- safe settings: nothing ---------------------------------------------------------------
    {"Defaults", [](config::Config&) {}, {}},
    {"SafeValuesWrittenOtherwise",
     [](config::Config& c) {
       c.global.sandbox.docker.cap_drop = {" all ", "NET_RAW"};
       c.global.sandbox.docker.network = " None ";
       c.global.sandbox.docker.seccomp_profile = "default";
       c.global.elevated.enabled = true;
       c.global.elevated.default_level = "ask";
       c.global.elevated.allow_from["cli"] = {"alice", "bob*"};
     },
     {}},
    {"AllowNetworkNoneOnly",
     [](config::Config& c) { c.global.sandbox.allow.network = {" none "}; },
     {}},
    {"AllowNetworkBridge",
     [](config::Config& c) {
       c.global.sandbox.allow.network = {"none", "bridge"};
     },
     {{kAllowNet, "sandbox.allow.network"}}},
    {"CapAllSpelledWithPrefix",
     [](config::Config& c) { c.global.sandbox.docker.cap_drop = {"CAP_ALL"}; },
     {}},
    {"ElevatedFullButDisabled",
     [](config::Config& c) {
       ElevatedFull(c.global.elevated, {"*"});
       c.global.elevated.enabled = false;
     },
     {}},
    {"ElevatedFullWithoutSenders",
     [](config::Config& c) { ElevatedFull(c.global.elevated, {}); },
     {}},
    {"TenantWithoutHostExecution",
     [](config::Config& c) {
       config::TenantConfig& t = Tenant(c, "acme", false);
       ElevatedFull(t.global.elevated, {"*"});  // the gate refuses its host calls anyway
     },
     {}},
    // --- elevated ---------------------------------------------------------------------------
    {"ElevatedDefaultFull",
     [](config::Config& c) { ElevatedFull(c.global.elevated); },
     {{kFull, "tools.elevated.defaultLevel"}}},
    {"ElevatedAllowFromAny",
     [](config::Config& c) {
       c.global.elevated.enabled = true;
       c.global.elevated.allow_from["cli"] = {"alice"};
       c.global.elevated.allow_from["telegram"] = {"bob", " ** "};
     },
     {{kAny, "tools.elevated.allowFrom.telegram"}}},
    {"ElevatedFullForAnySender",
     [](config::Config& c) { ElevatedFull(c.global.elevated, {"*"}); },
     {{kFull, "tools.elevated.defaultLevel"}, {kAny, "tools.elevated.allowFrom.cli"}}},
    {"AgentElevatedFull",
     [](config::Config& c) { ElevatedFull(Agent(c, "ops").elevated); },
     {{kFull, "agents.ops.tools.elevated.defaultLevel"}}},
    {"AgentInheritsGlobalElevatedNoRepeat",
     [](config::Config& c) {
       ElevatedFull(c.global.elevated, {"*"});
       Agent(c, "ops");
     },
     {{kFull, "tools.elevated.defaultLevel"}, {kAny, "tools.elevated.allowFrom.cli"}}},
    {"AgentTurnsElevatedOnOverGlobalFull",
     [](config::Config& c) {
       ElevatedFull(c.global.elevated);
       c.global.elevated.enabled = false;
       Agent(c, "ops").elevated.enabled = true;
     },
     {{kFull, "agents.ops.tools.elevated.defaultLevel"}}},
    // --- the container ----------------------------------------------------------------------
    {"CapDropEmpty",
     [](config::Config& c) { c.global.sandbox.docker.cap_drop = {}; },
     {{kCaps, "sandbox.docker.capDrop"}}},
    {"CapDropSome",
     [](config::Config& c) {
       c.global.sandbox.docker.cap_drop = {"NET_RAW", "SYS_ADMIN"};
     },
     {{kCaps, "sandbox.docker.capDrop"}}},
    {"WritableRoot",
     [](config::Config& c) { c.global.sandbox.docker.read_only_root = false; },
     {{kRoot, "sandbox.docker.readOnlyRoot"}}},
    {"NetworkBridge",
     [](config::Config& c) { c.global.sandbox.docker.network = "bridge"; },
     {{kNet, "sandbox.docker.network"}}},
    {"NetworkHostIsRefusedButReported",
     [](config::Config& c) { c.global.sandbox.docker.network = "host"; },
     {{kNet, "sandbox.docker.network"}}},
    {"SeccompUnconfined",
     [](config::Config& c) { c.global.sandbox.docker.seccomp_profile = "unconfined"; },
     {{kUnconfined, "sandbox.docker.seccompProfile"}}},
    {"AppArmorUnconfined",
     [](config::Config& c) { c.global.sandbox.docker.apparmor_profile = "Unconfined"; },
     {{kUnconfined, "sandbox.docker.apparmorProfile"}}},
    {"EverythingInOrder",
     [](config::Config& c) {
       ElevatedFull(c.global.elevated, {"*"});
       auto& d = c.global.sandbox.docker;
       d.cap_drop = {};
       d.network = "bridge";
       d.seccomp_profile = "unconfined";
       d.apparmor_profile = "unconfined";
       d.read_only_root = false;
     },
     {{kFull, "tools.elevated.defaultLevel"},
      {kAny, "tools.elevated.allowFrom.cli"},
      {kCaps, "sandbox.docker.capDrop"},
      {kNet, "sandbox.docker.network"},
      {kUnconfined, "sandbox.docker.seccompProfile"},
      {kUnconfined, "sandbox.docker.apparmorProfile"},
      {kRoot, "sandbox.docker.readOnlyRoot"}}},
    {"AgentContainer",
     [](config::Config& c) {
       Agent(c, "ops").sandbox.docker.network = "bridge";
       Agent(c, "qa").sandbox.docker.cap_drop = {"NET_RAW"};
     },
     {{kNet, "agents.ops.sandbox.docker.network"}, {kCaps, "agents.qa.sandbox.docker.capDrop"}}},
    {"AgentInheritsGlobalNetworkNoRepeat",
     [](config::Config& c) {
       c.global.sandbox.docker.network = "bridge";
       Agent(c, "ops");
     },
     {{kNet, "sandbox.docker.network"}}},
    {"AgentAnotherNetworkIsItsOwn",
     [](config::Config& c) {
       c.global.sandbox.docker.network = "bridge";
       Agent(c, "ops").sandbox.docker.network = "corp-net";
     },
     {{kNet, "sandbox.docker.network"}, {kNet, "agents.ops.sandbox.docker.network"}}},
    {"AgentFixesGlobalNoFinding",
     [](config::Config& c) {
       c.global.sandbox.docker.read_only_root = false;
       Agent(c, "ops").sandbox.docker.read_only_root = true;
     },
     {{kRoot, "sandbox.docker.readOnlyRoot"}}},
    // --- tenants ----------------------------------------------------------------------------
    {"TenantHostExecution",
     [](config::Config& c) { Tenant(c, "acme", true); },
     {{kTenant, "tenants.acme.hostExecution"}}},
    {"TenantOwnSettings",
     [](config::Config& c) {
       config::TenantConfig& t = Tenant(c, "acme", true);
       ElevatedFull(t.global.elevated);
       t.global.sandbox.docker.network = "bridge";
       t.agents["bot"] = t.global;
       t.agents["bot"].sandbox.docker.cap_drop = {};
       Tenant(c, "beta", false).global.sandbox.docker.read_only_root = false;
     },
     {{kTenant, "tenants.acme.hostExecution"},
      {kFull, "tenants.acme.tools.elevated.defaultLevel"},
      {kNet, "tenants.acme.sandbox.docker.network"},
      {kCaps, "tenants.acme.agents.bot.sandbox.docker.capDrop"},
      {kRoot, "tenants.beta.sandbox.docker.readOnlyRoot"}}},
    {"TenantInheritsTheFileNoRepeat",
     [](config::Config& c) {
       c.global.sandbox.docker.network = "bridge";
       Agent(c, "ops").sandbox.docker.cap_drop = {};
       config::TenantConfig& t = Tenant(c, "acme", false);
       t.agents["ops"] = c.agents["ops"];
     },
     {{kNet, "sandbox.docker.network"}, {kCaps, "agents.ops.sandbox.docker.capDrop"}}},
};

class AuditSandboxTableTest : public testing::TestWithParam<Case> {};

TEST_P(AuditSandboxTableTest, Findings) {
  config::Config cfg;
  GetParam().setup(cfg);
  std::vector<AuditFinding> got = AuditHostAndSandbox(cfg);
  for (const AuditFinding& f : got) {
    EXPECT_EQ(f.severity, f.id == kRoot ? "info" : "warn") << f.id;
    EXPECT_NE(f.message.find(f.where), std::string::npos) << "names the key: " << f.message;
  }
  EXPECT_EQ(IdsAndWheres(got), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(Table, AuditSandboxTableTest, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case>& p) { return p.param.name; });

std::string Message(const config::Config& cfg, const std::string& id) {
  for (const AuditFinding& f : AuditHostAndSandbox(cfg)) {
    if (f.id == id) return f.message;
  }
  return "";
}

void ExpectHas(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "\"" << part << "\" not in: " << message;
}

TEST(AuditSandboxMessagesTest, SayWhatAndHowToFix) {
  config::Config e;
  ElevatedFull(Agent(e, "ops").elevated, {"alice", "*"});
  ExpectHas(Message(e, kFull), "(cli: alice, *)");
  ExpectHas(Message(e, kFull), "without approval, even when the call does not ask for elevated");
  ExpectHas(Message(e, kFull), "set agents.ops.tools.elevated.defaultLevel to \"ask\"");
  ExpectHas(Message(e, kAny), "agents.ops.tools.elevated.allowFrom.cli holds \"*\"");
  ExpectHas(Message(e, kAny), "without approval (defaultLevel \"full\")");
  ExpectHas(Message(e, kAny), "list the senders who may, by name");

  config::Config d;
  d.global.sandbox.docker.cap_drop = {};
  d.global.sandbox.docker.network = "bridge";
  d.global.sandbox.docker.seccomp_profile = "unconfined";
  d.global.sandbox.docker.read_only_root = false;
  ExpectHas(Message(d, kCaps), "sandbox.docker.capDrop is [], which does not drop ALL");
  ExpectHas(Message(d, kCaps), "set it to [\"ALL\"]");
  ExpectHas(Message(d, kNet), "sandbox.docker.network is \"bridge\": sandbox commands can reach");
  ExpectHas(Message(d, kNet), "set it to \"none\"");
  ExpectHas(Message(d, kUnconfined), "refuses every sandbox command; remove the key");
  ExpectHas(Message(d, kUnconfined), "profiles/seccomp/default.json");
  ExpectHas(Message(d, kRoot), "set it to true");

  config::Config h;
  h.global.sandbox.docker.network = "container:db";
  ExpectHas(Message(h, kNet), "sandrun refuses it, so every sandbox command fails");

  config::Config t;
  Tenant(t, "idle", true);
  config::TenantConfig& acme = Tenant(t, "acme", true);
  acme.agents["bot"] = acme.global;
  acme.agents["bot"].exec.host = "gateway";
  acme.agents["ci"] = acme.global;
  acme.agents["ci"].sandbox.mode = config::SandboxMode::kOff;
  std::vector<AuditFinding> got = AuditHostAndSandbox(t);
  ASSERT_EQ(got.size(), 2u);
  ExpectHas(got[0].message, "tenants.acme.hostExecution is true: tenant acme's agents may run");
  ExpectHas(got[0].message, "agent bot: tools.exec.host gateway; agent ci: sandbox.mode off");
  ExpectHas(got[0].message, "set it to false unless the tenant is trusted");
  ExpectHas(got[1].message, "none does today");
}

TEST(AuditSandboxTest, PartOfTheAudit) {
  config::Config cfg;
  cfg.global.sandbox.docker.network = "bridge";
  AuditInput in;
  in.config = &cfg;
  std::vector<AuditFinding> got = AuditExecPolicy(in);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back().id, kNet);
  EXPECT_EQ(got.back().where, "sandbox.docker.network");
}

}  // namespace
}  // namespace sandrun::api
