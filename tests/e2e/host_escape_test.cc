// Issue "close the escapes", host side, through the binary as a user runs it: a gateway or
// elevated command must not become host root, reach the engine or the runner's server, or change
// what later commands run under (config, approvals, compiled filters, profiles). Each probe opens
// its target for writing without writing a byte (`: >> FILE`), so on a machine where the probe
// succeeds (the code before this change, a root command) nothing is damaged either.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGatewayConfig = R"({"sandbox": {"mode": "off"}})";
constexpr const char* kElevatedConfig =
    R"({"tools": {"elevated": {"enabled": true, "allowFrom": {"cli": ["*"]}}},
        "sandbox": {"docker": {"image": "sandrun-sandbox:minimal"}}})";

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A shell script that prints "<name>:open" for every target it could open for writing and
// "<name>:refused" otherwise, and tries the engine's socket with python.
std::string WriteProbes(const std::vector<std::pair<std::string, std::string>>& targets) {
  std::string script;
  for (const auto& [name, path] : targets) {
    script += "if (: >> '" + path + "') 2>/dev/null; then echo " + name + ":open; else echo " +
              name + ":refused; fi; ";
  }
  return script;
}

std::string ConnectProbe(const std::string& name, const std::string& socket) {
  return "if python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); "
         "s.connect(sys.argv[1])'"
         " '" +
         socket + "' 2>/dev/null; then echo " + name + ":open; else echo " + name +
         ":refused; fi; ";
}

class HostEscape : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    // Files an attacker would rewrite, present as a real deployment has them.
    fs::create_directories(home_ + "/cache");
    std::ofstream(home_ + "/cache/seccomp-host-0.bpf") << "x";
    std::ofstream(home_ + "/exec-approvals.json") << R"({"version": 1})";
    fs::permissions(home_ + "/exec-approvals.json", fs::perms::owner_read | fs::perms::owner_write);
  }

  std::vector<std::pair<std::string, std::string>> Targets() const {
    return {{"passwd", "/etc/passwd"},
            {"core_pattern", "/proc/sys/kernel/core_pattern"},
            {"config", home_ + "/config.json"},
            {"cache", home_ + "/cache/seccomp-host-0.bpf"},
            {"approvals", home_ + "/exec-approvals.json"},
            {"profiles", std::string(SANDRUN_TEST_PROFILES_DIR) + "/host/default.json"}};
  }

  // Runs every probe through `flags` and expects each to be refused.
  void ExpectAllRefused(const std::vector<std::string>& flags) {
    const std::string before = Slurp(home_ + "/config.json");
    auto r = Exec(flags, "id -u; id -G; " + WriteProbes(Targets()) +
                             ConnectProbe("docker_sock", "/var/run/docker.sock") +
                             "echo home=$SANDRUN_HOME; ls -A " + home_ + " 2>/dev/null | wc -l");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    if (::geteuid() == 0) {
      // A root runner's command is nobody, without the runner's supplementary groups.
      EXPECT_EQ(r.out.substr(0, r.out.find("\n", r.out.find("\n") + 1) + 1), "65534\n65534\n")
          << r.out;
    }
    for (const auto& [name, path] : Targets()) {
      EXPECT_NE(r.out.find(name + ":refused"), std::string::npos) << name << "\n" << r.out;
    }
    EXPECT_NE(r.out.find("docker_sock:refused"), std::string::npos) << r.out;
    // The state dir is hidden: no entry of it is listed, and SANDRUN_HOME is not inherited.
    EXPECT_NE(r.out.find("home=\n0\n"), std::string::npos) << r.out;
    EXPECT_EQ(Slurp(home_ + "/config.json"), before);
  }
};

TEST_F(HostEscape, GatewayCommandCannotWriteHostOrRunnerState) {
  Config(kGatewayConfig);
  ExpectAllRefused({});
}

TEST_F(HostEscape, ElevatedCommandCannotWriteHostOrRunnerState) {
  Config(kElevatedConfig);
  ExpectAllRefused({"--elevated"});
}

TEST_F(HostEscape, SandboxedCommandSeesNoneOfTheHostsState) {
  SANDRUN_REQUIRE_DOCKER(client);
  Config(kElevatedConfig);
  auto r = Exec({}, WriteProbes(Targets()) + "ls /var/run/docker.sock " + home_ +
                        " >/dev/null 2>&1 && echo visible || echo absent");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& [name, path] : Targets()) {
    EXPECT_NE(r.out.find(name + ":refused"), std::string::npos) << name << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("absent"), std::string::npos) << r.out;
}

