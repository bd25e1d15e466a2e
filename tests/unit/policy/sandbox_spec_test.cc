// Sandbox spec (reference §2.2-§2.5): scope keys, slugs, scratch dirs, the container spec from
// settings, bind and network validation, workdir mapping.
#include "runner/policy/sandbox_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <set>
#include <string>

#include "sandbox/base/sha256.h"

namespace sandrun::policy {
namespace {

using config::SandboxScope;
using config::WorkspaceAccess;
using ::testing::HasSubstr;

// A host file system for the probes: paths with their identities, owners and types; links are
// refused by `inspect` and resolved by `inspect_real`.
struct FakeHost {
  struct Node {
    uint64_t ino;
    uint32_t mode = S_IFDIR | 0755;
    uint32_t uid = 0, gid = 0;
    uint64_t nlink = 1;
  };
  std::map<std::string, Node> nodes;
  std::map<std::string, std::string> links;  // path -> target (absolute)
  std::set<std::string> dirs_beneath;        // "root|relative" pairs that dir_beneath accepts
  uint64_t next = 100;

  FakeHost() {
    for (const char* p : {"/",
                          "/etc",
                          "/etc/ssl",
                          "/proc",
                          "/sys",
                          "/dev",
                          "/root",
                          "/boot",
                          "/run",
                          "/var",
                          "/srv",
                          "/srv/data",
                          "/home",
                          "/home/u",
                          "/home/u/.ssh",
                          "/ws",
                          "/state",
                          "/state/sandboxes",
                          "/state/sandboxes/x",
                          "/state/tenants",
                          "/state/tenants/t1",
                          "/state/tenants/t1/workspaces",
                          "/state/tenants/t1/workspaces/w",
                          "/state/sandbox"}) {
      Add(p);
    }
    links["/var/run"] = "/run";
  }
  Node& Add(const std::string& path, uint32_t mode = S_IFDIR | 0755) {
    Node& n = nodes[path];
    n.ino = next++;
    n.mode = mode;
    return n;
  }
  // Another name for the same directory (a bind mount).
  void Alias(const std::string& alias, const std::string& of) { nodes[alias] = nodes.at(of); }

  Result<HostPathInfo> Inspect(const std::string& path) const {
    std::vector<std::string> prefixes = {"/"};
    for (size_t at = path.find('/', 1); path != "/"; at = path.find('/', at + 1)) {
      prefixes.push_back(path.substr(0, at));
      if (at == std::string::npos) break;
    }
    std::vector<PathIdentity> ancestors;
    for (const std::string& prefix : prefixes) {
      if (links.count(prefix)) return Error::FromErrno(ELOOP, prefix + " is a symbolic link");
      auto it = nodes.find(prefix);
      if (it == nodes.end()) return Error(ErrorCode::kNotFound, "no " + prefix);
      if (prefix != path) ancestors.push_back(PathIdentity{1, it->second.ino});
    }
    const Node& n = nodes.at(path);
    HostPathInfo info;
    info.path = path;
    info.id = PathIdentity{1, n.ino};
    info.mode = n.mode;
    info.uid = n.uid;
    info.gid = n.gid;
    info.nlink = n.nlink;
    info.ancestors = std::move(ancestors);
    return info;
  }

