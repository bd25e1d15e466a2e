// tenants.<id> in config.json: a layer over the whole file per tenant (its global level, the
// file's agents over it, the tenant's own agents), quotas and their ceilings, hostExecution,
// and the errors for bad tenant ids and values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runner/config/config.h"
#include "tests/support/temp_dir.h"

namespace sandrun::config {
namespace {

using ::testing::HasSubstr;

class TenantsConfig : public ::testing::Test {
 protected:
  Result<Config> Read(const std::string& text) {
    std::ofstream(path_, std::ios::binary) << text;
    return LoadConfig(path_, true);
  }
  Config Load(const std::string& text) {
    auto c = Read(text);
    EXPECT_TRUE(c) << c.error().message;
    return c ? *c : Config{};
  }
  sandrun::testing::TempDir tmp_{"tenants-test"};
  std::string path_ = tmp_.path() + "/config.json";
};

TEST_F(TenantsConfig, ATenantLayersOverTheWholeFile) {
  Config c = Load(R"({
    "tools": {"exec": {"timeoutSec": 100}},
    "sandbox": {"docker": {"image": "base:1", "env": {"A": "file"}}},
    "agents": {"builder": {"tools": {"exec": {"timeoutSec": 200}}}},
    "tenants": {
      "acme": {
        "tools": {"exec": {"timeoutSec": 300}},
        "sandbox": {"docker": {"image": "acme:1", "env": {"B": "acme"}}},
        "agents": {"deployer": {"sandbox": {"docker": {"image": "acme-deploy:1"}}},
                   "builder": {"sandbox": {"docker": {"env": {"C": "builder"}}}}},
        "hostExecution": true
      },
      "globex": {}
    }
  })");
  // The file itself is unchanged by its tenants.
  EXPECT_EQ(c.global.exec.timeout_seconds, 100);
  EXPECT_EQ(c.ForAgent("builder").exec.timeout_seconds, 200);
  EXPECT_EQ(c.ForAgent("main").sandbox.docker.image, "base:1");
  EXPECT_EQ(c.agents.count("deployer"), 0u);

  TenantConfig acme = c.ForTenant("acme");
  EXPECT_TRUE(acme.host_execution);
  AgentSettings main = acme.ForAgent("main");
  EXPECT_EQ(main.exec.timeout_seconds, 300);
  EXPECT_EQ(main.sandbox.docker.image, "acme:1");
  EXPECT_EQ(main.sandbox.docker.env.at("A"), "file");
  EXPECT_EQ(main.sandbox.docker.env.at("B"), "acme");
  // The file's agent section over the tenant's global level, then the tenant's own section.
  AgentSettings builder = acme.ForAgent("builder");
  EXPECT_EQ(builder.exec.timeout_seconds, 200);
  EXPECT_EQ(builder.sandbox.docker.image, "acme:1");
  EXPECT_EQ(builder.sandbox.docker.env.at("C"), "builder");
  EXPECT_EQ(acme.ForAgent("deployer").sandbox.docker.image, "acme-deploy:1");

  TenantConfig globex = c.ForTenant("globex");
  EXPECT_FALSE(globex.host_execution);
  EXPECT_EQ(globex.ForAgent("main").exec.timeout_seconds, 100);
  EXPECT_EQ(globex.ForAgent("builder").exec.timeout_seconds, 200);
  EXPECT_EQ(globex.ForAgent("deployer").sandbox.docker.image, "base:1")
      << "another tenant's agent is not this one's";
  EXPECT_EQ(globex.ForAgent("main").sandbox.docker.env.count("B"), 0u);
}

TEST_F(TenantsConfig, AnUnnamedTenantGetsTheFileWithSafeDefaults) {
  Config c = Load(R"({"tools": {"exec": {"timeoutSec": 42}}, "agents": {"x": {}}})");
  TenantConfig t = c.ForTenant("newcomer");
  EXPECT_FALSE(t.host_execution);
  EXPECT_EQ(t.quotas, TenantQuotas{});
  EXPECT_EQ(t.ForAgent("main").exec.timeout_seconds, 42);
  EXPECT_EQ(t.agents.count("x"), 1u);
}

TEST_F(TenantsConfig, EachTenantStartsFromTheBuiltInDockerEnv) {
  // Without a file-level env, a tenant's env replaces the built-in LANG for that tenant only.
  Config c = Load(R"({"tenants": {"a": {"sandbox": {"docker": {"env": {"X": "1"}}}},
                                  "b": {"sandbox": {"docker": {"env": {"Y": "2"}}}}}})");
  EXPECT_EQ(c.ForTenant("a").ForAgent("main").sandbox.docker.env,
            (std::map<std::string, std::string>{{"X", "1"}}));
  EXPECT_EQ(c.ForTenant("b").ForAgent("main").sandbox.docker.env,
            (std::map<std::string, std::string>{{"Y", "2"}}));
  EXPECT_EQ(c.global.sandbox.docker.env.count("LANG"), 1u);
}

