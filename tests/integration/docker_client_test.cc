// The Engine API client against the real dockerd: engine, containers, images, typed errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "sandbox/os/file.h"
#include "sandbox/os/spawn.h"
#include "tests/integration/docker_fixture.h"

namespace sandrun::testing {
namespace {

TEST(DockerEngineTest, PingVersionAndNegotiatedApi) {
  SANDRUN_REQUIRE_DOCKER(client);
  auto ping = client->Ping();
  ASSERT_TRUE(ping) << ping.error().ToString();
  EXPECT_FALSE(ping->api_version.empty());
  auto version = client->Version();
  ASSERT_TRUE(version);
  EXPECT_FALSE(version->version.empty());
  auto api = client->ApiVersion();
  ASSERT_TRUE(api);
  EXPECT_GE(docker::CompareApiVersions(*api, "1.41"), 0);
  EXPECT_LE(docker::CompareApiVersions(*api, version->api_version), 0);
}

TEST(DockerEngineTest, UnreachableSocketFailsFastWithAClearError) {
  docker::Endpoint ep;
  ep.socket_path = "/tmp/sandrun-nothing-listens-here.sock";
  auto t = docker::CurlTransport::Create(ep);
  ASSERT_TRUE(t);
  docker::Client client(std::shared_ptr<docker::Transport>(std::move(t).value()));
  auto start = std::chrono::steady_clock::now();
  auto info = client.InspectContainer("anything");
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().code, sandrun::ErrorCode::kDockerUnreachable);
  EXPECT_NE(info.error().ToString().find("cannot reach the Docker engine"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

using DockerContainer = DockerContainerTest;

TEST_F(DockerContainer, CreatedWithTheSecurityOptionsOfTheSpec) {
  auto info = client_->InspectContainer(id_);
  ASSERT_TRUE(info) << info.error().ToString();
  EXPECT_EQ(info->name, name_);
  EXPECT_TRUE(info->state.running);
  EXPECT_EQ(info->labels.at(kTestLabel), "1");
  const auto& h = info->host;
  EXPECT_EQ(h.network_mode, "none");
  EXPECT_TRUE(h.readonly_rootfs);
  EXPECT_EQ(h.cap_drop, std::vector<std::string>{"ALL"});
  ASSERT_EQ(h.security_opt.size(), 2u);
  EXPECT_EQ(h.security_opt[0], "no-new-privileges:true");
  EXPECT_EQ(h.security_opt[1].rfind("seccomp={", 0), 0u) << "the profile is sent inline";
  EXPECT_EQ(h.pids_limit, 512);
  EXPECT_EQ(h.memory, int64_t{1} << 30);
  EXPECT_EQ(h.nano_cpus, 1000000000);
  EXPECT_EQ(h.init, true);
  EXPECT_EQ(h.tmpfs.count("/tmp"), 1u);

  // And the kernel agrees, from inside.
  Output o;
  auto code = client_->RunExec(
      id_,
      Shell("grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; "
            "touch /rootfs-write 2>/dev/null && echo root-writable; "
            "touch /tmp/x && echo tmp-ok; cat /proc/net/dev | tail -n +3 | cut -d: -f1"),
      o.Sink());
  ASSERT_TRUE(code) << code.error().ToString();
  EXPECT_EQ(*code, 0);
  EXPECT_NE(o.out.find("CapEff:\t0000000000000000"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("NoNewPrivs:\t1"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Seccomp:\t2"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("root-writable"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("tmp-ok"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("lo"), std::string::npos);
  EXPECT_EQ(o.out.find("eth0"), std::string::npos) << "only loopback: " << o.out;
}

TEST_F(DockerContainer, ListedByLabelStoppedWaitedAndRemoved) {
  std::string label = std::string(kTestLabel) + "=1";
  auto list = client_->ListContainers({label}, /*all=*/true);
  ASSERT_TRUE(list) << list.error().ToString();
  bool found = std::any_of(list->begin(), list->end(),
                           [&](const docker::ContainerSummary& s) { return s.id == id_; });
  EXPECT_TRUE(found);
  auto none = client_->ListContainers({"sandrun.no-such-label=1"}, true);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());

  ASSERT_TRUE(client_->KillContainer(id_, "SIGKILL"));
  auto status = client_->WaitContainer(id_);
  ASSERT_TRUE(status) << status.error().ToString();
  EXPECT_EQ(*status, 137);
  auto info = client_->InspectContainer(id_);
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->state.running);
  EXPECT_TRUE(client_->StopContainer(id_, 1)) << "stopping a stopped container is fine";
  ASSERT_TRUE(client_->RemoveContainer(id_, false));
  auto gone = client_->InspectContainer(id_);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, sandrun::ErrorCode::kNotFound);
  id_.clear();
}

TEST_F(DockerContainer, EngineErrorsAreTypedWithTheEngineMessage) {
  auto missing = client_->InspectContainer("sandrun-no-such-container-x");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, sandrun::ErrorCode::kNotFound);
  EXPECT_EQ(missing.error().http_status, 404);
  EXPECT_NE(missing.error().message.find("No such container"), std::string::npos)
      << missing.error().message;

  auto no_image = client_->CreateContainer("", SecureSpec("sandrun-no-such-image:nope"));
  ASSERT_FALSE(no_image);
  EXPECT_EQ(no_image.error().code, sandrun::ErrorCode::kNotFound);
  EXPECT_NE(no_image.error().message.find("No such image"), std::string::npos)
      << no_image.error().message;

  auto duplicate = client_->CreateContainer(name_, SecureSpec(kMinimalImage));
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().code, sandrun::ErrorCode::kConflict);
  EXPECT_EQ(duplicate.error().http_status, 409);
  EXPECT_NE(duplicate.error().message.find("already in use"), std::string::npos);

  ASSERT_TRUE(client_->KillContainer(id_, "SIGKILL"));
  ASSERT_TRUE(client_->WaitContainer(id_));
  auto exec_stopped = client_->CreateExec(id_, Shell("true"));
  ASSERT_FALSE(exec_stopped);
  EXPECT_EQ(exec_stopped.error().code, sandrun::ErrorCode::kConflict);
  EXPECT_NE(exec_stopped.error().message.find("is not running"), std::string::npos);

  auto bad_host = SecureSpec(kMinimalImage);
  bad_host.host.security_opt = {"seccomp={not json"};
  // The engine checks the profile when the container starts.
  auto created = client_->CreateContainer("", bad_host);
  ASSERT_TRUE(created) << created.error().ToString();
  auto refused = client_->StartContainer(*created);
  (void)client_->RemoveContainer(*created, true);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("seccomp"), std::string::npos) << refused.error().message;
}

TEST(DockerImageTest, ImportsInspectsListsAndRemovesAnImage) {
  SANDRUN_REQUIRE_DOCKER(client);
  // A one-file rootfs made here: a tar with a marker file.
  std::string dir = "/tmp/sandrun-import-" + std::to_string(getpid());
  std::filesystem::create_directories(dir + "/root/etc");
  std::ofstream(dir + "/root/etc/marker") << "imported\n";
  ASSERT_EQ(*RunToCompletion({"tar", "-C", dir + "/root", "-cf", dir + "/rootfs.tar", "."}), 0);
  auto tar = ReadFile(dir + "/rootfs.tar");
  ASSERT_TRUE(tar);

  std::string tag = "import-" + std::to_string(getpid());
  docker::ImportRequest req;
  req.repo = "sandrun-test";
  req.tag = tag;
  req.changes = {"LABEL sandrun.test=1", "ENV MARKER=yes", "CMD [\"/bin/true\"]"};
  size_t offset = 0;
  req.body_reader = [&](char* buf, size_t cap) -> Result<size_t> {
    size_t n = std::min(cap, tar->size() - offset);
    std::copy_n(tar->data() + offset, n, buf);
    offset += n;
    return n;
  };
  req.body_size = static_cast<int64_t>(tar->size());
  int progress = 0;
  req.on_progress = [&](const docker::ProgressMessage&) { ++progress; };
  auto id = client->ImportImage(req);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(id) << id.error().ToString();
  EXPECT_EQ(id->rfind("sha256:", 0), 0u);
  EXPECT_GT(progress, 0);

  std::string ref = "sandrun-test:" + tag;
  auto info = client->InspectImage(ref);
  ASSERT_TRUE(info) << info.error().ToString();
  EXPECT_EQ(info->id, *id);
  EXPECT_EQ(info->labels.at("sandrun.test"), "1");
  auto list = client->ListImages();
  ASSERT_TRUE(list);
  EXPECT_TRUE(std::any_of(list->begin(), list->end(),
                          [&](const docker::ImageInfo& i) { return i.id == *id; }));
  ASSERT_TRUE(client->RemoveImage(ref, true));
  auto gone = client->InspectImage(ref);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, sandrun::ErrorCode::kNotFound);
}