  HostProbe Probe(int64_t uid = 0) const {
    HostProbe p;
    p.inspect = [this](const std::string& path) { return Inspect(path); };
    p.inspect_real = [this](const std::string& path) {
      auto l = links.find(path);
      return Inspect(l == links.end() ? path : l->second);
    };
    p.dir_beneath = [this](const std::string& root, const std::string& rel) {
      return dirs_beneath.count(root + "|" + rel) > 0;
    };
    p.uid = uid;
    p.gid = uid;
    return p;
  }
};

Caller MakeCaller(std::string agent, std::string session) {
  Caller c;
  c.agent_id = std::move(agent);
  c.session_key = std::move(session);
  return c;
}

TEST(ScopeKey, PerScope) {
  EXPECT_EQ(SandboxScopeKey(SandboxScope::kShared, MakeCaller("main", "s")), "shared");
  EXPECT_EQ(SandboxScopeKey(SandboxScope::kSession, MakeCaller("main", " s1 ")), "s1");
  EXPECT_EQ(SandboxScopeKey(SandboxScope::kSession, MakeCaller("main", "  ")), "main");
  EXPECT_EQ(SandboxScopeKey(SandboxScope::kAgent, MakeCaller("main", "s")), "agent:main");
  EXPECT_EQ(SandboxScopeKey(SandboxScope::kAgent, MakeCaller(" ops ", "s")), "agent:ops");
  EXPECT_EQ(SandboxScopeKey(SandboxScope::kAgent, MakeCaller("", "s")), "agent:main");
}

struct SlugRow {
  std::string name;
  std::string key;
  std::string base;    // expected slug before "-<hash8>"
  std::string hashed;  // the text whose sha256 prefixes the slug
};
class SlugTest : public ::testing::TestWithParam<SlugRow> {};

TEST_P(SlugTest, Slugifies) {
  const SlugRow& row = GetParam();
  EXPECT_EQ(SlugifyScopeKey(row.key), row.base + "-" + Sha256Hex(row.hashed).substr(0, 8));
}

INSTANTIATE_TEST_SUITE_P(
    Rows, SlugTest,
    ::testing::Values(
        SlugRow{"agent_main", "agent:main", "agent-main", "agent:main"},
        SlugRow{"trimmed_and_lowered", "  Hello World!!  ", "hello-world", "Hello World!!"},
        SlugRow{"empty_is_session", "", "session", "session"},
        SlugRow{"blank_is_session", "   ", "session", "session"},
        SlugRow{"nothing_left", "!!!", "session", "!!!"},
        SlugRow{"keeps_dot_underscore_dash", "a..b__c--d", "a..b__c--d", "a..b__c--d"},
        SlugRow{"trims_dashes", "--x--", "x", "--x--"},
        SlugRow{"runs_collapse", "a:/:b", "a-b", "a:/:b"},
        SlugRow{"cut_at_32", std::string(40, 'k'), std::string(32, 'k'), std::string(40, 'k')},
        SlugRow{"cut_keeps_trailing_dash", std::string(31, 'a') + " b", std::string(31, 'a') + "-",
                std::string(31, 'a') + " b"},
        SlugRow{"non_ascii", "caf\xc3\xa9", "caf", "caf\xc3\xa9"}),
    [](const ::testing::TestParamInfo<SlugRow>& row_info) { return row_info.param.name; });

TEST(Slug, AgentMainExactly) {
  // sha256("agent:main") = f331f052...; checked independently of Sha256Hex.
  EXPECT_EQ(SlugifyScopeKey("agent:main"), "agent-main-f331f052");
  EXPECT_EQ(SlugifyScopeKey(""), "session-3f3af1ec");
}

TEST(ScratchDir, OneDirectoryPerScopeNamedByTheFullHash) {
  EXPECT_EQ(ScratchWorkspaceDir("/state/sandboxes", SandboxScope::kAgent, "agent:main"),
            "/state/sandboxes/agent-main-" + Sha256Hex("agent:main"));
  // The shared scope gets its own directory too, never the whole root.
  EXPECT_EQ(ScratchWorkspaceDir("/state/sandboxes/", SandboxScope::kShared, "shared"),
            "/state/sandboxes/shared-" + Sha256Hex("shared"));
  EXPECT_EQ(ScratchWorkspaceDir("/srv/sbx", SandboxScope::kSession, "s1"),
            "/srv/sbx/s1-" + Sha256Hex("s1"));
}

TEST(ScratchDir, KeysThatShareASlugNeverShareADirectory) {
  // Found by a birthday search: one slug (and 8-hex hash) for two agent ids.
  const std::string a = "agent:collide-agent-with-a-long-name-219";
  const std::string b = "agent:collide-agent-with-a-long-name-37ab";
  ASSERT_EQ(SlugifyScopeKey(a), SlugifyScopeKey(b));
  EXPECT_NE(ScopeDirName(a), ScopeDirName(b));
  EXPECT_NE(ScopeKeyHash(a), ScopeKeyHash(b));
  EXPECT_EQ(ScopeKeyHash(a).size(), 64u);
}

TEST(CallerIds, InvalidIdsAreRefusedNeverRewritten) {
  for (const std::string& agent :
       {std::string(""), std::string(" main"), std::string("a/b"), std::string("a:b"),
        std::string(".hidden"), std::string("-x"), std::string("x y"), std::string(65, 'a'),
        std::string("caf\xc3\xa9"), std::string("a\0b", 3)}) {
    auto e = ValidateCallerIds(MakeCaller(agent, "main"));
    ASSERT_TRUE(e.has_value()) << agent;
    EXPECT_EQ(e->WireCode(), "invalid-request");
    EXPECT_NE(e->message.find("Invalid agent id"), std::string::npos) << e->message;
  }
  for (const std::string& session :
       {std::string(""), std::string("  "), std::string("s/1"), std::string("$(id)"),
        std::string(129, 's'), std::string(":x")}) {
    auto e = ValidateCallerIds(MakeCaller("main", session));
    ASSERT_TRUE(e.has_value()) << session;
    EXPECT_NE(e->message.find("Invalid session key"), std::string::npos) << e->message;
  }
  for (const auto& [agent, session] : std::vector<std::pair<std::string, std::string>>{
           {"main", "main"},
           {"A1.b_c-d", "agent:main:cron@x.y-1"},
           {std::string(64, 'a'), std::string(128, 's')}}) {
    EXPECT_FALSE(ValidateCallerIds(MakeCaller(agent, session)).has_value()) << agent;
  }
}

TEST(Paths, Normalize) {
  EXPECT_EQ(NormalizePosixPath("/a/./b//c/"), "/a/b/c");
  EXPECT_EQ(NormalizePosixPath("/a/b/../c"), "/a/c");
  EXPECT_EQ(NormalizePosixPath("/../.."), "/");
  EXPECT_EQ(NormalizePosixPath("a/../../b"), "../b");
  EXPECT_EQ(NormalizePosixPath(""), ".");
  EXPECT_TRUE(PathIsWithin("/a/b", "/a"));
  EXPECT_TRUE(PathIsWithin("/a", "/a/"));
  EXPECT_FALSE(PathIsWithin("/ab", "/a"));
  EXPECT_TRUE(PathIsWithin("/x", "/"));
  EXPECT_FALSE(PathIsWithin("/a/../b", "/a"));
}

// ---------------------------------------------------------------------------------------------
// Binds.

struct BindRow {
  std::string name;
  std::string bind;
  std::string want;      // normalized bind, or "" when refused
  std::string fragment;  // part of the refusal text
};
class BindTest : public ::testing::TestWithParam<BindRow> {};

TEST_P(BindTest, Validates) {
  Result<std::string> r = ValidateBind(GetParam().bind, "/home/u", "/workspace");
  if (!GetParam().want.empty()) {
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_EQ(*r, GetParam().want);
    return;
  }
  ASSERT_FALSE(r.has_value()) << *r;
  EXPECT_EQ(r.error().WireCode(), "invalid-config");
  EXPECT_NE(r.error().message.find(GetParam().fragment), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.rfind("sandbox.docker.binds entry \"" + GetParam().bind + "\": ", 0),
            0u);
}

INSTANTIATE_TEST_SUITE_P(
    Rows, BindTest,
    ::testing::Values(
        BindRow{"ok_ro", "/srv/data:/data:ro", "/srv/data:/data:ro", ""},
        BindRow{"ok_rw_private", "/srv/data:/data:rw,rprivate", "/srv/data:/data:rw,rprivate", ""},
        BindRow{"relabel_z_refused", "/srv/data:/data:rw,z", "", "\"z\" is not supported"},
        BindRow{"propagation_refused", "/srv/data:/data:rslave", "", "\"rslave\" is not supported"},
        BindRow{"shared_refused", "/srv/data:/data:shared", "", "are private"},
        BindRow{"ok_tilde", "~/proj:/proj", "/home/u/proj:/proj", ""},
        BindRow{"ok_normalized", "/srv/./x//y/:/d/", "/srv/x/y:/d", ""},
        BindRow{"ok_dotdot_out_of_etc", "/etc/../srv/x:/d", "/srv/x:/d", ""},
        BindRow{"etc", "/etc:/x", "", "inside the blocked host path \"/etc\""},
        BindRow{"etc_sub", "/etc/ssl:/x", "", "inside the blocked host path \"/etc\""},
        BindRow{"dotdot_into_etc", "/srv/../etc/passwd:/x", "", "\"/etc\""},
        BindRow{"proc", "/proc/1:/p", "", "\"/proc\""}, BindRow{"sys", "/sys:/s", "", "\"/sys\""},
        BindRow{"dev", "/dev/sda:/d", "", "\"/dev\""},
        BindRow{"root_home", "/root:/r", "", "\"/root\""},
        BindRow{"boot", "/boot:/b", "", "\"/boot\""},
        BindRow{"run", "/run/user/1000:/r", "", "\"/run\""},
        BindRow{"var_run_docker_sock", "/var/run/docker.sock:/var/run/docker.sock", "",
                "\"/var/run\""},
        BindRow{"private_etc", "/private/etc:/e", "", "\"/private/etc\""},
        BindRow{"var_contains_var_run", "/var:/v", "", "contains the blocked host path"},
        BindRow{"docker_data_root", "/var/lib/docker:/x", "", "\"/var/lib/docker\""},
        BindRow{"containerd_data", "/var/lib/containerd/io:/x", "", "\"/var/lib/containerd\""},
        BindRow{"usr", "/usr:/x", "", "\"/usr\""},
        BindRow{"usr_local_bin", "/usr/local/bin:/x", "", "\"/usr\""},
        BindRow{"bin", "/bin:/x", "", "\"/bin\""}, BindRow{"lib64", "/lib64:/x", "", "\"/lib64\""},
        BindRow{"host_root", "/:/host", "", "the whole host"},
        BindRow{"docker_sock_elsewhere", "/srv/docker.sock:/s", "", "Docker socket"},
        BindRow{"ssh", "~/.ssh:/ssh", "", "\"/home/u/.ssh\""},
        BindRow{"aws_file", "/home/u/.aws/credentials:/c", "", "\"/home/u/.aws\""},
        BindRow{"config", "/home/u/.config/gh:/c", "", "\"/home/u/.config\""},
        BindRow{"netrc", "~/.netrc:/n", "", "\"/home/u/.netrc\""},
        BindRow{"home_contains_ssh", "/home/u:/home", "", "contains the blocked host path"},
        BindRow{"target_workspace", "/srv/x:/workspace", "", "reserved"},
        BindRow{"target_workspace_sub", "/srv/x:/workspace/sub", "", "reserved"},
        BindRow{"target_agent", "/srv/x:/agent", "", "reserved"},
        BindRow{"target_exec_wrapper", "/srv/x:/.sandrun/exec", "", "sandrun's exec wrapper"},
        BindRow{"target_exec_wrapper_dir", "/srv/x:/.sandrun", "", "sandrun's exec wrapper"},
        BindRow{"target_root", "/srv/x:/", "", "target \"/\""},
        BindRow{"target_relative", "/srv/x:data", "", "target must be an absolute path"},
        BindRow{"named_volume", "vol:/data", "", "absolute host path"},
        BindRow{"relative_source", "./x:/data", "", "absolute host path"},
        BindRow{"no_target", "/srv/x", "", "SRC:DST[:MODE]"},
        BindRow{"too_many_parts", "/a:/b:ro:x", "", "SRC:DST[:MODE]"},
        BindRow{"bad_mode", "/srv/x:/d:rw,bogus", "", "unknown mount option \"bogus\""}),
    [](const ::testing::TestParamInfo<BindRow>& row_info) { return row_info.param.name; });

TEST(Bind, TildeWithoutHome) {
  Result<std::string> r = ValidateBind("~/x:/x", "", "/workspace");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("HOME is not set"), std::string::npos);
}

TEST(Bind, CustomWorkdirIsReserved) {
  Result<std::string> r = ValidateBind("/srv/x:/code/sub", "/home/u", "/code");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("reserved"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Docker security settings.

struct DockerSecurityRow {
  std::string name;
  std::string network;
  std::string seccomp;
  std::string apparmor;
  std::string fragment;  // "" = accepted
};
class DockerSecurityTest : public ::testing::TestWithParam<DockerSecurityRow> {};

TEST_P(DockerSecurityTest, Validates) {
  config::DockerSettings d;
  d.network = GetParam().network;
  d.seccomp_profile = GetParam().seccomp;
  d.apparmor_profile = GetParam().apparmor;
  std::optional<Error> e = ValidateDockerSecurity(d);
  if (GetParam().fragment.empty()) {
    EXPECT_FALSE(e.has_value()) << e->message;
    return;
  }
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->WireCode(), "invalid-config");
  EXPECT_NE(e->message.find(GetParam().fragment), std::string::npos) << e->message;
}

INSTANTIATE_TEST_SUITE_P(
    Rows, DockerSecurityTest,
    ::testing::Values(DockerSecurityRow{"defaults", "none", "default", "", ""},
                      DockerSecurityRow{"bridge", "bridge", "default", "docker-default", ""},
                      DockerSecurityRow{"host_network", "host", "default", "", "network \"host\""},
                      DockerSecurityRow{"host_network_case", " HOST ", "default", "",
                                        "network \"host\""},
                      DockerSecurityRow{"container_network", "container:abc", "default", "",
                                        "network \"container:abc\""},
                      DockerSecurityRow{"seccomp_unconfined", "none", "unconfined", "",
                                        "seccompProfile \"unconfined\""},
                      DockerSecurityRow{"seccomp_unconfined_case", "none", "Unconfined", "",
                                        "seccompProfile \"unconfined\""},
                      DockerSecurityRow{"apparmor_unconfined", "none", "default", "unconfined",
                                        "apparmorProfile \"unconfined\""}),
    [](const ::testing::TestParamInfo<DockerSecurityRow>& row_info) {
      return row_info.param.name;
    });

// ---------------------------------------------------------------------------------------------
// The spec.

struct SpecFixture {
  config::AgentSettings settings;
  FakeHost host;
  int64_t runner_uid = 0;
  GateContext Ctx() {
    GateContext ctx;
    ctx.settings = &settings;
    ctx.state_dir = "/state";
    ctx.instance_id = "inst-1";
    ctx.workspace_dir = "/ws";
    ctx.host_env = {{"HOME", "/home/u"}};
    ctx.seccomp_profile_json = "{\"defaultAction\":\"SCMP_ACT_ERRNO\"}";
    ctx.host_probe = host.Probe(runner_uid);
    return ctx;
  }
};

TEST(Spec, Defaults) {
  SpecFixture f;
  Result<exec::SandboxSpec> r = BuildSandboxSpec(f.Ctx());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const exec::SandboxSpec& s = *r;
  EXPECT_EQ(s.instance_id, "inst-1");
  EXPECT_EQ(s.scope_key, "agent:main");
  EXPECT_EQ(s.image, "sandrun-sandbox:bookworm");
  EXPECT_EQ(s.container_prefix, "sandrun-sbx-");
  EXPECT_EQ(s.workdir, "/workspace");
  EXPECT_EQ(s.workspace_host_dir, "/state/sandboxes/agent-main-" + Sha256Hex("agent:main"));
  EXPECT_FALSE(s.workspace_read_only);
  EXPECT_TRUE(s.scratch);
  EXPECT_EQ(s.scratch_limit_bytes, int64_t{2} << 30);
  EXPECT_TRUE(s.read_only_root);
  EXPECT_EQ(s.tmpfs, (std::vector<std::string>{"/tmp", "/var/tmp", "/run", "/home/sandrun"}));
  EXPECT_EQ(
      s.tmpfs_options,
      (std::map<std::string, std::string>{
          {"/tmp", "rw,exec,nosuid,nodev,size=256m,mode=1777"},
          {"/var/tmp", "rw,exec,nosuid,nodev,size=64m,mode=1777"},
          {"/run", "rw,noexec,nosuid,nodev,size=16m,mode=1777"},
          // HOME: the sandbox user's own, never the workspace (issue 19).
          {"/home/sandrun", "rw,exec,nosuid,nodev,size=256m,mode=0700,uid=65534,gid=65534"}}));
  EXPECT_FALSE(s.remove_after);
  EXPECT_EQ(s.network, "none");
  EXPECT_EQ(s.cap_drop, std::vector<std::string>{"ALL"});
  EXPECT_TRUE(s.no_new_privileges);
  EXPECT_EQ(s.seccomp_profile_name, "default");
  EXPECT_EQ(s.seccomp_profile_json, "{\"defaultAction\":\"SCMP_ACT_ERRNO\"}");
  EXPECT_EQ(s.apparmor_profile, "");
  EXPECT_EQ(s.container_env, (std::map<std::string, std::string>{{"LANG", "C.UTF-8"}}));
  EXPECT_EQ(s.user, "65534:65534") << "a root runner's scratch dir: the sandbox runs as nobody";
  EXPECT_EQ(s.pids_limit, 512);
  EXPECT_EQ(s.memory_bytes, int64_t{1} << 30);
  EXPECT_EQ(s.memory_swap_bytes, int64_t{1} << 30);
  EXPECT_EQ(s.nano_cpus, 1000000000);
  EXPECT_TRUE(s.init);
  EXPECT_TRUE(s.binds.empty());
  EXPECT_EQ(s.prune_idle_hours, 24);
  EXPECT_EQ(s.prune_max_age_days, 7);
  EXPECT_EQ(s.state_dir, "/state");
}

TEST(Spec, Overrides) {
  SpecFixture f;
  config::DockerSettings& d = f.settings.sandbox.docker;
  d.image = "sandrun-sandbox:minimal";
  d.container_prefix = "x-";
  d.workdir = "/code/";
  d.tmpfs = {"/tmp", "/cache:size=10m", "/data"};
  d.network = "bridge";
  d.apparmor_profile = "docker-default";
  d.user = "1000:1000";
  d.setup_command = "apt-get update";
  d.pids_limit = 0;
  d.memory_bytes = 512 << 20;
  d.memory_swap_bytes = int64_t{2} << 30;
  d.cpus = 1.5;
  d.binds = {"/srv/data:/data:ro"};
  f.settings.sandbox.scope = SandboxScope::kSession;
  f.settings.sandbox.workspace_root = "~/sbx";
  GateContext ctx = f.Ctx();
  ctx.caller.session_key = "s1";
  Result<exec::SandboxSpec> r = BuildSandboxSpec(ctx);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->image, "sandrun-sandbox:minimal");
  EXPECT_EQ(r->container_prefix, "x-");
  EXPECT_EQ(r->workdir, "/code");
  EXPECT_EQ(r->scope_key, "s1");
  EXPECT_EQ(r->workspace_host_dir, "/home/u/sbx/s1-" + Sha256Hex("s1"));
  EXPECT_EQ(r->tmpfs, (std::vector<std::string>{"/tmp", "/cache", "/data", "/home/sandrun"}));
  EXPECT_EQ(r->tmpfs_options.at("/home/sandrun"),
            "rw,exec,nosuid,nodev,size=256m,mode=0700,uid=1000,gid=1000");
  EXPECT_EQ(r->tmpfs_options.at("/cache"), "size=10m");
  EXPECT_EQ(r->tmpfs_options.at("/data"), "rw,noexec,nosuid,nodev,size=64m,mode=1777");
  EXPECT_EQ(r->network, "bridge");
  EXPECT_EQ(r->apparmor_profile, "docker-default");
  EXPECT_EQ(r->user, "1000:1000");
  EXPECT_EQ(r->setup_command, "apt-get update");
  EXPECT_EQ(r->pids_limit, 0);
  EXPECT_EQ(r->memory_bytes, 512 << 20);
  EXPECT_EQ(r->memory_swap_bytes, int64_t{2} << 30);
  EXPECT_EQ(r->nano_cpus, 1500000000);
  ASSERT_EQ(r->binds.size(), 1u);
  EXPECT_EQ(r->binds[0].source, "/srv/data");
  EXPECT_EQ(r->binds[0].target, "/data");
  EXPECT_TRUE(r->binds[0].read_only);
  EXPECT_EQ(r->binds[0].id, (PathIdentity{1, f.host.nodes.at("/srv/data").ino}));
}

TEST(Spec, WorkspaceAccess) {
  SpecFixture f;
  f.settings.sandbox.workspace_access = WorkspaceAccess::kRo;
  Result<exec::SandboxSpec> r = BuildSandboxSpec(f.Ctx());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->workspace_host_dir, "/ws");
  EXPECT_TRUE(r->workspace_read_only);
  f.settings.sandbox.workspace_access = WorkspaceAccess::kRw;
  r = BuildSandboxSpec(f.Ctx());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->workspace_host_dir, "/ws");
  EXPECT_FALSE(r->workspace_read_only);
  EXPECT_EQ(r->workspace_id, (PathIdentity{1, f.host.nodes.at("/ws").ino}));
  f.settings.sandbox.workspace_access = WorkspaceAccess::kNone;
  f.settings.sandbox.scope = SandboxScope::kShared;
  r = BuildSandboxSpec(f.Ctx());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->scope_key, "shared");
  EXPECT_EQ(r->workspace_host_dir, "/state/sandboxes/shared-" + Sha256Hex("shared"));
  // ro/rw need the real workspace.
  f.settings.sandbox.workspace_access = WorkspaceAccess::kRw;
  GateContext ctx = f.Ctx();
  ctx.workspace_dir.clear();
  r = BuildSandboxSpec(ctx);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().WireCode(), "invalid-config");
}

