// Tenant isolation below the front end (issue 14), in-process at the Runtime with the real
// dockerd and sandrun-sandbox:minimal: tenants "acme" and "globex" get their own config layer,
// workspaces, scratch dirs, containers (name, label, quota), approvals file, and never see each
// other's sessions or approvals; only sandbox calls run unless tenants.<id>.hostExecution.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "runner/api/runtime.h"
#include "sandbox/base/json.h"
#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

class Tenancy : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    // The runtime runs in this process: its state dir, profiles and the PATH host commands get.
    ::setenv("SANDRUN_HOME", home_.c_str(), 1);
    ::setenv("SANDRUN_PROFILES_DIR", SANDRUN_TEST_PROFILES_DIR, 1);
    ::setenv("PATH", PublicPath().c_str(), 1);
  }
  void TearDown() override {
    if (runtime_) {
      runtime_->CloseEvents();
      runtime_->Shutdown();
      runtime_.reset();
    }
    SandrunHome::TearDown();
  }

  // config.json with the small image, scope `scope`, and `tenants` as tenants' members.
  void Start(const std::string& tenants, const std::string& sandbox_extra = "",
             const std::string& scope = "agent") {
    Config(R"({"sandbox": {"scope": ")" + scope +
           R"(", "docker": {"image": "sandrun-sandbox:minimal"})" +
           (sandbox_extra.empty() ? "" : ", " + sandbox_extra) +
           R"(}, "tools": {"exec": {"loginShellPath": false}}, "tenants": {)" + tenants + "}}");
    auto started = api::Runtime::Start(api::GlobalOptions{}, {});
    ASSERT_TRUE(started) << started.error().ToString();
    runtime_ = std::move(started).value();
  }

  static api::Principal Who(const std::string& tenant, const std::string& session = "main",
                            const std::string& agent = "main") {
    api::Principal who;
    who.tenant = tenant;
    who.role = "operator";
    who.token_name = tenant + "-token";
    who.agent = agent;
    who.session = session;
    who.provider = "api";
    who.sender = who.token_name;
    return who;
  }

  api::RuntimeReply Exec(const api::Principal& who, const std::string& command,
                         const std::string& extra = "") {
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.String(command.c_str());
    return runtime_->Exec(who, R"({"tool":"exec","command":)" + std::string(buffer.GetString()) +
                                   (extra.empty() ? "" : "," + extra) + "}");
  }
  api::RuntimeReply Process(const api::Principal& who, const std::string& action,
                            const std::string& id, const std::string& extra = "") {
    return runtime_->Process(who, R"({"tool":"process","action":")" + action +
                                      R"(","sessionId":")" + id + "\"" +
                                      (extra.empty() ? "" : "," + extra) + "}");
  }

  static std::string Text(const api::RuntimeReply& r) {
    auto doc = Parsed(r.json);
    const auto* content = JsonMember(doc, "content");
    return content && content->IsArray() && !content->Empty()
               ? JsonString(*content->Begin(), "text")
               : "";
  }
  static std::string ErrorCode(const api::RuntimeReply& r) {
    auto doc = Parsed(r.json);
    const auto* e = JsonMember(doc, "error");
    return e ? JsonString(*e, "code") : "";
  }
  static std::string ErrorMessage(const api::RuntimeReply& r) {
    auto doc = Parsed(r.json);
    const auto* e = JsonMember(doc, "error");
    return e ? JsonString(*e, "message") : "";
  }

  std::vector<docker::ContainerSummary> Containers(const std::string& tenant) {
    std::string why;
    auto client = ConnectToDocker(&why);
    EXPECT_TRUE(client) << why;
    if (!client) return {};
    auto list = client->ListContainers(
        {"sandrun.instance=" + InstanceId(), "sandrun.tenant=" + tenant}, true);
    EXPECT_TRUE(list) << list.error().ToString();
    return list ? *list : std::vector<docker::ContainerSummary>{};
  }

  std::string TenantWorkspace(const std::string& tenant, const std::string& agent = "main") {
    return home_ + "/tenants/" + tenant + "/workspaces/" + agent;
  }

  std::unique_ptr<api::Runtime> runtime_;
};

