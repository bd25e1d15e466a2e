// The sandbox agent's fast path through the library (DockerExecutor::Run, agent_exec.h), for
// tests/bench/agent_latency.py.
//
//   agent_bench --state-dir DIR up IMAGE        -> the warm container of scope bench:serial
//   agent_bench [--state-dir DIR] serial IMAGE N      -> N sequential execs of `true`
//   agent_bench [--state-dir DIR] concurrent IMAGE N  -> N concurrent commands in one container
//   agent_bench --state-dir DIR down            -> removes every container of DIR's instance
// Results are one JSON object on stdout (milliseconds).
//
// The containers are the executor's own (the exec wrapper and the agent bound in, SPEC §4's
// options and the default seccomp profile, the sandbox user 65534:65534, as `sandrun` makes them
// for a root runner with the default config), labelled with a random instance id kept in
// DIR/instance-id. DIR (mode 0700) is the executor's state dir: the registry and the agents'
// directories. Without --state-dir, a temporary one is made and, with the containers, removed
// when the subcommand ends; with it, containers are kept for the next call until `down`.
// The agent needs a root runner (agent_link.h); as another user the runs take the Engine API
// exec path and the output says "agent": false.
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/base/json.h"
#include "sandbox/docker/client.h"
#include "sandbox/executors/docker/container_pool.h"
#include "sandbox/executors/docker/docker_executor.h"
#include "sandbox/executors/docker/exec_wrapper.h"
#include "tests/bench/bench_clock.h"

