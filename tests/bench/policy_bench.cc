// The per-command cost of the approvals policy (SPEC §6, reference §4.3-§4.4, §5): the whole
// EvaluateApprovals of a 5-segment pipeline under security=allowlist ask=on-miss against the REAL
// file system (every executable looked up in PATH with stat + realpath), and its parts: the shell
// analysis alone, the five executable resolutions alone, the security=full ask=off fast path, and
// what a one-shot CLI pays on top (parsing a 20-entry approvals file). The target: the 5-segment
// evaluation takes <= 50 µs median.
//
//   bash tests/bench/policy_bench.sh [build-dir]      # medians of 20 repetitions, PASS/FAIL
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "runner/config/approvals_file.h"
#include "runner/config/settings.h"
#include "runner/policy/approval_flow.h"
#include "runner/policy/command_resolution.h"
#include "runner/policy/gate.h"
#include "runner/policy/safe_bins.h"
#include "runner/policy/shell_analysis.h"

namespace sandrun::policy {
namespace {

using config::Ask;
using config::Security;

constexpr const char* kPipeline = "cat /etc/hosts | grep -e local | sort | uniq -c | head -n 5";
constexpr const char* kPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// A realistic approvals file: 20 entries across the wildcard and the main agent, absolute paths,
// path globs and bare names; cat, grep and sort are allowed by path, uniq and head are safe bins.
constexpr const char* kApprovalsJson = R"json({
  "version": 1,
  "socket": {"path": "/run/user/1000/sandrun/approvals.sock", "token": "0123456789abcdef"},
  "defaults": {"security": "allowlist", "ask": "on-miss", "askFallback": "deny",
               "autoAllowSkills": false},
  "agents": {
    "*": {
      "allowlist": [
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000001", "pattern": "/usr/bin/ls"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000002", "pattern": "/usr/bin/echo"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000003", "pattern": "/usr/local/bin/*"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000004", "pattern": "git"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000005", "pattern": "make"}
      ]
    },
    "main": {
      "security": "allowlist",
      "ask": "on-miss",
      "allowlist": [
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000006", "pattern": "~/bin/*",
         "source": "allow-always", "lastUsedAt": 1737150000000,
         "lastUsedCommand": "tool --check", "lastResolvedPath": "/home/u/bin/tool"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000007", "pattern": "/usr/bin/rg",
         "source": "allow-always", "lastUsedAt": 1737150000000,
         "lastUsedCommand": "rg -n TODO", "lastResolvedPath": "/usr/bin/rg"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000008", "pattern": "/usr/bin/python3",
         "argPattern": "^-m pytest( |$)"
},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000009", "pattern": "/usr/bin/date"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000010", "pattern": "/usr/bin/printf"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000011", "pattern": "/usr/bin/find"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000012", "pattern": "/usr/bin/node"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000013", "pattern": "/usr/bin/timeout"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000014", "pattern": "/opt/*/bin/*"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000015", "pattern": "cargo"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000016", "pattern": "/usr/bin/diff"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000017", "pattern": "/usr/bin/cat",
         "source": "operator"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000018", "pattern": "/usr/bin/grep"},
        {"id": "0b6f3c1e-1d2a-4c3b-8e4f-000000000019", "pattern": "/usr/bin/sort"},
        "=command:0123456789abcdef"
      ]
}
}
}
)json";

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "policy_bench: %s\n", what.c_str());
  std::exit(1);
}

const std::map<std::string, SafeBinProfile>& BuiltinProfiles() {
  static const std::map<std::string, SafeBinProfile> builtin = [] {
    auto p = LoadSafeBinProfiles(SANDRUN_SOURCE_DIR "/profiles");
    if (!p) Die(p.error().ToString());
    return *p;
  }();
  return builtin;
}

config::ApprovalsFile ParsedFileOrDie() {
  auto f = config::ParseApprovals(kApprovalsJson, "exec-approvals.json");
  if (!f) Die(f.error().ToString());
  return *f;
}

ResolveContext RealResolveContext() {
  ResolveContext rc;
  rc.path = kPath;
  rc.cwd = "/tmp";
  rc.home = "/root";
  // is_executable / real_path left empty: StatIsExecutable and SystemRealPath, the real probes.
  return rc;
}

Decision GatewayDecision(Security security, Ask ask) {
  Decision d;
  d.effective_host = Host::kGateway;
  d.configured.security = security;
  d.configured.ask = ask;
  d.effective = d.configured;
  d.approvals_apply = true;
  d.needs_approval_flow = security != Security::kFull || ask != Ask::kOff;
  return d;
}

// Everything EvaluateApprovals is given, built once outside the timed loop, as a long-lived
// gateway would hold it.
struct Fixture {
  config::AgentSettings settings;
  ApprovalInputs in;
  Decision decision;

  Fixture(Security security, Ask ask, bool analyse_always) {
    in.settings = &settings;
    in.approvals = config::ResolveApprovals(ParsedFileOrDie(), "main", security, ask);
    in.builtin_safe_bin_profiles = &BuiltinProfiles();
    in.resolve = RealResolveContext();
    in.analyse_always = analyse_always;
    decision = GatewayDecision(security, ask);
  }
};

// The pipeline must be allowed by the allowlist (3 entries) and the safe bins (uniq, head),
// rewritten to absolute paths: otherwise the benchmark measures something else.
void CheckPipelineVerdict(const ApprovalVerdict& v) {
  if (v.verdict != Verdict::kAllow || !v.eval.satisfied || v.eval.segments.size() != 5) {
    Die(std::string("unexpected verdict for the pipeline: ") + VerdictName(v.verdict) + " (" +
        v.reason + ")");
  }
  static const char* const kBy[] = {"allowlist", "allowlist", "allowlist", "safeBins", "safeBins"};
  for (size_t i = 0; i < 5; ++i) {
    if (v.eval.segments[i].satisfied_by != kBy[i]) {
      Die("segment " + std::to_string(i) + " satisfied by '" + v.eval.segments[i].satisfied_by +
          "', expected " + kBy[i]);
    }
  }
}

void BM_Policy5SegmentPipeline(benchmark::State& state) {
  Fixture f(Security::kAllowlist, Ask::kOnMiss, /*analyse_always=*/false);
  const std::string command = kPipeline;
  CheckPipelineVerdict(EvaluateApprovals(f.decision, command, f.in));
  for (auto _ : state) {
    ApprovalVerdict v = EvaluateApprovals(f.decision, command, f.in);
    benchmark::DoNotOptimize(v);
  }
}

// Informative: the same evaluation with in-memory probes (a map of the five executables), i.e.
// everything but the system calls. The difference to BM_Policy5SegmentPipeline is what the
// stat/access/realpath calls cost on this machine.
void BM_Policy5SegmentNoFileProbes(benchmark::State& state) {
  Fixture f(Security::kAllowlist, Ask::kOnMiss, /*analyse_always=*/false);
  static const std::map<std::string, std::string> kFiles = {{"/usr/bin/cat", "/usr/bin/cat"},
                                                            {"/usr/bin/grep", "/usr/bin/grep"},
                                                            {"/usr/bin/sort", "/usr/bin/sort"},
                                                            {"/usr/bin/uniq", "/usr/bin/uniq"},
                                                            {"/usr/bin/head", "/usr/bin/head"}};
  f.in.resolve.is_executable = [](const std::string& p) { return kFiles.count(p) > 0; };
  f.in.resolve.real_path = [](const std::string& p) {
    auto it = kFiles.find(p);
    return it == kFiles.end() ? std::string() : it->second;
  };
  const std::string command = kPipeline;
  CheckPipelineVerdict(EvaluateApprovals(f.decision, command, f.in));
  for (auto _ : state) {
    ApprovalVerdict v = EvaluateApprovals(f.decision, command, f.in);
    benchmark::DoNotOptimize(v);
  }
}

void BM_PolicyAnalysisOnly(benchmark::State& state) {
  const std::string command = kPipeline;
  for (auto _ : state) {
    ShellAnalysis a = AnalyzeShellCommand(command);
    benchmark::DoNotOptimize(a);
  }
}

void BM_PolicyResolutionOnly(benchmark::State& state) {
  const ResolveContext rc = RealResolveContext();
  const std::vector<std::string> words = {"cat", "grep", "sort", "uniq", "head"};
  for (const std::string& w : words) {
    if (!ResolveExecutable(w, rc).resolved()) Die("cannot resolve " + w + " in PATH");
  }
  for (auto _ : state) {
    for (const std::string& w : words) {
      ExecutableResolution r = ResolveExecutable(w, rc);
      benchmark::DoNotOptimize(r);
    }
  }
}

void BM_PolicyFullModeFastPath(benchmark::State& state) {
  Fixture f(Security::kFull, Ask::kOff, /*analyse_always=*/false);
  f.in.approvals.security = Security::kFull;  // the file does not tighten it here
  f.in.approvals.ask = Ask::kOff;
  const std::string command = kPipeline;
  if (EvaluateApprovals(f.decision, command, f.in).verdict != Verdict::kAllow) {
    Die("security=full ask=off did not allow the pipeline");
  }
  for (auto _ : state) {
    ApprovalVerdict v = EvaluateApprovals(f.decision, command, f.in);
    benchmark::DoNotOptimize(v);
  }
}

// What a one-shot CLI pays: parse and resolve the approvals file, then evaluate (the safe-bin
// profiles stay loaded once; reading the file from disk is not included).
void BM_Policy5SegmentWithLoadedFile(benchmark::State& state) {
  config::AgentSettings settings;
  const Decision decision = GatewayDecision(Security::kAllowlist, Ask::kOnMiss);
  const std::string command = kPipeline;
  const ResolveContext rc = RealResolveContext();
  for (auto _ : state) {
    auto file = config::ParseApprovals(kApprovalsJson, "exec-approvals.json");
    if (!file) {
      state.SkipWithError(file.error().ToString().c_str());
      return;
    }
    ApprovalInputs in;
    in.settings = &settings;
    in.approvals = config::ResolveApprovals(*file, "main", Security::kAllowlist, Ask::kOnMiss);
    in.builtin_safe_bin_profiles = &BuiltinProfiles();
    in.resolve = rc;
    ApprovalVerdict v = EvaluateApprovals(decision, command, in);
    benchmark::DoNotOptimize(v);
  }
}

// Every case reports the median (and mean, stddev, cv) of 10 repetitions by default; the defaults
// go in as command-line flags (see main) so that --benchmark_repetitions=N still overrides them,
// which ->Repetitions(10) would not.
BENCHMARK(BM_Policy5SegmentPipeline)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Policy5SegmentNoFileProbes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PolicyAnalysisOnly)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PolicyResolutionOnly)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PolicyFullModeFastPath)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Policy5SegmentWithLoadedFile)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sandrun::policy

int main(int argc, char** argv) {
  // Defaults first: a later flag of the same name (the caller's) wins.
  std::vector<char*> args;
  args.push_back(argv[0]);
  char repetitions[] = "--benchmark_repetitions=10";
  char aggregates[] = "--benchmark_report_aggregates_only=true";
  args.push_back(repetitions);
  args.push_back(aggregates);
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