TEST_F(Tenancy, SandboxCallsRunInTheTenantsOwnContainerAndWorkspace) {
  SANDRUN_REQUIRE_DOCKER(client);
  Start(R"("acme": {}, "globex": {})", R"("workspaceAccess": "rw")");
  auto acme = Exec(Who("acme"), "echo acme-was-here > /workspace/mark; cat /workspace/mark");
  ASSERT_EQ(acme.status, 200) << acme.json;
  EXPECT_EQ(Details(Parsed(acme.json), "aggregated"), "acme-was-here");
  auto globex = Exec(Who("globex"), "ls /workspace");
  ASSERT_EQ(globex.status, 200) << globex.json;
  EXPECT_EQ(Details(Parsed(globex.json), "aggregated"), "") << "globex saw acme's workspace";

  // The workspace is the tenant's, under the state dir, private, whatever the config says.
  std::ifstream mark(TenantWorkspace("acme") + "/mark");
  std::string line;
  std::getline(mark, line);
  EXPECT_EQ(line, "acme-was-here");
  struct stat st {};
  ASSERT_EQ(::lstat(TenantWorkspace("acme").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_FALSE(std::filesystem::exists(workspace_ + "/mark"));

  // Two containers, one per tenant, each labelled and named with its tenant.
  auto acme_containers = Containers("acme");
  auto globex_containers = Containers("globex");
  ASSERT_EQ(acme_containers.size(), 1u);
  ASSERT_EQ(globex_containers.size(), 1u);
  EXPECT_NE(acme_containers[0].id, globex_containers[0].id);
  ASSERT_FALSE(acme_containers[0].names.empty());
  EXPECT_NE(acme_containers[0].names[0].find("-acme-agent-main-"), std::string::npos)
      << acme_containers[0].names[0];
  EXPECT_EQ(acme_containers[0].labels.at("sandrun.scope"), "acme/agent:main");
  EXPECT_EQ(globex_containers[0].labels.at("sandrun.scope"), "globex/agent:main");
}

TEST_F(Tenancy, ScratchDirsOfTwoTenantsNeverMeet) {
  SANDRUN_REQUIRE_DOCKER(client);
  Start(R"("acme": {}, "globex": {})");  // workspaceAccess none: per-scope scratch dirs
  auto acme = Exec(Who("acme"), "echo secret > /workspace/s; cat /workspace/s");
  ASSERT_EQ(acme.status, 200) << acme.json;
  EXPECT_EQ(Details(Parsed(acme.json), "aggregated"), "secret");
  auto globex = Exec(Who("globex"), "cat /workspace/s 2>&1; ls -A /workspace");
  ASSERT_EQ(globex.status, 200) << globex.json;
  EXPECT_EQ(Details(Parsed(globex.json), "aggregated").find("secret"), std::string::npos)
      << globex.json;
  // Tenant "" (the local server) still gets its own, as before.
  auto local = Exec(Who(""), "ls -A /workspace");
  ASSERT_EQ(local.status, 200) << local.json;
  EXPECT_EQ(Details(Parsed(local.json), "aggregated"), "");
  EXPECT_EQ(ContainerCount(), 3u) << "one container per tenant, and the local one";
}

TEST_F(Tenancy, TheTenantsLayerAndQuotaCeilingsShapeItsSandbox) {
  SANDRUN_REQUIRE_DOCKER(client);
  Start(R"("acme": {"sandbox": {"docker": {"env": {"WHO": "acme"}}},
                    "quotas": {"pids": 77}})");
  auto acme = Exec(Who("acme"),
                   "echo $WHO; cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || "
                   "cat /sys/fs/cgroup/pids.max");
  ASSERT_EQ(acme.status, 200) << acme.json;
  EXPECT_EQ(Details(Parsed(acme.json), "aggregated"), "acme\n77");
  auto local = Exec(Who(""), "echo \"[$WHO]\"");
  ASSERT_EQ(local.status, 200) << local.json;
  EXPECT_EQ(Details(Parsed(local.json), "aggregated"), "[]");
}

TEST_F(Tenancy, HostExecutionIsRefusedUnlessTheTenantHasIt) {
  SANDRUN_REQUIRE_DOCKER(client);
  const std::string marker = marks_ + "/ran";
  Start(R"("acme": {}, "offmode": {"sandbox": {"mode": "off"}},
           "trusted": {"hostExecution": true, "sandbox": {"mode": "off"}})");
  struct Case {
    std::string tenant, extra;
  };
  for (const Case& c : {Case{"acme", R"("host":"gateway")"}, Case{"acme", R"("host":"node")"},
                        Case{"acme", R"("elevated":true)"}, Case{"offmode", ""},
                        Case{"unnamed", R"("host":"gateway")"},
                        Case{"acme", R"("host":"gateway","background":true)"}}) {
    auto r = Exec(Who(c.tenant), "touch " + marker, c.extra);
    EXPECT_EQ(r.status, 403) << c.tenant << " " << c.extra << ": " << r.json;
    EXPECT_EQ(ErrorCode(r), "forbidden") << r.json;
    EXPECT_NE(ErrorMessage(r).find("tenants." + c.tenant + ".hostExecution"), std::string::npos)
        << r.json;
    // policy check reports the same verdict: the rule is in the decision.
    auto check = runtime_->PolicyCheck(Who(c.tenant),
                                       R"({"tool":"exec","command":"true")" +
                                           (c.extra.empty() ? std::string() : "," + c.extra) + "}");
    ASSERT_EQ(check.status, 200) << check.json;
    auto verdict = Parsed(check.json);
    EXPECT_EQ(JsonString(verdict, "decision"), "deny") << check.json;
    EXPECT_NE(check.json.find("hostExecution"), std::string::npos) << check.json;
  }
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a refused call ran";
  EXPECT_EQ(Containers("acme").size(), 0u);
  // apply_patch on the gateway is the host's file system too.
  auto patch = runtime_->ApplyPatch(
      Who("offmode"),
      R"({"tool":"apply_patch","input":"*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch"})");
  EXPECT_EQ(patch.status, 403) << patch.json;
  EXPECT_EQ(ErrorCode(patch), "forbidden");
  // A tenant with hostExecution runs on the gateway (the local server's gateway calls are the
  // rest of the suite's).
  auto trusted = Exec(Who("trusted"), "touch " + marker, R"("host":"gateway")");
  EXPECT_EQ(trusted.status, 200) << trusted.json;
  EXPECT_TRUE(std::filesystem::exists(marker));
}

TEST_F(Tenancy, ATenantCannotNameAWorkspaceOrCwd) {
  SANDRUN_REQUIRE_DOCKER(client);
  Start(R"("trusted": {"hostExecution": true, "sandbox": {"mode": "off"}})");
  api::Principal who = Who("trusted");
  who.workspace_root = workspace_;
  auto named = Exec(who, "pwd", R"("host":"gateway")");
  EXPECT_EQ(named.status, 403) << named.json;
  EXPECT_EQ(ErrorCode(named), "forbidden");
  auto patch = runtime_->ApplyPatch(
      who,
      R"({"tool":"apply_patch","input":"*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch"})");
  EXPECT_EQ(patch.status, 403) << patch.json;
  EXPECT_FALSE(std::filesystem::exists(workspace_ + "/x.txt"));
  // The cwd is not the tenant's to give either: it runs in its workspace.
  who.workspace_root.clear();
  who.cwd = "/etc";
  auto pwd = Exec(who, "pwd", R"("host":"gateway")");
  ASSERT_EQ(pwd.status, 200) << pwd.json;
  EXPECT_EQ(Details(Parsed(pwd.json), "aggregated"), TenantWorkspace("trusted"));
  // apply_patch writes there too.
  auto applied = runtime_->ApplyPatch(
      who,
      R"({"tool":"apply_patch","input":"*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch"})");
  ASSERT_EQ(applied.status, 200) << applied.json;
  EXPECT_TRUE(std::filesystem::exists(TenantWorkspace("trusted") + "/x.txt"));
  // The host command reaches it as its cwd (the state dir around it stays hidden).
  auto cat = Exec(who, "cat x.txt", R"("host":"gateway")");
  EXPECT_EQ(Details(Parsed(cat.json), "aggregated"), "x") << cat.json;
}

TEST_F(Tenancy, MaxContainersRefusesANewContainerAndKeepsReusingOld) {
  SANDRUN_REQUIRE_DOCKER(client);
  Start(R"("acme": {"quotas": {"maxContainers": 1}}, "globex": {"quotas": {"maxContainers": 1}})",
        "", "session");
  auto first = Exec(Who("acme", "s1"), "echo one");
  ASSERT_EQ(first.status, 200) << first.json;
  auto second = Exec(Who("acme", "s2"), "echo two > /workspace/ran");
  EXPECT_EQ(second.status, 429) << second.json;
  EXPECT_EQ(ErrorCode(second), "quota-exceeded") << second.json;
  EXPECT_NE(ErrorMessage(second).find("tenants.acme.quotas.maxContainers"), std::string::npos);
  EXPECT_EQ(Containers("acme").size(), 1u) << "nothing was created";
  auto again = Exec(Who("acme", "s1"), "echo again");
  EXPECT_EQ(again.status, 200) << again.json;
  EXPECT_EQ(Details(Parsed(again.json), "aggregated"), "again");
  // Another tenant's quota is its own.
  auto globex = Exec(Who("globex", "s2"), "echo g");
  EXPECT_EQ(globex.status, 200) << globex.json;
  EXPECT_EQ(Containers("acme").size(), 1u);
  EXPECT_EQ(Containers("globex").size(), 1u);
}

TEST_F(Tenancy, ParallelCallsCannotBothTakeTheLastContainer) {
  SANDRUN_REQUIRE_DOCKER(client);
  Start(R"("acme": {"quotas": {"maxContainers": 1}})", "", "session");
  api::RuntimeReply a, b;
  std::thread first([&] { a = Exec(Who("acme", "p1"), "echo p1"); });
  std::thread second([&] { b = Exec(Who("acme", "p2"), "echo p2"); });
  first.join();
  second.join();
  EXPECT_EQ((a.status == 200) + (b.status == 200), 1) << a.json << "\n" << b.json;
  EXPECT_EQ((a.status == 429) + (b.status == 429), 1) << a.json << "\n" << b.json;
  EXPECT_EQ(Containers("acme").size(), 1u);
}

TEST_F(Tenancy, ApplyPatchWritesTheTenantsOwnScratchDir) {
  SANDRUN_REQUIRE_DOCKER(client);
  Start(R"("acme": {}, "globex": {})");
  auto patch = runtime_->ApplyPatch(
      Who("acme"),
      R"({"tool":"apply_patch","input":"*** Begin Patch\n*** Add File: p.txt\n+patched\n*** End Patch"})");
  ASSERT_EQ(patch.status, 200) << patch.json;
  auto acme = Exec(Who("acme"), "cat /workspace/p.txt");
  ASSERT_EQ(acme.status, 200) << acme.json;
  EXPECT_EQ(Details(Parsed(acme.json), "aggregated"), "patched");
  auto globex = Exec(Who("globex"), "ls -A /workspace");
  ASSERT_EQ(globex.status, 200) << globex.json;
  EXPECT_EQ(Details(Parsed(globex.json), "aggregated"), "");
}

TEST_F(Tenancy, AnotherTenantsSessionAnswersLikeAnUnknownOne) {
  SANDRUN_REQUIRE_DOCKER(client);
  Start(R"("acme": {}, "globex": {})");
  auto started = Exec(Who("acme"), "cat; echo done", R"("background":true)");
  ASSERT_EQ(started.status, 200) << started.json;
  const std::string id = Details(Parsed(started.json), "sessionId");
  ASSERT_FALSE(id.empty()) << started.json;
  // An id of the same shape that no tenant has.
  std::string unknown = id;
  for (char& c : unknown)
    c = c == 'z' ? 'y' : (std::isalnum(static_cast<unsigned char>(c)) ? 'z' : c);
  auto replaced = [&](std::string json) {
    for (size_t at = json.find(unknown); at != std::string::npos; at = json.find(unknown, at)) {
      json.replace(at, unknown.size(), id);
    }
    return json;
  };
  for (std::string action : {"poll", "log", "kill", "write", "remove", "clear"}) {
    const std::string extra = action == "write" ? R"("data":"x")" : "";
    auto other = Process(Who("globex"), action, id, extra);
    auto none = Process(Who("globex"), action, unknown, extra);
    EXPECT_EQ(other.status, none.status) << action;
    EXPECT_EQ(other.json, replaced(none.json)) << action;
    EXPECT_EQ(other.status, 404) << action << ": " << other.json;
  }
  auto list = runtime_->Process(Who("globex"), R"({"tool":"process","action":"list"})");
  ASSERT_EQ(list.status, 200) << list.json;
  // Quoted: an adjective-noun id with a -N suffix (a clash) contains the plain one.
  EXPECT_EQ(list.json.find("\"" + id + "\""), std::string::npos) << list.json;
  // The owner still has it, untouched by the other tenant's kill and write.
  auto mine = Process(Who("acme"), "write", id, R"("data":"hello\n","eof":true)");
  EXPECT_EQ(mine.status, 200) << mine.json;
  auto poll = Process(Who("acme"), "poll", id, R"("timeout":20000)");
  ASSERT_EQ(poll.status, 200) << poll.json;
  EXPECT_NE(poll.json.find("hello\\ndone"), std::string::npos) << poll.json;
}

TEST_F(Tenancy, ApprovalsAreFiledAndAnsweredPerTenant) {
  SANDRUN_REQUIRE_DOCKER(client);
  const std::string gateway =
      R"({"hostExecution": true, "sandbox": {"mode": "off"},
          "tools": {"exec": {"security": "allowlist", "ask": "on-miss"}}})";
  Start(R"("acme": )" + gateway + R"(, "globex": )" + gateway);
  auto pending = Exec(Who("acme"), "id -u");
  ASSERT_EQ(pending.status, 200) << pending.json;
  const std::string id = Details(Parsed(pending.json), "approvalId");
  ASSERT_FALSE(id.empty()) << pending.json;
  // Another tenant: not listed, and answering it (full id or slug) is an unknown id's answer.
  EXPECT_EQ(runtime_->ListApprovals(Who("globex")).json.find(id), std::string::npos);
  EXPECT_NE(runtime_->ListApprovals(Who("acme")).json.find(id), std::string::npos);
  for (const std::string& given : {id, id.substr(0, 8)}) {
    std::string unknown(given.size(), '0');
    auto other = runtime_->DecideApproval(Who("globex"), given, R"({"decision":"allow-always"})");
    auto none = runtime_->DecideApproval(Who("globex"), unknown, R"({"decision":"allow-always"})");
    EXPECT_EQ(other.status, 404) << other.json;
    EXPECT_EQ(other.status, none.status);
    std::string expected = none.json;
    expected.replace(expected.find(unknown), unknown.size(), given);
    EXPECT_EQ(other.json, expected);
  }
  // acme's own operator answers: allow-always lands in acme's approvals file only.
  auto answered = runtime_->DecideApproval(Who("acme"), id, R"({"decision":"allow-always"})");
  ASSERT_EQ(answered.status, 200) << answered.json;
  std::ifstream in(home_ + "/tenants/acme/exec-approvals.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("allow-always"), std::string::npos) << text;
  EXPECT_FALSE(std::filesystem::exists(home_ + "/exec-approvals.json"));
  EXPECT_FALSE(std::filesystem::exists(home_ + "/tenants/globex/exec-approvals.json"));
  // acme's next call is allowed by its file; globex still has to ask.
  auto again = Exec(Who("acme"), "id -u");
  EXPECT_EQ(again.status, 200) << again.json;
  EXPECT_EQ(Details(Parsed(again.json), "status"), "completed") << again.json;
  auto other = Exec(Who("globex"), "id -u");
  EXPECT_EQ(Details(Parsed(other.json), "status"), "approval-pending") << other.json;
}

}  // namespace
}  // namespace sandrun::testing