namespace {

using sandrun::bench::Clock;
using sandrun::exec::DockerExecutor;
using sandrun::exec::ExecOutcome;
using sandrun::exec::Plan;
using sandrun::exec::SandboxSpec;

constexpr char kUser[] = "65534:65534";

using sandrun::bench::CpuMs;
using sandrun::bench::Ms;
using sandrun::bench::Percentile;

int Fail(const std::string& what) {
  std::fprintf(stderr, "agent_bench: %s\n", what.c_str());
  return 1;
}
int Fail(const sandrun::Error& e) { return Fail(e.ToString()); }

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The default profile, compacted as the gate hands it to the executor.
std::string SeccompJson() {
  std::string text = ReadText(std::string(SANDRUN_SOURCE_DIR) + "/profiles/seccomp/default.json");
  auto doc = sandrun::ParseJson(text);
  return doc ? sandrun::ToJson(*doc) : "";
}

// DIR/instance-id, made on first use: 8 random hex digits (the container names' prefix) and
// the pid of the process that made it.
std::string InstanceId(const std::string& state_dir) {
  const std::string path = state_dir + "/instance-id";
  std::string id = ReadText(path);
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  if (!id.empty()) return id;
  std::random_device rd;
  char head[16];
  std::snprintf(head, sizeof(head), "%08x", static_cast<unsigned>(rd()));
  id = std::string(head) + "-agentbench-" + std::to_string(::getpid());
  std::ofstream(path) << id << "\n";
  return id;
}

// What BuildSandboxSpec makes of the default config for a root runner (workspaceAccess none
// without the scratch mount: the commands here touch no workspace).
SandboxSpec Spec(const std::string& image, const std::string& state_dir, const std::string& scope,
                 int64_t pids_limit) {
  SandboxSpec spec;
  spec.instance_id = InstanceId(state_dir);
  spec.scope_key = scope;
  spec.image = image;
  spec.workdir = "/tmp";
  spec.tmpfs = {"/tmp", "/var/tmp", "/run", "/home/sandrun"};
  spec.tmpfs_options = {{"/tmp", "rw,exec,nosuid,nodev,size=256m,mode=1777"},
                        {"/var/tmp", "rw,exec,nosuid,nodev,size=64m,mode=1777"},
                        {"/run", "rw,noexec,nosuid,nodev,size=16m,mode=1777"},
                        {"/home/sandrun",
                         "rw,exec,nosuid,nodev,size=256m,mode=0700,uid=65534,"
                         "gid=65534"}};
  spec.cap_drop = {"ALL"};
  spec.seccomp_profile_name = "default";
  spec.seccomp_profile_json = SeccompJson();
  spec.container_env = {{"LANG", "C.UTF-8"}};
  spec.user = kUser;
  spec.pids_limit = pids_limit;
  spec.memory_bytes = int64_t{1} << 30;
  spec.memory_swap_bytes = spec.memory_bytes;
  spec.nano_cpus = 1000000000;
  spec.state_dir = state_dir;
  spec.exec_agent = true;
  return spec;
}

Plan PlanFor(const SandboxSpec& spec, const std::string& command) {
  Plan plan;
  plan.target = sandrun::exec::Target::kSandbox;
  plan.command = command;
  plan.env = {{"HOME", "/home/sandrun"}};
  plan.sandbox = spec;
  plan.cwd = "/tmp";
  plan.timeout_ms = 120000;
  plan.kill_grace_ms = 1000;
  return plan;
}

bool Fallback(const ExecOutcome& o) {
  for (const auto& w : o.warnings) {  // AgentFallbackWarning (docker_executor.cc)
    if (w.find("sandbox agent of") != std::string::npos) return true;
  }
  return false;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

int RemoveInstance(sandrun::docker::Client& client, const std::string& state_dir, int* removed) {
  auto list = client.ListContainers(
      {std::string(sandrun::exec::kInstanceLabel) + "=" + InstanceId(state_dir)}, true);
  if (!list) return Fail(list.error());
  int failed = 0;
  for (const auto& c : *list) {
    if (client.RemoveContainer(c.id, true)) {
      ++*removed;
    } else {
      ++failed;
    }
  }
  return failed == 0 ? 0 : Fail(std::to_string(failed) + " containers were not removed");
}

int Up(DockerExecutor& executor, const SandboxSpec& spec) {
  std::vector<std::string> warnings;
  auto c = executor.EnsureContainer(spec, &warnings);
  if (!c) return Fail(c.error());
  std::printf(
      "{\"container\":%s,\"name\":%s,\"user\":%s,\"instance\":%s,\"agent\":%s,"
      "\"agent_reason\":%s}\n",
      JsonString(c->id).c_str(), JsonString(c->name).c_str(), JsonString(spec.user).c_str(),
      JsonString(spec.instance_id).c_str(), c->agent_dir.empty() ? "false" : "true",
      JsonString(executor.pool().AgentReason(spec)).c_str());
  return 0;
}

int Serial(DockerExecutor& executor, const SandboxSpec& spec, int n) {
  std::vector<std::string> warnings;
  auto c = executor.EnsureContainer(spec, &warnings);
  if (!c) return Fail(c.error());
  Plan plan = PlanFor(spec, "true");
  for (int i = 0; i < 3; ++i) {  // warm-up: the container, the agent, the client's connection
    auto o = executor.Run(plan, nullptr, nullptr);
    if (!o) return Fail(o.error());
  }
  std::vector<double> total;
  int failed = 0, fallbacks = 0;
  double cpu_before = CpuMs();
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    auto o = executor.Run(plan, nullptr, nullptr);
    total.push_back(Ms(Clock::now() - t0));
    if (!o) return Fail(o.error());
    if (o->status != ExecOutcome::Status::kExited || o->exit_code != 0) ++failed;
    if (Fallback(*o)) ++fallbacks;
  }
  double cpu_per_exec = (CpuMs() - cpu_before) / n;
  std::printf(
      "{\"runs\":%d,\"median_ms\":%.3f,\"p90_ms\":%.3f,\"min_ms\":%.3f,"
      "\"runner_cpu_ms_per_exec\":%.3f,\"failed\":%d,\"fallbacks\":%d,\"agent\":%s,"
      "\"container\":%s}\n",
      n, Percentile(total, 0.5), Percentile(total, 0.9), Percentile(total, 0.0), cpu_per_exec,
      failed, fallbacks, c->agent_dir.empty() ? "false" : "true", JsonString(c->id).c_str());
  return failed == 0 ? 0 : 1;
}

std::string Script(int i) {
  const std::string tag = std::to_string(i);
  return "echo " + tag + "-start; sleep 0.2; echo " + tag + "-end";
}
std::string Expected(int i) {
  const std::string tag = std::to_string(i);
  return tag + "-start\n" + tag + "-end\n";
}

// Runs `one(i)` for i in [0, n) on n threads at once; the wall time from the first start.
template <typename Fn>
double AllAtOnce(int n, Fn one) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  std::atomic<bool> go{false};
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      one(i);
    });
  }
  auto t0 = Clock::now();
  go = true;
  for (auto& t : threads) t.join();
  return Ms(Clock::now() - t0);
}