struct SpecErrorRow {
  std::string name;
  std::function<void(config::AgentSettings&, GateContext&)> setup;
  std::string fragment;
};
class SpecErrorTest : public ::testing::TestWithParam<SpecErrorRow> {};

TEST_P(SpecErrorTest, FailsClosed) {
  SpecFixture f;
  GateContext ctx = f.Ctx();
  GetParam().setup(f.settings, ctx);
  Result<exec::SandboxSpec> r = BuildSandboxSpec(ctx);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().WireCode(), "invalid-config");
  EXPECT_NE(r.error().message.find(GetParam().fragment), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Rows, SpecErrorTest,
    ::testing::Values(
        SpecErrorRow{"no_seccomp",
                     [](config::AgentSettings&, GateContext& c) { c.seccomp_profile_json.clear(); },
                     "seccomp filter"},
        SpecErrorRow{
            "host_network",
            [](config::AgentSettings& s, GateContext&) { s.sandbox.docker.network = "host"; },
            "network \"host\""},
        SpecErrorRow{"empty_image",
                     [](config::AgentSettings& s, GateContext&) { s.sandbox.docker.image = " "; },
                     "image is empty"},
        SpecErrorRow{
            "relative_workdir",
            [](config::AgentSettings& s, GateContext&) { s.sandbox.docker.workdir = "work"; },
            "sandbox.docker.workdir"},
        SpecErrorRow{"root_workdir",
                     [](config::AgentSettings& s, GateContext&) { s.sandbox.docker.workdir = "/"; },
                     "sandbox.docker.workdir"},
        SpecErrorRow{
            "relative_tmpfs",
            [](config::AgentSettings& s, GateContext&) { s.sandbox.docker.tmpfs = {"tmp"}; },
            "sandbox.docker.tmpfs"},
        SpecErrorRow{
            "tmpfs_over_the_exec_wrapper",
            [](config::AgentSettings& s, GateContext&) { s.sandbox.docker.tmpfs = {"/.sandrun"}; },
            "sandrun's exec wrapper"},
        SpecErrorRow{"workdir_over_the_exec_wrapper",
                     [](config::AgentSettings& s, GateContext&) {
                       s.sandbox.docker.workdir = "/.sandrun/w";
                     },
                     "sandrun's exec wrapper"},
        SpecErrorRow{
            "bad_env_key",
            [](config::AgentSettings& s, GateContext&) { s.sandbox.docker.env["BAD-KEY"] = "1"; },
            "sandbox.docker.env"},
        SpecErrorRow{
            "negative_pids",
            [](config::AgentSettings& s, GateContext&) { s.sandbox.docker.pids_limit = -1; },
            "pidsLimit"},
        SpecErrorRow{
            "bad_swap",
            [](config::AgentSettings& s, GateContext&) { s.sandbox.docker.memory_swap_bytes = -2; },
            "memorySwap"},
        SpecErrorRow{"negative_cpus",
                     [](config::AgentSettings& s, GateContext&) { s.sandbox.docker.cpus = -1; },
                     "cpus"},
        SpecErrorRow{
            "bad_bind",
            [](config::AgentSettings& s, GateContext&) { s.sandbox.docker.binds = {"/etc:/etc"}; },
            "binds entry"},
        SpecErrorRow{
            "relative_workspace_root",
            [](config::AgentSettings& s, GateContext&) { s.sandbox.workspace_root = "rel"; },
            "workspaceRoot"},
        SpecErrorRow{"no_state_dir",
                     [](config::AgentSettings&, GateContext& c) { c.state_dir.clear(); },
                     "state dir"}),
    [](const ::testing::TestParamInfo<SpecErrorRow>& row_info) { return row_info.param.name; });

