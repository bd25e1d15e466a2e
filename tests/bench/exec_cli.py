#!/usr/bin/env python3
"""One-shot `sandrun exec` against baselines measured in the same run (issue: the exec tool).

  (1) `sandrun exec -- true` into a warm sandbox   vs  `docker exec CTR /bin/sh -lc true`
  (2) gateway `sandrun exec -- true`                 vs  `sh -c true`
  (3) first exec in a new scope (create+start+exec)  vs  `docker run --rm --network none IMAGE true`
  (4) 1 GiB of gateway output through a pipe         vs  `head -c 1G /dev/zero | cat`; runner RSS

Prints medians and ratios; asserts nothing (timings on shared machines are noisy).
Usage: exec_cli.py [--runs N] [--image IMAGE]   (after `bash scripts/setup`)
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SANDRUN = os.path.join(ROOT, "build", "sandrun")
DOCKER = shutil.which("docker")


def hyperfine(commands, runs, env):
    out = tempfile.mktemp(suffix=".json")
    subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--export-json", out]
                   + commands, check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(out) as f:
        results = json.load(f)["results"]
    os.unlink(out)
    return [r["median"] * 1000 for r in results]


def timed(argv, env):
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def home(config):
    d = tempfile.mkdtemp(prefix="sandrun-bench-")
    os.chmod(d, 0o700)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f)
    env = dict(os.environ, SANDRUN_HOME=d)
    return d, env


FLOOR_SOURCE = r"""
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
  char *sh[] = {"sh", "-c", "true", 0};
  if (argc > 1) {  /* fork+wait, like a runner that keeps its timeout and collects output */
    pid_t pid;
    int status;
    if (posix_spawn(&pid, "/bin/sh", 0, 0, sh, environ) != 0) return 127;
    waitpid(pid, &status, 0);
    return WEXITSTATUS(status);
  }
  execve("/bin/sh", sh, environ);  /* in place: the least a separate binary can cost */
  return 127;
}
"""


def build_floor_runners(directory):
    src = os.path.join(directory, "floor.c")
    exe = os.path.join(directory, "floor")
    with open(src, "w") as f:
        f.write(FLOOR_SOURCE)
    subprocess.run(["cc", "-O2", "-static", "-o", exe, src], check=True)
    return exe, exe + " spawn"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--image", default="sandrun-sandbox:minimal")
    ap.add_argument("--gib", type=float, default=1.0)
    args = ap.parse_args()
    if not os.access(SANDRUN, os.X_OK) or not DOCKER or not shutil.which("hyperfine"):
        sys.exit("needs build/sandrun, docker and hyperfine: run bash scripts/setup first")

    # (1) warm sandbox, one-shot CLI
    sbx_home, sbx_env = home({"sandbox": {"docker": {"image": args.image}}})
    subprocess.run([SANDRUN, "exec", "--", "true"], check=True, env=sbx_env)
    instance = open(os.path.join(sbx_home, "instance-id")).read().strip()
    ctr = subprocess.run([DOCKER, "ps", "-q", "--filter", "label=sandrun.instance=" + instance],
                         check=True, capture_output=True, text=True).stdout.split()[0]
    a, b = hyperfine([f"{SANDRUN} exec -- true", f"{DOCKER} exec {ctr} /bin/sh -lc true"],
                     args.runs, sbx_env)
    print(f"(1) sandbox one-shot: sandrun exec {a:7.2f} ms | docker exec {b:7.2f} ms | "
          f"ratio {a / b:.3f} (target <= 0.9)")

    # (2) gateway, with the floor of any runner binary: a static C program that does nothing but
    # exec("/bin/sh", "-c", "true") in place (no fork, no policy, no output handling), and one
    # that forks the shell and waits, as a runner must to keep a timeout and collect output.
    gw_home, gw_env = home({"sandbox": {"mode": "off"}})
    gw_env["SANDRUN_LOAD_SHELL_ENV"] = os.environ.get("SANDRUN_LOAD_SHELL_ENV", "1")
    floor_exec, floor_spawn = build_floor_runners(gw_home)
    a, b, c, d = hyperfine([f"{SANDRUN} exec -- true", "sh -c true", floor_exec, floor_spawn],
                           args.runs, gw_env)
    print(f"(2) gateway one-shot: sandrun exec {a:7.2f} ms | sh -c true  {b:7.2f} ms | "
          f"ratio {a / b:.3f} (target <= 1.5)")
    print(f"    floor: exec-in-place runner {c:7.2f} ms ({c / b:.3f}x), "
          f"fork+wait runner {d:7.2f} ms ({d / b:.3f}x)")

    # (3) first exec in a new scope
    new_home, new_env = home({"sandbox": {"scope": "session", "docker": {"image": args.image}}})
    n = max(5, args.runs // 4)
    ours, theirs = [], []
    for i in range(n):
        ours.append(timed([SANDRUN, "--session", f"bench-{i}", "exec", "--", "true"], new_env))
        theirs.append(timed([DOCKER, "run", "--rm", "--network", "none", args.image, "true"],
                            new_env))
    subprocess.run([SANDRUN, "sandbox", "prune", "--all"], env=new_env,
                   stdout=subprocess.DEVNULL, check=True)
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"(3) first exec in a new scope: sandrun {a:7.1f} ms | docker run --rm {b:7.1f} ms | "
          f"ratio {a / b:.3f} (target <= 1.0)")

    # (4) 1 GiB of gateway output into a pipe
    size = int(args.gib * (1 << 30))
    cmd = f"head -c {size} /dev/zero"
    base = statistics.median(timed(["sh", "-c", f"{cmd} | cat > /dev/null"], gw_env)
                             for _ in range(3))
    runs, rss = [], []
    for _ in range(3):
        start = time.perf_counter()
        producer = subprocess.Popen([SANDRUN, "exec", "--", cmd], env=gw_env,
                                    stdout=subprocess.PIPE)
        subprocess.run(["cat"], stdin=producer.stdout, stdout=subprocess.DEVNULL, check=True)
        producer.stdout.close()
        _, _, usage = os.wait4(producer.pid, 0)  # sandrun and what it waited for
        runs.append((time.perf_counter() - start) * 1000)
        rss.append(usage.ru_maxrss / 1024)
    ours = statistics.median(runs)
    rss_mib = max(rss)
    print(f"(4) {args.gib:g} GiB gateway output: sandrun {ours:7.0f} ms | cat pipe {base:7.0f} ms"
          f" | throughput ratio {base / ours:.3f} (target >= 0.5) | peak child RSS {rss_mib:.1f} "
          f"MiB (target < 64)")

    for d, env in ((sbx_home, sbx_env), (gw_home, gw_env), (new_home, new_env)):
        subprocess.run([SANDRUN, "sandbox", "prune", "--all"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
