// The per-command cost of host hardening: spawn + exec + reap of /bin/true with and without the
// host profile's child steps, the same through HostExecutor (`sh -c true`), the one-time cost
// of preparing a profile (load + compile), and the per-system-call cost of the filters.
//
//   bash tests/bench/harden_bench.sh [build-dir]      # medians of 15 repetitions
#include <benchmark/benchmark.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/executors/host/host_executor.h"
#include "sandbox/harden/child_steps.h"
#include "sandbox/harden/host_hardening.h"
#include "sandbox/harden/profile_file.h"
#include "sandbox/harden/seccomp_compiler.h"
#include "sandbox/harden/seccomp_profile.h"
#include "sandbox/os/subprocess.h"

namespace sandrun::harden {
namespace {

std::shared_ptr<const HostHardening> PreparedOrDie(const std::string& name) {
  auto h = HostHardening::Prepare(DefaultProfilesDir(), name);
  if (!h) {
    std::fprintf(stderr, "%s\n", h.error().ToString().c_str());
    std::exit(1);
  }
  return *h;
}

// The default profile's steps without the filter: what the capability drop, no_new_privs and
// rlimits cost on their own (the difference to the default profile is the filter).
std::unique_ptr<ChildHardening> WithoutFilter() {
  auto profile = LoadHostProfile(DefaultProfilesDir(), "default");
  auto caps =
      profile ? PrepareCapabilities(profile->keep_mask) : Result<CapabilityPlan>(profile.error());
  if (!caps) std::exit(1);
  ChildHardening::Spec spec;
  spec.caps = *caps;
  spec.rlimits = profile->rlimits;
  auto child = ChildHardening::Create(std::move(spec));
  if (!child) std::exit(1);
  return std::move(child).value();
}

void SpawnTrue(benchmark::State& state, ChildSteps steps) {
  SpawnOptions opts;
  opts.path = "/bin/true";
  opts.argv = {"true"};
  opts.env = {"PATH=/usr/bin:/bin"};
  opts.child_steps = steps;
  for (auto _ : state) {
    auto proc = Subprocess::Spawn(opts);
    if (!proc) {
      state.SkipWithError(proc.error().ToString().c_str());
      return;
    }
    auto status = proc->Reap();
    if (!status || status->exit_code != 0) state.SkipWithError("true failed");
  }
}

void BM_SpawnTrue_Plain(benchmark::State& state) { SpawnTrue(state, {}); }
void BM_SpawnTrue_CapsNnpRlimits(benchmark::State& state) {
  static auto child = WithoutFilter();
  SpawnTrue(state, child->steps());
}
void BM_SpawnTrue_DefaultProfile(benchmark::State& state) {
  static auto h = PreparedOrDie("default");
  SpawnTrue(state, h->steps());
}
void BM_SpawnTrue_PrivilegedProfile(benchmark::State& state) {
  static auto h = PreparedOrDie("privileged");
  SpawnTrue(state, h->steps());
}

// Plain and hardened spawns alternate, so load drifts on a shared machine hit both alike; the
// counters are medians over the iterations (microseconds): plain, hardened, and their difference
// taken pair by pair.
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

bool TimedSpawn(const SpawnOptions& opts, double* us) {
  auto t0 = std::chrono::steady_clock::now();
  auto proc = Subprocess::Spawn(opts);
  if (!proc) return false;
  auto status = proc->Reap();
  *us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  return status && status->exit_code == 0;
}

void SpawnTruePaired(benchmark::State& state, ChildSteps steps) {
  SpawnOptions plain;
  plain.path = "/bin/true";
  plain.argv = {"true"};
  plain.env = {"PATH=/usr/bin:/bin"};
  SpawnOptions hardened = plain;
  hardened.child_steps = steps;
  std::vector<double> a, b, diff;
  for (auto _ : state) {
    double ta = 0, tb = 0;
    bool first_plain = (a.size() % 2) == 0;  // alternate which one goes first, too
    bool ok = first_plain ? TimedSpawn(plain, &ta) && TimedSpawn(hardened, &tb)
                          : TimedSpawn(hardened, &tb) && TimedSpawn(plain, &ta);
    if (!ok) {
      state.SkipWithError("spawn failed");
      return;
    }
    a.push_back(ta);
    b.push_back(tb);
    diff.push_back(tb - ta);
  }
  state.counters["plain_us"] = Median(a);
  state.counters["hardened_us"] = Median(b);
  state.counters["overhead_us"] = Median(diff);
}

void BM_SpawnTruePaired_CapsNnpRlimits(benchmark::State& state) {
  static auto child = WithoutFilter();
  SpawnTruePaired(state, child->steps());
}
void BM_SpawnTruePaired_DefaultProfile(benchmark::State& state) {
  static auto h = PreparedOrDie("default");
  SpawnTruePaired(state, h->steps());
}
void BM_SpawnTruePaired_PrivilegedProfile(benchmark::State& state) {
  static auto h = PreparedOrDie("privileged");
  SpawnTruePaired(state, h->steps());
}

exec::Plan TruePlan() {
  exec::Plan plan;
  plan.target = exec::Target::kGateway;
  plan.shell = "/bin/sh";
  plan.command = "true";
  plan.env = {{"PATH", "/usr/bin:/bin"}};
  return plan;
}

// The executor's whole path (pipes, pump, group cleanup) with `sh -c true`.
void BM_HostExecutorRun_Unhardened(benchmark::State& state) {
  SpawnOptions opts;
  opts.path = "/bin/sh";
  opts.argv = {"/bin/sh", "-c", "true"};
  opts.env = {"PATH=/usr/bin:/bin"};
  for (auto _ : state) {
    auto o = exec::RunSubprocess(opts, exec::RunLimits{}, nullptr, nullptr);
    if (!o) state.SkipWithError(o.error().ToString().c_str());
  }
}
void BM_HostExecutorRun_DefaultProfile(benchmark::State& state) {
  exec::HostExecutor host;
  exec::Plan plan = TruePlan();
  for (auto _ : state) {
    auto o = host.Run(plan, nullptr, nullptr);
    if (!o) state.SkipWithError(o.error().ToString().c_str());
  }
}

// Once per process: load the host profile and its seccomp file, compile, prepare caps/rlimits.
void BM_PrepareProfile(benchmark::State& state, const char* name) {
  for (auto _ : state) {
    auto h = HostHardening::Prepare(DefaultProfilesDir(), name);
    if (!h) state.SkipWithError(h.error().ToString().c_str());
  }
}

// Per system call: a child loads the filter (or none) and times getppid in a loop; the
// iteration time is the cost of one call.
void BM_GetppidUnderFilter(benchmark::State& state, const char* seccomp) {
  std::unique_ptr<ChildHardening> child;
  if (seccomp != nullptr) {
    auto profile = LoadSeccompProfile(DefaultProfilesDir(), seccomp);
    auto filter =
        profile ? CompileSeccompProfile(*profile) : Result<SeccompFilter>(profile.error());
    if (!filter) {
      state.SkipWithError(filter.error().ToString().c_str());
      return;
    }
    ChildHardening::Spec spec;
    spec.bpf = filter->program;
    auto made = ChildHardening::Create(std::move(spec));
    if (!made) return;
    child = std::move(made).value();
  }
  constexpr int kCalls = 50000;
  for (auto _ : state) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_t pid = ::fork();
    if (pid == 0) {
      const char* step = "";
      if (child && child->Apply(&step) != 0) ::_exit(1);
      timespec a{}, b{};
      ::clock_gettime(CLOCK_MONOTONIC, &a);
      for (int i = 0; i < kCalls; ++i) ::syscall(SYS_getppid);
      ::clock_gettime(CLOCK_MONOTONIC, &b);
      double ns = static_cast<double>(b.tv_sec - a.tv_sec) * 1e9 +
                  static_cast<double>(b.tv_nsec - a.tv_nsec);
      ssize_t ignored = ::write(fds[1], &ns, sizeof(ns));
      (void)ignored;
      ::_exit(0);
    }
    ::close(fds[1]);
    double ns = 0;
    ssize_t got = ::read(fds[0], &ns, sizeof(ns));
    ::close(fds[0]);
    ::waitpid(pid, nullptr, 0);
    if (got != static_cast<ssize_t>(sizeof(ns))) {
      state.SkipWithError("child failed");
      return;
    }
    state.SetIterationTime(ns / 1e9 / kCalls);
  }
}

BENCHMARK(BM_SpawnTrue_Plain)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SpawnTrue_CapsNnpRlimits)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SpawnTrue_DefaultProfile)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SpawnTrue_PrivilegedProfile)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SpawnTruePaired_CapsNnpRlimits)->Iterations(300)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SpawnTruePaired_DefaultProfile)->Iterations(300)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SpawnTruePaired_PrivilegedProfile)->Iterations(300)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostExecutorRun_Unhardened)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostExecutorRun_DefaultProfile)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PrepareProfile, default, "default")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PrepareProfile, privileged, "privileged")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GetppidUnderFilter, none, nullptr)->UseManualTime()->Iterations(10);
BENCHMARK_CAPTURE(BM_GetppidUnderFilter, host, "host")->UseManualTime()->Iterations(10);
BENCHMARK_CAPTURE(BM_GetppidUnderFilter, container_default, "default")
    ->UseManualTime()
    ->Iterations(10);

}  // namespace
}  // namespace sandrun::harden

BENCHMARK_MAIN();
