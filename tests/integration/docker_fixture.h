// A started container from sandrun-sandbox:minimal with SPEC §4's security options, shared by
// the tests of one suite and removed afterwards.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "tests/support/docker_env.h"

namespace sandrun::testing {

class DockerContainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SANDRUN_REQUIRE_DOCKER(c);
    client_ = std::move(c);
    name_ = "sandrun-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& ch : name_) {
      if (!isalnum(static_cast<unsigned char>(ch)) && ch != '-') ch = '-';
    }
    auto id = client_->CreateContainer(name_, SecureSpec(kMinimalImage));
    ASSERT_TRUE(id) << id.error().ToString();
    id_ = *id;
    auto started = client_->StartContainer(id_);
    ASSERT_TRUE(started) << started.error().ToString();
  }
  void TearDown() override {
    if (client_ && !id_.empty()) {
      auto removed = client_->RemoveContainer(id_, /*force=*/true);
      EXPECT_TRUE(removed) << removed.error().ToString();
    }
  }

  std::unique_ptr<docker::Client> client_;
  std::string name_;
  std::string id_;
};

// Collects exec output per stream and in arrival order.
struct Output {
  std::string out, err;
  std::string sequence;  // "o" / "e" per piece, in order

  docker::OutputSink Sink() {
    return [this](docker::StreamKind kind, std::string_view bytes) {
      if (kind == docker::StreamKind::kStderr) {
        err.append(bytes);
        sequence += 'e';
      } else {
        out.append(bytes);
        sequence += 'o';
      }
    };
  }
};

inline docker::ExecSpec Shell(const std::string& script) {
  docker::ExecSpec spec;
  spec.cmd = {"/bin/sh", "-c", script};
  return spec;
}

}  // namespace sandrun::testing