TEST(Spec, ContextTmpfsPresetWins) {
  SpecFixture f;
  GateContext ctx = f.Ctx();
  ctx.tmpfs_options = {{"/tmp", "rw,size=1m"}};
  Result<exec::SandboxSpec> r = BuildSandboxSpec(ctx);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->tmpfs_options.at("/tmp"), "rw,size=1m");
  EXPECT_EQ(r->tmpfs_options.at("/run"), "rw,noexec,nosuid,nodev,size=64m,mode=1777");
}

// ---------------------------------------------------------------------------------------------
// The workspace and bind sources on the host: by text and by what they resolve to.

struct WorkspaceRow {
  std::string name;
  std::string workspace;
  std::string fragment;  // "" = accepted
};
class WorkspaceCheckTest : public ::testing::TestWithParam<WorkspaceRow> {};

TEST_P(WorkspaceCheckTest, RoAndRwAlike) {
  for (WorkspaceAccess access : {WorkspaceAccess::kRo, WorkspaceAccess::kRw}) {
    SpecFixture f;
    f.host.Add("/srv/etc-alias");
    f.host.Alias("/srv/etc-alias", "/etc");  // another name for /etc (a bind mount)
    f.host.links["/srv/link"] = "/etc";
    f.host.Add("/srv/file", S_IFREG | 0644);
    f.settings.sandbox.workspace_access = access;
    GateContext ctx = f.Ctx();
    ctx.workspace_dir = GetParam().workspace;
    Result<exec::SandboxSpec> r = BuildSandboxSpec(ctx);
    if (GetParam().fragment.empty()) {
      ASSERT_TRUE(r.has_value()) << r.error().message;
      EXPECT_EQ(r->workspace_host_dir, GetParam().workspace);
      continue;
    }
    ASSERT_FALSE(r.has_value()) << GetParam().workspace;
    EXPECT_EQ(r.error().WireCode(), "invalid-config");
    EXPECT_NE(r.error().message.find(GetParam().fragment), std::string::npos) << r.error().message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, WorkspaceCheckTest,
    ::testing::Values(
        WorkspaceRow{"ok", "/ws", ""}, WorkspaceRow{"host_root", "/", "the whole host"},
        WorkspaceRow{"etc", "/etc", "inside the blocked host path \"/etc\""},
        WorkspaceRow{"etc_sub", "/etc/ssl", "inside the blocked host path \"/etc\""},
        WorkspaceRow{"var_contains_var_run", "/var", "contains the blocked host path"},
        WorkspaceRow{"home_contains_ssh", "/home/u", "contains the blocked host path"},
        WorkspaceRow{"run", "/run", "\"/run\""},
        WorkspaceRow{"alias_of_etc", "/srv/etc-alias", "under another name"},
        WorkspaceRow{"through_a_link", "/srv/link", "symbolic link"},
        WorkspaceRow{"missing", "/srv/nope", "does not resolve"},
        WorkspaceRow{"a_file", "/srv/file", "not a directory"},
        WorkspaceRow{"state_dir", "/state", "state dir"},
        WorkspaceRow{"state_sub", "/state/sandbox", "state dir"},
        WorkspaceRow{"sandboxes_root", "/state/sandboxes", "state dir"},
        WorkspaceRow{"tenant_dir", "/state/tenants/t1", "state dir"},
        WorkspaceRow{"tenant_workspaces_root", "/state/tenants/t1/workspaces", "state dir"},
        WorkspaceRow{"in_sandboxes", "/state/sandboxes/x", ""},
        WorkspaceRow{"tenant_workspace", "/state/tenants/t1/workspaces/w", ""}),
    [](const ::testing::TestParamInfo<WorkspaceRow>& row_info) { return row_info.param.name; });

TEST(WorkspaceCheck, ContainingTheStateDirIsRefused) {
  SpecFixture f;
  f.host.Add("/data");
  f.host.Add("/data/home");
  f.settings.sandbox.workspace_access = WorkspaceAccess::kRw;
  GateContext ctx = f.Ctx();
  ctx.state_dir = "/data/home";
  ctx.workspace_dir = "/data";
  Result<exec::SandboxSpec> r = BuildSandboxSpec(ctx);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("contains the runner's state dir"), std::string::npos)
      << r.error().message;
}