// n commands at once through the executor (the agent), then the same n through Engine API
// execs of the client (the baseline), in one container whose pids limit fits them all.
int Concurrent(const std::shared_ptr<sandrun::docker::Client>& client, DockerExecutor& executor,
               const SandboxSpec& spec, int n) {
  std::vector<std::string> warnings;
  auto c = executor.EnsureContainer(spec, &warnings);
  if (!c) return Fail(c.error());
  if (auto warm = executor.Run(PlanFor(spec, "true"), nullptr, nullptr); !warm) {
    return Fail(warm.error());
  }

  const auto count = static_cast<size_t>(n);
  std::vector<int> mixed(count, 0), failed(count, 0), fallback(count, 0);
  std::vector<std::string> errors(count);
  double wall = AllAtOnce(n, [&](int i) {
    const auto k = static_cast<size_t>(i);
    auto o = executor.Run(PlanFor(spec, Script(i)), nullptr, nullptr);
    if (!o) {
      failed[k] = 1;
      errors[k] = o.error().ToString();
      return;
    }
    if (o->status != ExecOutcome::Status::kExited || o->exit_code != 0) failed[k] = 1;
    if (o->aggregated != Expected(i)) mixed[k] = 1;
    if (Fallback(*o)) fallback[k] = 1;
  });

  std::vector<int> e_mixed(count, 0), e_failed(count, 0);
  double engine_wall = AllAtOnce(n, [&](int i) {
    const auto k = static_cast<size_t>(i);
    sandrun::docker::ExecSpec exec;
    exec.cmd = {"/bin/sh", "-lc", Script(i)};
    exec.user = spec.user;
    exec.working_dir = "/tmp";
    std::string out;
    auto code = client->RunExec(
        c->id, exec, [&out](sandrun::docker::StreamKind, std::string_view b) { out.append(b); });
    if (!code || *code != 0) e_failed[k] = 1;
    if (out != Expected(i)) e_mixed[k] = 1;
  });

  auto sum = [](const std::vector<int>& v) {
    int s = 0;
    for (int x : v) s += x;
    return s;
  };
  int lost_or_mixed = 0;
  for (size_t k = 0; k < count; ++k) lost_or_mixed += (mixed[k] || failed[k]) ? 1 : 0;
  int e_lost_or_mixed = 0;
  for (size_t k = 0; k < count; ++k) e_lost_or_mixed += (e_mixed[k] || e_failed[k]) ? 1 : 0;
  std::string first_error;
  for (const auto& e : errors) {
    if (!e.empty()) {
      first_error = e;
      break;
    }
  }
  std::printf(
      "{\"commands\":%d,\"wall_ms\":%.3f,\"lost_or_mixed\":%d,\"failed\":%d,\"fallbacks\":%d,"
      "\"engine_wall_ms\":%.3f,\"engine_lost_or_mixed\":%d,\"pids_limit\":%lld,\"agent\":%s,"
      "\"container\":%s,\"first_error\":%s}\n",
      n, wall, lost_or_mixed, sum(failed), sum(fallback), engine_wall, e_lost_or_mixed,
      static_cast<long long>(spec.pids_limit), c->agent_dir.empty() ? "false" : "true",
      JsonString(c->id).c_str(), JsonString(first_error).c_str());
  return lost_or_mixed == 0 ? 0 : 1;
}

int Usage() {
  std::fprintf(stderr,
               "usage: agent_bench --state-dir DIR up IMAGE | [--state-dir DIR] serial IMAGE N |"
               " [--state-dir DIR] concurrent IMAGE N | --state-dir DIR down\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string state_dir;
  if (args.size() >= 2 && args[0] == "--state-dir") {
    state_dir = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.empty()) return Usage();
  const std::string mode = args[0];
  const bool keep = !state_dir.empty();
  if ((mode == "up" || mode == "down") && !keep) return Usage();
  if (mode != "down" && args.size() < 2) return Usage();
  if (keep) {
    struct stat st {};
    if (::stat(state_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || (st.st_mode & 077) != 0) {
      return Fail(state_dir + " must be an existing directory of mode 0700");
    }
  }

  auto made = sandrun::docker::Client::FromEnvironment();
  if (!made) return Fail(made.error());
  std::shared_ptr<sandrun::docker::Client> client(std::move(made).value());

  if (mode == "down") {
    int removed = 0;
    int rc = RemoveInstance(*client, state_dir, &removed);
    std::printf("{\"removed\":%d}\n", removed);
    return rc;
  }
  if (!keep) {
    char tmpl[] = "/tmp/sandrun-agentbench-XXXXXX";  // mkdtemp: mode 0700
    if (::mkdtemp(tmpl) == nullptr) return Fail("mkdtemp failed");
    state_dir = tmpl;
  }

  const std::string image = args[1];
  const int n = args.size() > 2 ? std::atoi(args[2].c_str()) : (mode == "concurrent" ? 200 : 50);
  int rc = 2;
  {
    auto wrapper = sandrun::exec::CheckExecWrapper(SANDRUN_EXEC_WRAPPER);
    auto agent = sandrun::exec::CheckBundledBinary(SANDRUN_AGENT_BINARY, "sandbox agent");
    if (!wrapper.usable())
      std::fprintf(stderr, "agent_bench: no exec wrapper: %s\n", wrapper.reason.c_str());
    if (!agent.usable()) std::fprintf(stderr, "agent_bench: no agent: %s\n", agent.reason.c_str());
    DockerExecutor executor(client, wrapper, agent);
    if (n <= 0) {
      rc = Usage();
    } else if (mode == "up") {
      rc = Up(executor, Spec(image, state_dir, "bench:serial", 512));
    } else if (mode == "serial") {
      rc = Serial(executor, Spec(image, state_dir, "bench:serial", 512), n);
    } else if (mode == "concurrent") {
      // Every command is a login shell and a sleep at once, plus the agent and the keeper.
      rc = Concurrent(client, executor, Spec(image, state_dir, "bench:concurrent", 8 * n + 256), n);
    } else {
      rc = Usage();
    }
  }
  if (!keep) {
    int removed = 0;
    if (RemoveInstance(*client, state_dir, &removed) != 0 && rc == 0) rc = 1;
    std::error_code ec;
    std::filesystem::remove_all(state_dir, ec);
  }
  return rc;
}