TEST(DockerImageTest, ImportOfGarbageFailsWithTheEngineReason) {
  SANDRUN_REQUIRE_DOCKER(client);
  std::string garbage = "this is not a tar archive";
  docker::ImportRequest req;
  req.repo = "sandrun-test";
  req.tag = "garbage";
  bool sent = false;
  req.body_reader = [&](char* buf, size_t cap) -> Result<size_t> {
    if (sent) return size_t{0};
    sent = true;
    size_t n = std::min(cap, garbage.size());
    std::copy_n(garbage.data(), n, buf);
    return n;
  };
  auto id = client->ImportImage(req);
  if (id) (void)client->RemoveImage(*id, true);  // some engines accept any bytes as a layer
  ASSERT_FALSE(id) << "imported " << *id;
  EXPECT_FALSE(id.error().message.empty());
}

TEST(DockerImageTest, SandboxImageProfileResetsPath) {
  SANDRUN_REQUIRE_DOCKER(client);
  auto spec = SecureSpec(kMinimalImage);
  spec.env = {"PATH=/injected/bin:/usr/bin:/bin"};
  auto id = client->CreateContainer("", spec);
  ASSERT_TRUE(id) << id.error().ToString();
  ASSERT_TRUE(client->StartContainer(*id));
  Output o;
  auto code =
      client->RunExec(*id, Shell("echo \"$PATH\"; . /etc/profile; echo \"$PATH\""), o.Sink());
  (void)client->RemoveContainer(*id, true);
  ASSERT_TRUE(code);
  EXPECT_EQ(o.out,
            "/injected/bin:/usr/bin:/bin\n"
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n");
}

}  // namespace
}  // namespace sandrun::testing