// The privileged profile keeps root on purpose, but the engine and the runner stay hidden and
// the kernel's settings read-only.
TEST_F(HostEscape, PrivilegedProfileKeepsRootButStaysConfined) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs a root runner";
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"hostProfile": "privileged"}}})");
  auto r = Exec({}, "id -u; " +
                        WriteProbes({{"core_pattern", "/proc/sys/kernel/core_pattern"},
                                     {"config", home_ + "/config.json"}}) +
                        ConnectProbe("docker_sock", "/var/run/docker.sock"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 2), "0\n") << r.out;
  EXPECT_NE(r.out.find("core_pattern:refused"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("config:refused"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("docker_sock:refused"), std::string::npos) << r.out;
}

TEST_F(HostEscape, HostUserIsConfigurableButNeverRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs a root runner";
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"hostUser": "4242:4343"}}})");
  auto r = Exec({}, "id -u; id -g");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "4242\n4343\n");

  const std::string marker = marks_ + "/must-not-exist";
  for (const char* user : {"root", "0", "0:0", "no-such-user-here", "12:x", "1:"}) {
    Config(std::string(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"hostUser": ")") + user +
           "\"}}}");
    auto refused = Exec({}, "touch " + marker);
    EXPECT_EQ(refused.exit_code, 121) << user << ": " << refused.err;
    EXPECT_NE(refused.err.find("tools.exec.hostUser"), std::string::npos) << refused.err;
    EXPECT_FALSE(fs::exists(marker)) << user;
  }
}

// A gateway command and a sandbox may both run as 65534 (nobody is the default host user, and
// 65534 the default sandbox user): the command's own user namespace keeps it from reaching the
// sandbox's processes through /proc (their files, memory, environment).
TEST_F(HostEscape, GatewayCommandCannotReachASandboxOfTheSameUid) {
  SANDRUN_REQUIRE_DOCKER(client);
  MinimalSandboxConfig();
  auto made = Exec({}, "echo secret-of-the-sandbox > /workspace/s.txt; id -u");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto list = client->ListContainers({"sandrun.instance=" + InstanceId()}, false);
  ASSERT_TRUE(list && list->size() == 1) << (list ? list->size() : 0);
  auto info = client->InspectContainer((*list)[0].id);
  ASSERT_TRUE(info && info->state.pid > 0);
  const std::string proc = "/proc/" + std::to_string(info->state.pid);
  struct stat st {};
  ASSERT_EQ(::stat(proc.c_str(), &st), 0);
  Config(R"({"sandbox": {"mode": "off"}})");
  auto r =
      Exec({}, "id -u; stat -c %u " + proc + "; cat " + proc + "/root/workspace/s.txt 2>&1; cat " +
                   proc + "/environ >/dev/null 2>&1 && echo environ:open || echo environ:refused");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (::geteuid() == 0 && st.st_uid == 65534) {
    EXPECT_EQ(r.out.substr(0, 12), "65534\n65534\n") << "same uid on both sides: " << r.out;
  }
  EXPECT_EQ(r.out.find("secret-of-the-sandbox"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("environ:refused"), std::string::npos) << r.out;
}

// The runner's own server: a command never sees its socket, whoever runs the server.
TEST_F(HostEscape, GatewayCommandThroughTheServerCannotReachItsSocket) {
  Config(kGatewayConfig);
  StartServer();
  auto r =
      Exec({}, ConnectProbe("server_sock", home_ + "/sandrun.sock") + "echo home=$SANDRUN_HOME");
  StopServer();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("server_sock:refused"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("home=\n"), std::string::npos) << r.out;
}

TEST_F(HostEscape, SecretsAreNotInheritedUnlessPassedThrough) {
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"envPassthrough": ["MY_CI_TOKEN"]}}})");
  auto r = Exec({}, "env",
                {{"GITHUB_TOKEN", "gh-secret"},
                 {"OPENAI_API_KEY", "sk-secret"},
                 {"AWS_SECRET_ACCESS_KEY", "aws-secret"},
                 {"DATABASE_URL", "postgres://u:p@h/db"},
                 {"NPM_TOKEN", "npm-secret"},
                 {"DOCKER_HOST", "unix:///var/run/docker.sock"},
                 {"MY_CI_TOKEN", "kept-on-purpose"},
                 {"GITHUB_SHA", "abc123"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* secret : {"gh-secret", "sk-secret", "aws-secret", "postgres://", "npm-secret",
                             "DOCKER_HOST=", "SANDRUN_HOME="}) {
    EXPECT_EQ(r.out.find(secret), std::string::npos) << secret << " leaked:\n" << r.out;
  }
  EXPECT_NE(r.out.find("MY_CI_TOKEN=kept-on-purpose"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GITHUB_SHA=abc123"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SANDRUN_SHELL=exec"), std::string::npos) << r.out;
}

// Files that decide what runs must be writable only by the runner or root.
TEST_F(HostEscape, ConfigApprovalsAndProfilesWritableByOthersAreRefused) {
  Config(kGatewayConfig);
  const std::string marker = marks_ + "/must-not-exist";
  auto expect_refused = [&](const std::string& what, const std::string& path,
                            std::map<std::string, std::string> env = {}) {
    auto r = Exec({}, "touch " + marker, std::move(env));
    EXPECT_TRUE(r.exit_code == 125 || r.exit_code == 121)
        << r.exit_code << " " << what << ": " << r.err;
    EXPECT_NE(r.err.find("chmod go-w " + path), std::string::npos) << what << ": " << r.err;
    EXPECT_FALSE(fs::exists(marker)) << what;
  };
  ::chmod((home_ + "/config.json").c_str(), 0666);
  expect_refused("config", home_ + "/config.json");
  ::chmod((home_ + "/config.json").c_str(), 0600);

  ::chmod((home_ + "/exec-approvals.json").c_str(), 0620);
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"security": "allowlist"}}})");
  expect_refused("approvals", home_ + "/exec-approvals.json");
  ::chmod((home_ + "/exec-approvals.json").c_str(), 0600);
  Config(kGatewayConfig);

  const std::string profiles = home_ + "-marks/profiles";
  fs::copy(SANDRUN_TEST_PROFILES_DIR, profiles, fs::copy_options::recursive);
  ::chmod(profiles.c_str(), 0755);
  ::chmod((profiles + "/host/default.json").c_str(), 0646);
  expect_refused("profile", profiles + "/host/default.json", {{"SANDRUN_PROFILES_DIR", profiles}});
  // Control: the same copy with sane modes runs.
  ::chmod((profiles + "/host/default.json").c_str(), 0644);
  auto ok = Exec({}, "echo ran", {{"SANDRUN_PROFILES_DIR", profiles}});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "ran\n");
}

