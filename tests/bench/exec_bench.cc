// Exec latency through the Engine API client, for tests/bench/exec_latency.sh.
//
//   exec_bench create IMAGE                  -> prints the id of a started warm container
//   exec_bench serial ID N                   -> N sequential `/bin/sh -lc true` execs
//   exec_bench concurrent ID N               -> N concurrent execs, wall time
//   exec_bench remove ID
// Results are one JSON object on stdout (milliseconds).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/docker/client.h"
#include "tests/bench/bench_clock.h"

namespace {

using sandrun::bench::Clock;
using sandrun::docker::Client;
using sandrun::docker::ExecSpec;

using sandrun::bench::CpuMs;
using sandrun::bench::Ms;
using sandrun::bench::Percentile;

int Fail(const sandrun::Error& e) {
  std::fprintf(stderr, "exec_bench: %s\n", e.ToString().c_str());
  return 1;
}

ExecSpec TrueSpec() {
  ExecSpec spec;
  spec.cmd = {"/bin/sh", "-lc", "true"};
  return spec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: exec_bench create IMAGE | serial ID N | concurrent ID N | remove ID\n");
    return 2;
  }
  auto client = Client::FromEnvironment();
  if (!client) return Fail(client.error());
  std::string mode = argv[1], arg = argv[2];

  if (mode == "create") {
    sandrun::docker::ContainerSpec spec;
    spec.image = arg;
    spec.cmd = {"sleep", "infinity"};
    spec.labels = {{"sandrun.bench", "1"}};
    spec.host.network_mode = "none";
    spec.host.init = true;
    auto id = (*client)->CreateContainer("", spec);
    if (!id) return Fail(id.error());
    if (auto st = (*client)->StartContainer(*id); !st) return Fail(st.error());
    std::printf("%s\n", id->c_str());
    return 0;
  }
  if (mode == "remove") {
    auto st = (*client)->RemoveContainer(arg, true);
    return st ? 0 : Fail(st.error());
  }
  int n = argc > 3 ? std::atoi(argv[3]) : 50;
  if (n <= 0) return 2;
  if (auto warm = (*client)->RunExec(arg, TrueSpec(), nullptr); !warm) return Fail(warm.error());

  if (mode == "serial") {
    std::vector<double> total, create, start, inspect;
    double cpu_before = CpuMs();
    for (int i = 0; i < n; ++i) {
      auto t0 = Clock::now();
      auto exec_id = (*client)->CreateExec(arg, TrueSpec());
      if (!exec_id) return Fail(exec_id.error());
      auto t1 = Clock::now();
      if (auto st = (*client)->StartExec(*exec_id, false, nullptr); !st) return Fail(st.error());
      auto t2 = Clock::now();
      auto code = (*client)->WaitExecExit(*exec_id);
      if (!code) return Fail(code.error());
      auto t3 = Clock::now();
      create.push_back(Ms(t1 - t0));
      start.push_back(Ms(t2 - t1));
      inspect.push_back(Ms(t3 - t2));
      total.push_back(Ms(t3 - t0));
    }
    double cpu_per_exec = (CpuMs() - cpu_before) / n;
    std::printf(
        "{\"runs\":%d,\"median_ms\":%.3f,\"p90_ms\":%.3f,\"create_median_ms\":%.3f,"
        "\"start_median_ms\":%.3f,\"inspect_median_ms\":%.3f,\"client_cpu_ms_per_exec\":%.3f}\n",
        n, Percentile(total, 0.5), Percentile(total, 0.9), Percentile(create, 0.5),
        Percentile(start, 0.5), Percentile(inspect, 0.5), cpu_per_exec);
    return 0;
  }
  if (mode == "concurrent") {
    std::vector<std::thread> threads;
    std::vector<int> failures(static_cast<size_t>(n), 0);
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        auto code = (*client)->RunExec(arg, TrueSpec(), nullptr);
        failures[static_cast<size_t>(i)] = (!code || *code != 0) ? 1 : 0;
      });
    }
    for (auto& t : threads) t.join();
    double wall = Ms(Clock::now() - t0);
    int failed = 0;
    for (int f : failures) failed += f;
    std::printf("{\"execs\":%d,\"wall_ms\":%.3f,\"failed\":%d}\n", n, wall, failed);
    return failed == 0 ? 0 : 1;
  }
  std::fprintf(stderr, "exec_bench: unknown mode %s\n", mode.c_str());
  return 2;
}
