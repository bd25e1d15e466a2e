// A multi-tenant `sandrun serve` for e2e tests: the real binary with a TLS listener on 127.0.0.1
// (a self-signed certificate made with openssl), tokens made with `sandrun token create`, and
// requests and event streams made with curl.
//
// Pattern of use:
//   class MyTest : public TenantServer {};
//   TEST_F(MyTest, X) {
//     Tenants(R"("acme": {}, "globex": {})");
//     std::string t = Token("acme", "agent");
//     StartTls();
//     HttpResult r = Post("/v1/tools/exec", t, R"({"tool":"exec","command":"echo hi"})");
//   }
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/e2e/sandrun_home.h"

extern char** environ;

namespace sandrun::testing {

struct HttpResult {
  int status = 0;
  std::string headers;  // the response's header block, as received
  std::string body;
  rapidjson::Document json() const {
    auto doc = ParseJson(body);
    return doc ? std::move(doc).value() : rapidjson::Document();
  }
  std::string error_code() const {
    auto doc = json();
    const auto* e = doc.IsObject() ? JsonMember(doc, "error") : nullptr;
    return e != nullptr ? JsonString(*e, "code") : "";
  }
  bool HasHeader(const std::string& line) const { return headers.find(line) != std::string::npos; }
};

inline std::string ReadWhole(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `name` found on PATH (RunProcess execs a path, not a name).
inline std::string Program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = dir + "/" + name;
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "/usr/bin/" + name;
}

// A child process with stdout to a file (an event stream held open by curl -N).
class Streaming {
 public:
  Streaming(const std::vector<std::string>& argv, const std::string& out_path) : out_(out_path) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Streaming() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  Streaming(const Streaming&) = delete;
  Streaming& operator=(const Streaming&) = delete;

  std::string Output() const { return ReadWhole(out_); }
  // Waits up to `timeout` for the output to contain `needle`.
  bool WaitFor(const std::string& needle, std::chrono::milliseconds timeout) const {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Output().find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

 private:
  std::string out_;
  pid_t pid_ = -1;
};

class TenantServer : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    SANDRUN_REQUIRE_DOCKER(client);
    std::tie(cert_, key_) = SelfSignedCert();
  }
  void TearDown() override {
    StopServer();
    SandrunHome::TearDown();
  }

  // config.json: the small sandbox image for every call, and `tenants` (members of "tenants").
  void Tenants(const std::string& tenants, const std::string& top_extra = "") {
    Config(R"({"sandbox": {"mode": "all", "docker": {"image": "sandrun-sandbox:minimal"}},)"
           R"( "tools": {"exec": {"loginShellPath": false}},)" +
           (top_extra.empty() ? "" : top_extra + ",") + R"( "tenants": {)" + tenants + "}}");
  }

  // `sandrun token create`: the secret (alone on stdout).
  std::string Token(const std::string& tenant, const std::string& role,
                    const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"token", "create", "--tenant", tenant, "--role", role};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = Sandrun(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string secret = r.out;
    while (!secret.empty() && secret.back() == '\n') secret.pop_back();
    return secret;
  }

