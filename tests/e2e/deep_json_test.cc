// Deeply nested JSON (200,000 arrays, 400 KB) to `sandrun call` and to every JSON route of
// `sandrun serve`: a clear invalid-json refusal, never a crash (old code: a stack overflow in
// the recursive parser killed both), and the server answers afterwards. No Docker needed.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

const std::string kDeepArrays = std::string(200000, '[') + std::string(200000, ']');

std::string DeepEnvCall() {
  std::string call = R"({"tool":"exec","command":"true","env":)";
  for (int i = 0; i < 100000; ++i) call += R"({"a":)";
  call += "1" + std::string(100000, '}') + "}";
  return call;
}

void ExpectDepthRefusal(const ProcessResult& r) {
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  auto doc = Parsed(r.out);
  const auto* error = JsonMember(doc, "error");
  ASSERT_NE(error, nullptr) << r.out;
  EXPECT_EQ(JsonString(*error, "code"), "invalid-json");
  EXPECT_NE(JsonString(*error, "message").find("nested deeper than 64 levels"), std::string::npos)
      << r.out;
}

class DeepJson : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    Config(R"({"sandbox": {"mode": "off"}})");
  }
  void TearDown() override {
    StopServer();
    SandrunHome::TearDown();
  }

  // curl on the server's socket: the body printed, then a line with the HTTP status (000 when
  // the server gave no answer).
  ProcessResult Curl(const std::string& method, const std::string& path,
                     const std::string& body = "") {
    std::vector<std::string> argv = {
        "/usr/bin/curl",         "-sS", "--max-time", "30", "--unix-socket",
        home_ + "/sandrun.sock", "-X",  method,       "-w", "\n%{http_code}"};
    if (!body.empty()) {
      std::string file = home_ + "/body.json";
      std::ofstream(file, std::ios::binary) << body;
      argv.insert(argv.end(),
                  {"-H", "Content-Type: application/json", "--data-binary", "@" + file});
    }
    argv.push_back("http://sandrun" + path);
    return RunProcess(argv);
  }

  static std::string Status(const ProcessResult& r) {
    return r.out.size() >= 3 ? r.out.substr(r.out.size() - 3) : r.out;
  }
};

TEST_F(DeepJson, CallRefusesItClearly) {
  ExpectDepthRefusal(Call(kDeepArrays));
  ExpectDepthRefusal(Call(DeepEnvCall()));
  ExpectDepthRefusal(Sandrun({"call", kDeepArrays.substr(0, 1000) + kDeepArrays.substr(0, 1000)}));
}

TEST_F(DeepJson, EveryServerRouteRefusesItAndTheServerKeepsAnswering) {
  StartServer();
  for (const char* path : {"/v1/tools/exec", "/v1/tools/process", "/v1/tools/apply_patch",
                           "/v1/policy/check", "/v1/approvals/abc"}) {
    for (const std::string& body : {kDeepArrays, DeepEnvCall()}) {
      auto r = Curl("POST", path, body);
      EXPECT_EQ(r.exit_code, 0) << path << ": " << r.err;  // old code: curl (52) empty reply
      EXPECT_EQ(Status(r), "400") << path << ": " << r.out;
      auto health = Curl("GET", "/healthz");
      ASSERT_EQ(Status(health), "200") << "after " << path << ": " << health.out << health.err;
    }
  }
  auto exec = Curl("POST", "/v1/tools/exec", kDeepArrays);
  EXPECT_NE(exec.out.find("nested deeper than 64 levels"), std::string::npos) << exec.out;
  // `sandrun call` goes through the server when one answers.
  ExpectDepthRefusal(Call(kDeepArrays));
}

}  // namespace
}  // namespace sandrun::testing