TEST_F(TenantsConfig, QuotasAndTheirCeilings) {
  Config c = Load(R"({
    "sandbox": {"docker": {"memory": "4g", "cpus": 4, "pidsLimit": 0}},
    "agents": {"small": {"sandbox": {"docker": {"memory": "256m", "cpus": 0.5, "pidsLimit": 64}}}},
    "tenants": {"acme": {"quotas": {"maxConcurrentExecs": 4, "maxSessions": 10,
                                    "maxContainers": 3, "requestsPerMinute": 600,
                                    "maxLogBytes": "64m", "memory": "1g", "cpus": 2,
                                    "pids": 256}}}
  })");
  TenantConfig acme = c.ForTenant("acme");
  EXPECT_EQ(acme.quotas.max_concurrent_execs, 4);
  EXPECT_EQ(acme.quotas.max_sessions, 10);
  EXPECT_EQ(acme.quotas.max_containers, 3);
  EXPECT_EQ(acme.quotas.requests_per_minute, 600);
  EXPECT_EQ(acme.quotas.max_log_bytes, int64_t{64} << 20);
  DockerSettings main = acme.ForAgent("main").sandbox.docker;
  EXPECT_EQ(main.memory_bytes, int64_t{1} << 30) << "4g clamped to the 1g ceiling";
  EXPECT_EQ(main.cpus, 2.0);
  EXPECT_EQ(main.pids_limit, 256) << "no limit (0) becomes the ceiling";
  DockerSettings small = acme.ForAgent("small").sandbox.docker;
  EXPECT_EQ(small.memory_bytes, int64_t{256} << 20) << "below the ceiling: kept";
  EXPECT_EQ(small.cpus, 0.5);
  EXPECT_EQ(small.pids_limit, 64);
  // The file's own settings are not clamped.
  EXPECT_EQ(c.ForAgent("main").sandbox.docker.memory_bytes, int64_t{4} << 30);
}

TEST_F(TenantsConfig, BadTenantsAreErrorsWithPositions) {
  struct Case {
    std::string text;
    std::string message;
  };
  std::vector<Case> cases = {
      {R"({"tenants": []})", "expected an object of tenants"},
      {R"({"tenants": {"Acme": {}}})", "Acme"},
      {R"({"tenants": {"a_b": {}}})", "a_b"},
      {R"({"tenants": {"": {}}})", "tenant"},
      {R"({"tenants": {"acme": []}})", "expected an object"},
      {R"({"tenants": {"acme": {"hostExecution": "yes"}}})", "true or false"},
      {R"({"tenants": {"acme": {"quotas": {"maxSessions": -1}}}})",
       "tenants.acme.quotas.maxSessions"},
      {R"({"tenants": {"acme": {"quotas": {"memory": "lots"}}}})", "tenants.acme.quotas.memory"},
      {R"({"tenants": {"acme": {"tools": {"exec": {"host": "spark"}}}}})",
       "tenants.acme.tools.exec.host"},
      {R"({"tenants": {"acme": {"agents": {"x": {}, "list": [{"id": "x"}]}}}})", "defined twice"},
      {R"({"tenants": {"acme": {"agents": {"bad id": {}}}}})", "invalid agent id"},
  };
  for (const Case& c : cases) {
    auto r = Read(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_THAT(r.error().message, HasSubstr(c.message)) << c.text;
    EXPECT_THAT(r.error().message, HasSubstr("config.json:")) << c.text;
  }
}

TEST_F(TenantsConfig, UnknownTenantKeysAreWarnings) {
  Config c = Load(R"({"tenants": {"acme": {"quotas": {"maxWidgets": 1}, "colour": "red"}}})");
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_THAT(c.warnings[0], HasSubstr("tenants.acme.quotas.maxWidgets"));
  EXPECT_THAT(c.warnings[1], HasSubstr("tenants.acme.colour"));
}

}  // namespace
}  // namespace sandrun::config