struct BindSourceRow {
  std::string name;
  std::string bind;
  std::string fragment;  // "" = accepted
};
class BindSourceTest : public ::testing::TestWithParam<BindSourceRow> {};

TEST_P(BindSourceTest, ChecksWhatTheSourceIs) {
  SpecFixture f;
  f.host.Add("/srv/sock", S_IFSOCK | 0660);
  f.host.Add("/srv/fifo", S_IFIFO | 0600);
  f.host.Add("/srv/disk", S_IFBLK | 0600);
  f.host.Add("/srv/one", S_IFREG | 0644);
  f.host.Add("/srv/two", S_IFREG | 0644).nlink = 2;
  f.host.Add("/srv/run-alias");
  f.host.Alias("/srv/run-alias", "/run");
  f.host.links["/srv/to-run"] = "/var/run";
  f.host.Add("/ws/data");
  f.host.Add("/state/sandboxes/x/y");
  f.settings.sandbox.workspace_access = WorkspaceAccess::kRw;
  f.settings.sandbox.docker.binds = {GetParam().bind};
  Result<exec::SandboxSpec> r = BuildSandboxSpec(f.Ctx());
  if (GetParam().fragment.empty()) {
    ASSERT_TRUE(r.has_value()) << r.error().message;
    return;
  }
  ASSERT_FALSE(r.has_value()) << GetParam().bind;
  EXPECT_EQ(r.error().WireCode(), "invalid-config");
  EXPECT_NE(r.error().message.find(GetParam().fragment), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Rows, BindSourceTest,
    ::testing::Values(BindSourceRow{"dir", "/srv/data:/data", ""},
                      BindSourceRow{"file", "/srv/one:/one:ro", ""},
                      BindSourceRow{"symlink_to_var_run", "/srv/to-run:/r", "symbolic link"},
                      BindSourceRow{"alias_of_run", "/srv/run-alias:/r", "under another name"},
                      BindSourceRow{"socket", "/srv/sock:/s", "is a socket"},
                      BindSourceRow{"fifo", "/srv/fifo:/f", "FIFO"},
                      BindSourceRow{"device", "/srv/disk:/d", "is a device"},
                      BindSourceRow{"hard_linked_file", "/srv/two:/t", "2 hard links"},
                      BindSourceRow{"missing", "/srv/nope:/n", "does not resolve"},
                      BindSourceRow{"inside_rw_workspace", "/ws/data:/d",
                                    "where the sandbox can write"},
                      BindSourceRow{"inside_scratch_root", "/state/sandboxes/x/y:/d", "state dir"},
                      BindSourceRow{"state_dir", "/state/sandbox:/d", "state dir"}),
    [](const ::testing::TestParamInfo<BindSourceRow>& row_info) { return row_info.param.name; });

TEST(BindSource, InsideAConfiguredScratchRootIsRefused) {
  SpecFixture f;
  f.host.Add("/scratch");
  f.host.Add("/scratch/planted");
  f.settings.sandbox.workspace_root = "/scratch";
  f.settings.sandbox.docker.binds = {"/scratch/planted:/p"};
  Result<exec::SandboxSpec> r = BuildSandboxSpec(f.Ctx());
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("where the sandbox can write (/scratch)"), std::string::npos)
      << r.error().message;
}