  // Starts `serve --listen 127.0.0.1:0` with TLS (and `extra` flags); waits for its listening
  // line and reads the port from it.
  void StartTls(const std::vector<std::string>& extra = {}) {
    log_ = home_ + "/serve.log";
    std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--tls-cert",
                                     cert_,      "--tls-key",   key_};
    args.insert(args.end(), extra.begin(), extra.end());
    LaunchServe(args, log_);
    static const std::regex kListening(R"(listening on https://127\.0\.0\.1:(\d+))");
    for (int i = 0; i < 400; ++i) {
      std::smatch m;
      std::string log = ReadWhole(log_);
      if (std::regex_search(log, m, kListening)) {
        port_ = std::stoi(m[1]);
        return;
      }
      int status = 0;
      if (waitpid(server_pid_, &status, WNOHANG) == server_pid_) {
        server_pid_ = -1;
        FAIL() << "the server exited: " << log;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    FAIL() << "the server did not listen: " << ReadWhole(log_);
  }

  // Starts `serve` on its unix socket only (with `extra` flags, e.g. --require-tokens); requests
  // go to the socket from then on.
  void StartUnix(const std::vector<std::string>& extra = {}) {
    log_ = home_ + "/serve.log";
    unix_ = true;
    LaunchServe(extra, log_);
    for (int i = 0; i < 400; ++i) {
      if (ReadWhole(log_).find("serving on") != std::string::npos) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    FAIL() << "the server did not come up: " << ReadWhole(log_);
  }

  std::string Url(const std::string& path) const {
    return unix_ ? "http://sandrun" + path : "https://127.0.0.1:" + std::to_string(port_) + path;
  }
  // curl's transport options: the socket, or TLS with the test's certificate as the only CA.
  std::vector<std::string> Transport() const {
    if (unix_) return {"--unix-socket", home_ + "/sandrun.sock"};
    return {"--cacert", cert_};
  }

  // One request with curl over TLS (the test's certificate as the only CA). `token` "" sends no
  // Authorization header; `headers` are "Name: value" lines.
  HttpResult Request(const std::string& method, const std::string& path, const std::string& token,
                     const std::string& body = "", const std::vector<std::string>& headers = {}) {
    const std::string head_file = home_ + "/curl-head";
    std::vector<std::string> argv = {
        Program("curl"),      "-sS", "-X",          method, "-D", head_file, "-o",
        home_ + "/curl-body", "-w",  "%{http_code}"};
    for (const auto& t : Transport()) argv.push_back(t);
    if (!token.empty()) {
      argv.push_back("-H");
      argv.push_back("Authorization: Bearer " + token);
    }
    for (const auto& h : headers) {
      argv.push_back("-H");
      argv.push_back(h);
    }
    if (method == "POST" || method == "PATCH") {
      argv.insert(argv.end(), {"-H", "Content-Type: application/json", "--data-binary", "@-"});
    }
    argv.push_back(Url(path));
    auto r = RunProcess(argv, {}, body);
    HttpResult out;
    out.status = std::atoi(r.out.c_str());
    out.headers = ReadWhole(head_file);
    out.body = ReadWhole(home_ + "/curl-body");
    return out;
  }
  HttpResult Post(const std::string& path, const std::string& token, const std::string& body,
                  const std::vector<std::string>& headers = {}) {
    return Request("POST", path, token, body, headers);
  }
  HttpResult Get(const std::string& path, const std::string& token,
                 const std::vector<std::string>& headers = {}) {
    return Request("GET", path, token, "", headers);
  }

  // An event stream held open by curl -N, its output in a file of the home.
  std::unique_ptr<Streaming> Events(const std::string& token,
                                    const std::vector<std::string>& headers = {}) {
    std::vector<std::string> argv = {Program("curl"), "-sSN", "-H",
                                     "Authorization: Bearer " + token};
    for (const auto& t : Transport()) argv.push_back(t);
    for (const auto& h : headers) {
      argv.push_back("-H");
      argv.push_back(h);
    }
    argv.push_back(Url("/v1/events"));
    auto s = std::make_unique<Streaming>(argv, home_ + "/events-" + std::to_string(++streams_));
    EXPECT_TRUE(s->WaitFor("event: ready", std::chrono::seconds(10))) << s->Output();
    return s;
  }

  // The server reloads on SIGHUP: waits for its line in the log.
  void Reload() {
    size_t before = Count(ReadWhole(log_), "SIGHUP");
    ::kill(server_pid_, SIGHUP);
    for (int i = 0; i < 400 && Count(ReadWhole(log_), "SIGHUP") == before; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_GT(Count(ReadWhole(log_), "SIGHUP"), before) << ReadWhole(log_);
  }

  static size_t Count(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
      ++n;
    return n;
  }

  std::string cert_, key_, log_;
  int port_ = 0;
  bool unix_ = false;
  int streams_ = 0;
};

}  // namespace sandrun::testing