// A non-root runner: its commands share its uid, so only the namespaces keep them from its
// state. The runner here is nobody with a state dir of its own.
class NonRootRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
    char templ[] = "/tmp/sandrun-e2e-nonroot-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    root_ = templ;
    ::chmod(root_.c_str(), 0755);
    home_ = root_ + "/home";
    fs::create_directories(home_ + "/cache");
    std::tie(binary_, profiles_) = PublicCopyOfSandrun(root_);
    std::ofstream(home_ + "/config.json") << kGatewayConfig;
    std::ofstream(home_ + "/exec-approvals.json") << R"({"version": 1})";
    std::ofstream(home_ + "/cache/seccomp-host-0.bpf") << "x";
    for (const auto& e : fs::recursive_directory_iterator(root_)) {
      ASSERT_EQ(::lchown(e.path().c_str(), 65534, 65534), 0) << e.path();
    }
    ::chmod(home_.c_str(), 0700);
    ::chmod((home_ + "/exec-approvals.json").c_str(), 0600);
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }
  ProcessResult RunAsNobody(const std::string& command) {
    return RunProcess({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                       binary_, "exec", "--", command},
                      {{"SANDRUN_HOME", home_},
                       {"HOME", root_},
                       {"SANDRUN_PROFILES_DIR", profiles_},
                       {"PATH", PublicPath()}});
  }
  std::string root_, home_, profiles_, binary_;
};

TEST_F(NonRootRunner, CommandsCannotChangeTheRunnersStateOrProfiles) {
  const std::vector<std::pair<std::string, std::string>> targets = {
      {"config", home_ + "/config.json"},
      {"cache", home_ + "/cache/seccomp-host-0.bpf"},
      {"approvals", home_ + "/exec-approvals.json"},
      {"profiles", profiles_ + "/host/default.json"},
      {"profiles_dir", profiles_ + "/host/new.json"}};
  // A listening socket where the server's would be: same uid, so only the mask stops connect().
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock = home_ + "/tenant.sock";  // not sandrun.sock: the CLI would use it
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  ASSERT_EQ(::chown(sock.c_str(), 65534, 65534), 0);

  auto r =
      RunAsNobody("id -u; " + WriteProbes(targets) + ConnectProbe("server_sock", sock) + "touch " +
                  profiles_ + "/host/x 2>/dev/null && echo profiles_new:open; true");
  ::close(listener);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 6), "65534\n") << r.out;
  for (const auto& [name, path] : targets) {
    EXPECT_NE(r.out.find(name + ":refused"), std::string::npos) << name << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("server_sock:refused"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("profiles_new:open"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(profiles_ + "/host/x"));
  EXPECT_EQ(Slurp(home_ + "/config.json"), kGatewayConfig);
}

}  // namespace
}  // namespace sandrun::testing