TEST(BindSource, BlockedScratchRootIsRefused) {
  SpecFixture f;
  f.settings.sandbox.workspace_root = "/etc/sbx";
  Result<exec::SandboxSpec> r = BuildSandboxSpec(f.Ctx());
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("sandbox.workspaceRoot"), std::string::npos);
}

TEST(SandboxUser, NobodyRunsAsRootByAccident) {
  SpecFixture f;
  f.host.nodes["/ws"].uid = 1000;
  f.host.nodes["/ws"].gid = 1001;
  f.settings.sandbox.workspace_access = WorkspaceAccess::kRw;
  EXPECT_EQ(BuildSandboxSpec(f.Ctx())->user, "1000:1001") << "the workspace's owner";
  f.settings.sandbox.workspace_access = WorkspaceAccess::kRo;
  EXPECT_EQ(BuildSandboxSpec(f.Ctx())->user, "1000:1001");
  f.host.nodes["/ws"].uid = 0;
  EXPECT_EQ(BuildSandboxSpec(f.Ctx())->user, "65534:65534") << "a root-owned workspace";
  f.settings.sandbox.workspace_access = WorkspaceAccess::kNone;
  EXPECT_EQ(BuildSandboxSpec(f.Ctx())->user, "65534:65534") << "a root runner's scratch dir";
  f.runner_uid = 1234;
  EXPECT_EQ(BuildSandboxSpec(f.Ctx())->user, "1234:1234") << "the runner's own scratch dir";
  f.settings.sandbox.docker.user = "0";
  EXPECT_EQ(BuildSandboxSpec(f.Ctx())->user, "0") << "root only when the config says so";
}

TEST(Spec, InvalidCallerIdsAreRefused) {
  SpecFixture f;
  GateContext ctx = f.Ctx();
  ctx.caller.agent_id = "Main Agent";
  Result<exec::SandboxSpec> r = BuildSandboxSpec(ctx);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().WireCode(), "invalid-request");
  ctx.caller.agent_id = "main";
  ctx.caller.session_key = "x/../y";
  r = BuildSandboxSpec(ctx);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().WireCode(), "invalid-request");
}

// ---------------------------------------------------------------------------------------------
// Workdir mapping.

struct MapRow {
  std::string name;
  std::optional<std::string> requested;
  std::string container;
  std::string host;
  bool warned;
};
class MapWorkdirTest : public ::testing::TestWithParam<MapRow> {};

TEST_P(MapWorkdirTest, Maps) {
  std::set<std::string> dirs = {"a", "a/b"};
  DirBeneathFn beneath = [&](const std::string& root, const std::string& rel) {
    EXPECT_EQ(root, "/h") << "probed below the mount's host dir only";
    return dirs.count(rel) > 0;
  };
  SandboxWorkdir w = MapSandboxWorkdir(GetParam().requested, "/workspace", "/h", beneath);
  EXPECT_EQ(w.container_dir, GetParam().container);
  EXPECT_EQ(w.host_dir, GetParam().host);
  EXPECT_EQ(w.warning.has_value(), GetParam().warned);
  if (w.warning.has_value()) {
    // Container paths only: the host workspace path is never shown to the sandbox's caller.
    EXPECT_EQ(*w.warning, "Warning: workdir \"" + *GetParam().requested +
                              "\" is unavailable; using \"/workspace\".");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, MapWorkdirTest,
    ::testing::Values(MapRow{"absent", std::nullopt, "/workspace", "/h", false},
                      MapRow{"blank", " ", "/workspace", "/h", false},
                      MapRow{"root", "/workspace", "/workspace", "/h", false},
                      MapRow{"sub", "/workspace/a/b", "/workspace/a/b", "/h/a/b", false},
                      MapRow{"dot_segments", "/workspace/./a/../a", "/workspace/a", "/h/a", false},
                      MapRow{"relative", "a/b", "/workspace/a/b", "/h/a/b", false},
                      MapRow{"relative_dot", ".", "/workspace", "/h", false},
                      MapRow{"host_side", "/h/a", "/workspace/a", "/h/a", false},
                      MapRow{"missing", "/workspace/zzz", "/workspace", "/h", true},
                      MapRow{"escape_relative", "../etc", "/workspace", "/h", true},
                      MapRow{"escape_absolute", "/workspace/../etc", "/workspace", "/h", true},
                      MapRow{"prefix_not_parent", "/workspacex", "/workspace", "/h", true},
                      MapRow{"outside", "/tmp", "/workspace", "/h", true}),
    [](const ::testing::TestParamInfo<MapRow>& row_info) { return row_info.param.name; });

// Issue 19: what a call may choose for its sandbox, within sandbox.allow.*.
TEST(Spec, CallChoicesWithinTheAllowList) {
  SpecFixture f;
  config::SandboxAllowSettings& allow = f.settings.sandbox.allow;
  allow.images = {"sandrun-sandbox:minimal"};
  allow.network = {"bridge"};
  allow.memory_bytes = int64_t{2} << 30;
  allow.cpus = 2;
  allow.pids = 1024;
  ExecRequest r;
  r.image = "sandrun-sandbox:minimal";
  r.network = "bridge";
  r.memory_bytes = int64_t{2} << 30;
  r.cpus = 2;
  r.pids = 1024;
  Result<exec::SandboxSpec> s = BuildSandboxSpec(f.Ctx(), r);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->image, "sandrun-sandbox:minimal");
  EXPECT_EQ(s->network, "bridge");
  EXPECT_EQ(s->memory_bytes, int64_t{2} << 30);
  EXPECT_EQ(s->memory_swap_bytes, int64_t{2} << 30);
  EXPECT_EQ(s->nano_cpus, 2000000000);
  EXPECT_EQ(s->pids_limit, 1024);
  // The configured values themselves are always allowed, and so are lower limits.
  ExecRequest same;
  same.image = "sandrun-sandbox:bookworm";
  same.network = "none";
  same.memory_bytes = 256 << 20;
  ASSERT_TRUE(BuildSandboxSpec(f.Ctx(), same).has_value());
}

// The warm pool keeps the configured kinds of sandbox only: a call's own choice gets none.
TEST(Spec, ACallsOwnImageOrLimitsGetNoWarmPool) {
  SpecFixture f;
  f.settings.sandbox.pool = config::PoolSettings{2, 4, 60000};
  f.settings.sandbox.allow.pids = 1024;
  f.settings.sandbox.allow.images = {"sandrun-sandbox:minimal"};
  ExecRequest plain;
  Result<exec::SandboxSpec> configured = BuildSandboxSpec(f.Ctx(), plain);
  ASSERT_TRUE(configured.has_value()) << configured.error().message;
  EXPECT_EQ(configured->pool.min, 2);
  EXPECT_EQ(configured->pool.max, 4);
  EXPECT_EQ(configured->pool.idle_ttl_ms, 60000);
  ExecRequest same;  // naming the configured value is no choice of its own
  same.pids = configured->pids_limit;
  EXPECT_TRUE(BuildSandboxSpec(f.Ctx(), same)->pool.enabled());
  ExecRequest pids;
  pids.pids = 300;
  EXPECT_FALSE(BuildSandboxSpec(f.Ctx(), pids)->pool.enabled());
  ExecRequest image;
  image.image = "sandrun-sandbox:minimal";
  EXPECT_FALSE(BuildSandboxSpec(f.Ctx(), image)->pool.enabled());
}

TEST(Spec, CallChoicesBeyondTheAllowListAreRefusedNamingTheKey) {
  SpecFixture f;
  struct Case {
    const char* name;
    ExecRequest request;
    const char* key;
  };
  auto with = [](auto set) {
    ExecRequest r;
    set(r);
    return r;
  };
  const Case cases[] = {
      {"image", with([](ExecRequest& r) { r.image = "ubuntu:latest"; }), "sandbox.allow.images"},
      {"network", with([](ExecRequest& r) { r.network = "bridge"; }), "sandbox.allow.network"},
      {"host network", with([](ExecRequest& r) { r.network = "host"; }), "not allowed"},
      {"container network", with([](ExecRequest& r) { r.network = "container:x"; }), "not allowed"},
      {"memory", with([](ExecRequest& r) { r.memory_bytes = int64_t{2} << 30; }),
       "sandbox.allow.memory"},
      {"cpus", with([](ExecRequest& r) { r.cpus = 1.5; }), "sandbox.allow.cpus"},
      {"pids", with([](ExecRequest& r) { r.pids = 513; }), "sandbox.allow.pids"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<exec::SandboxSpec> s = BuildSandboxSpec(f.Ctx(), c.request);
    ASSERT_FALSE(s.has_value());
    EXPECT_EQ(s.error().WireCode(), "invalid-request");
    EXPECT_THAT(s.error().message, HasSubstr(c.key));
    EXPECT_THAT(s.error().message, HasSubstr("nothing was run"));
  }
  // An allow list does not let `host` through either.
  f.settings.sandbox.allow.network = {"host"};
  ExecRequest host;
  host.network = "host";
  EXPECT_FALSE(BuildSandboxSpec(f.Ctx(), host).has_value());
  // Ceilings above the configured values allow up to them, not beyond.
  f.settings.sandbox.allow.memory_bytes = int64_t{4} << 30;
  ExecRequest big;
  big.memory_bytes = int64_t{4} << 30;
  EXPECT_TRUE(BuildSandboxSpec(f.Ctx(), big).has_value());
  big.memory_bytes = (int64_t{4} << 30) + 1;
  EXPECT_FALSE(BuildSandboxSpec(f.Ctx(), big).has_value());
}

TEST(Spec, RmGivesTheCallAScopeOfItsOwn) {
  SpecFixture f;
  GateContext ctx = f.Ctx();
  ctx.call_id = "0a1b2c3d4e5f";
  ExecRequest r;
  r.rm = true;
  Result<exec::SandboxSpec> s = BuildSandboxSpec(ctx, r);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->scope_key, "agent:main#rm-0a1b2c3d4e5f");
  EXPECT_TRUE(s->remove_after);
  EXPECT_EQ(s->workspace_host_dir,
            ScratchWorkspaceDir("/state/sandboxes", SandboxScope::kAgent, s->scope_key));
  EXPECT_NE(s->workspace_host_dir, BuildSandboxSpec(f.Ctx())->workspace_host_dir);
}

// Red team (issue 19): under scope "session" the session key is the scope key; "agent:bob" or
// "shared" would be another scope kind's sandbox (its container, scratch and HOME).
TEST(Spec, ASessionKeyNeverNamesAnotherScopeKind) {
  SpecFixture f;
  f.settings.sandbox.scope = SandboxScope::kSession;
  for (const char* key : {"agent:bob", "agent:main", "shared"}) {
    GateContext ctx = f.Ctx();
    ctx.caller.session_key = key;
    Result<exec::SandboxSpec> s = BuildSandboxSpec(ctx);
    ASSERT_FALSE(s.has_value()) << key;
    EXPECT_EQ(s.error().WireCode(), "invalid-request");
    EXPECT_THAT(s.error().message, HasSubstr("names another scope's sandbox")) << key;
  }
  // OpenClaw's own session keys (agent:<id>:<rest>) and ordinary ones stay usable.
  for (const char* key : {"agent:bob:main", "job-41", "sharedx"}) {
    GateContext ctx = f.Ctx();
    ctx.caller.session_key = key;
    Result<exec::SandboxSpec> s = BuildSandboxSpec(ctx);
    ASSERT_TRUE(s.has_value()) << key << ": " << s.error().message;
    EXPECT_EQ(s->scope_key, key);
  }
  // Under scope "agent" the session key names nothing: any valid key is fine.
  f.settings.sandbox.scope = SandboxScope::kAgent;
  GateContext ctx = f.Ctx();
  ctx.caller.session_key = "agent:bob";
  EXPECT_TRUE(BuildSandboxSpec(ctx).has_value());
}

TEST(Spec, HomeIsNeverTheWorkspace) {
  SpecFixture f;
  f.settings.sandbox.docker.user = "builder";  // a name: the tmpfs is anybody's
  Result<exec::SandboxSpec> s = BuildSandboxSpec(f.Ctx());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->tmpfs_options.at("/home/sandrun"), "rw,exec,nosuid,nodev,size=256m,mode=1777");
  // A configured tmpfs there is kept as configured.
  f.settings.sandbox.docker.tmpfs = {"/tmp", "/home/sandrun:size=1m"};
  s = BuildSandboxSpec(f.Ctx());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->tmpfs_options.at("/home/sandrun"), "size=1m");
}

}  // namespace
}  // namespace sandrun::policy
