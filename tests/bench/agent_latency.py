#!/usr/bin/env python3
"""The sandbox agent's fast path (sandrun-agent in every container, agent_exec.h) against
baselines measured in the same run:

  (1) exec of `true` through the library (DockerExecutor::Run, tests/bench/agent_bench)
  (2) `docker exec -u USER CTR /bin/sh -lc true` in the same warm container (hyperfine -N)
  (3) POST /v1/tools/exec {"command":"true"} to `sandrun serve`, kept-alive unix socket
  (4) one-shot `sandrun exec -- true` with that server running (hyperfine -N)
  (5) the first exec in a new scope (`sandrun --session NEW exec -- true`, the server running)
      vs `docker run --rm --network none IMAGE true` (hyperfine -N): without a warm pool, and
      from the warm pool (the server restarted with sandbox.pool {"min": 1}; each new scope
      waits until a pooled container is ready, as a steady stream of new sessions finds one)
  (6) 200 concurrent `echo I-start; sleep 0.2; echo I-end` in one container through the library:
      every command's output exactly its own lines and exit 0, and the wall time (next to the same
      commands as concurrent Engine API execs in that container)
  (7) the agent's resident memory on the host (VmRSS; VmHWM after the concurrent run)

Prints medians and ratios; asserts nothing (timings on shared machines are noisy). Needs root
(the agent is used only by a root runner), docker and hyperfine, and the build: build/sandrun,
build/sandrun-agent, build/sandrun-exec and build/tests/bench/agent_bench. Every container,
the server and the temporary state dir and home (mode 0700) are removed at the end.
Usage: agent_latency.py [--runs N] [--image IMAGE] [--concurrent N]
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, "build")
SANDRUN = os.path.join(BUILD, "sandrun")
BENCH = os.path.join(BUILD, "tests", "bench", "agent_bench")
DOCKER = shutil.which("docker")
AGENT_CMDLINE = "/.sandrun/agent serve /.sandrun/agent.d"


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=120)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)
        self.sock.connect(self.unix_path)


def hyperfine(commands, runs, env, warmup=3):
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        subprocess.run(["hyperfine", "-N", "--warmup", str(warmup), "--runs", str(runs),
                        "--export-json", out] + commands, check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            return [r["median"] * 1000 for r in json.load(f)["results"]]
    finally:
        os.unlink(out)


def bench(state, *args):
    done = subprocess.run([BENCH, "--state-dir", state] + [str(a) for a in args],
                          capture_output=True, text=True)
    if done.returncode != 0 and not done.stdout.strip():
        sys.exit(f"agent_bench {' '.join(map(str, args))} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def agent_memory(ctr):
    """(host pid, VmRSS kB, VmHWM kB) of the container's agent, from `docker top` and /proc."""
    top = subprocess.run([DOCKER, "top", ctr, "-eo", "pid,args"], capture_output=True,
                         text=True, check=True).stdout.splitlines()[1:]
    for line in top:
        pid, _, args = line.strip().partition(" ")
        if args.strip() != AGENT_CMDLINE:
            continue
        fields = {}
        with open(f"/proc/{pid}/status") as f:
            for row in f:
                key, _, value = row.partition(":")
                fields[key] = value.strip()
        kb = lambda k: int(fields.get(k, "0 kB").split()[0])
        return int(pid), kb("VmRSS"), kb("VmHWM")
    return None


def remove_labelled(label):
    ids = subprocess.run([DOCKER, "ps", "-aq", "--filter", "label=" + label],
                         capture_output=True, text=True).stdout.split()
    if ids:
        subprocess.run([DOCKER, "rm", "-f"] + ids, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return len(ids)


def start_server(env, sock):
    server = subprocess.Popen([SANDRUN, "serve"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(sock) or server.poll() is not None:
            break
        time.sleep(0.05)
    if not os.path.exists(sock):
        sys.exit("sandrun serve did not listen")
    return server


def stop_server(server):
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def wait_pool_ready(instance_label):
    """Until a pooled container (named ...-pool-..., not yet claimed) runs, then 0.3 s for its
    agent to answer and the pool to list it."""
    for _ in range(600):
        names = subprocess.run([DOCKER, "ps", "--format", "{{.Names}}", "--filter",
                                instance_label, "--filter", "label=sandrun.pool"],
                               capture_output=True, text=True).stdout.split()
        if any("-pool-" in n for n in names):
            time.sleep(0.3)
            return True
        time.sleep(0.1)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--image", default="sandrun-sandbox:minimal")
    ap.add_argument("--concurrent", type=int, default=200)
    args = ap.parse_args()
    for path in (SANDRUN, BENCH, os.path.join(BUILD, "sandrun-agent"),
                 os.path.join(BUILD, "sandrun-exec")):
        if not os.access(path, os.X_OK):
            sys.exit(f"missing {path}: ninja -C build sandrun agent_bench")
    if not DOCKER or not shutil.which("hyperfine"):
        sys.exit("needs docker and hyperfine")
    if os.geteuid() != 0:
        sys.exit("run as root: the agent is used only by a root runner (agent_link.h)")
    runs = max(5, args.runs)

    tmp = tempfile.mkdtemp(prefix="sandrun-agentbench-")  # mode 0700
    state = os.path.join(tmp, "state")
    home = os.path.join(tmp, "home")
    os.mkdir(state, 0o700)
    os.mkdir(home, 0o700)
    def configure(pool):
        with open(os.path.join(home, "config.json"), "w") as f:
            # Session scope: `--session NEW` is a new scope; requests without one use "main".
            sandbox = {"scope": "session", "docker": {"image": args.image}}
            if pool:
                sandbox["pool"] = {"min": 1, "max": 1}
            json.dump({"sandbox": sandbox}, f)

    configure(pool=False)
    env = dict(os.environ, SANDRUN_HOME=home)
    server = None
    instance = None
    try:
        # (1) the library, and (2) docker exec into the same container
        up = bench(state, "up", args.image)
        instance = up["instance"]
        ctr, user = up["container"], up["user"]
        lib = bench(state, "serial", args.image, runs)
        if lib["container"] != ctr:
            sys.exit("agent_bench serial ran in another container than `up` made")
        (dexec,) = hyperfine([f"{DOCKER} exec -u {user} {ctr} /bin/sh -lc true"], runs, env)

        # (3) the server over HTTP, (4) the one-shot CLI through it
        sock = os.path.join(home, "sandrun.sock")
        server = start_server(env, sock)
        conn = UnixConnection(sock)
        body = json.dumps({"tool": "exec", "command": "true"})

        def http_exec():
            conn.request("POST", "/v1/tools/exec", body=body,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            text = resp.read().decode()
            if resp.status != 200 or '"exitCode":0' not in text.replace(" ", ""):
                sys.exit(f"POST /v1/tools/exec: {resp.status} {text[:400]}")
            return text

        first = http_exec()  # creates the session's container
        fell_back = "sandbox agent of" in first  # AgentFallbackWarning (docker_executor.cc)
        for _ in range(4):
            fell_back |= "sandbox agent of" in http_exec()
        server_ctrs = subprocess.run(
            [DOCKER, "ps", "-q", "--filter", "label=sandrun.instance=" +
             open(os.path.join(home, "instance-id")).read().strip()],
            capture_output=True, text=True, check=True).stdout.split()
        server_agent = bool(server_ctrs) and agent_memory(server_ctrs[0]) is not None
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            http_exec()
            samples.append((time.perf_counter() - start) * 1000)
        http_ms = statistics.median(samples)
        conn.close()
        (cli,) = hyperfine([f"{SANDRUN} exec -- true"], runs, env)

        # (5) first exec in a new scope vs docker run --rm
        n_new = max(5, runs // 5)
        ours = []
        for i in range(n_new):
            start = time.perf_counter()
            subprocess.run([SANDRUN, "--session", f"agentbench-new-{i}", "exec", "--", "true"],
                           check=True, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            ours.append((time.perf_counter() - start) * 1000)
        new_scope = statistics.median(ours)
        (drun,) = hyperfine([f"{DOCKER} run --rm --network none {args.image} true"], n_new, env,
                            warmup=1)
        # (5b) the same from the warm pool: the server again, with sandbox.pool
        stop_server(server)
        configure(pool=True)
        server = start_server(env, sock)
        instance_label = "label=sandrun.instance=" + \
            open(os.path.join(home, "instance-id")).read().strip()
        pooled = []
        for i in range(n_new + 1):
            # The first learns the pool's kind (nothing is ready yet); it is not counted.
            if i > 0 and not wait_pool_ready(instance_label):
                sys.exit("the warm pool did not fill within 60 s")
            start = time.perf_counter()
            subprocess.run([SANDRUN, "--session", f"agentbench-pool-{i}", "exec", "--", "true"],
                           check=True, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            if i > 0:
                pooled.append((time.perf_counter() - start) * 1000)
        from_pool = statistics.median(pooled)

        # (6) concurrent commands in one container through the library
        conc = bench(state, "concurrent", args.image, args.concurrent)

        # (7) the agents' memory: the serial container's (idle after its runs) and the
        # concurrent one's (VmHWM: its peak with every command running)
        mem_serial = agent_memory(ctr)
        mem_conc = agent_memory(conc["container"])

        print(f"engine: docker CLI {DOCKER}; image {args.image}; sandbox user {user}; "
              f"{runs} runs each")
        agent_note = "through the agent" if lib["agent"] and lib["fallbacks"] == 0 else \
            f"NOT through the agent ({up['agent_reason'] or str(lib['fallbacks']) + ' fallbacks'})"
        print(f"(1) library DockerExecutor::Run   median {lib['median_ms']:8.2f} ms  "
              f"(p90 {lib['p90_ms']:.2f}, min {lib['min_ms']:.2f}; runner CPU "
              f"{lib['runner_cpu_ms_per_exec']:.3f} ms/exec; {agent_note})")
        print(f"(2) docker exec CLI               median {dexec:8.2f} ms")
        print(f"(3) serve, HTTP keep-alive socket median {http_ms:8.2f} ms")
        print(f"(4) one-shot `sandrun exec`       median {cli:8.2f} ms  (server running)")
        print(f"    ratios vs (2): library {lib['median_ms'] / dexec:.3f} | "
              f"HTTP {http_ms / dexec:.3f} | one-shot CLI {cli / dexec:.3f}")
        if fell_back or not server_agent:
            print("    the server's container: " + ("no agent process; " if not server_agent
                  else "") + ("a call fell back to the Engine API" if fell_back else ""))
        print(f"(5) first exec in a new scope: sandrun exec {new_scope:7.1f} ms | docker run --rm "
              f"{drun:7.1f} ms | ratio {new_scope / drun:.3f}  (median of {n_new}; no warm pool)")
        print(f"    from the warm pool:             {from_pool:7.1f} ms | ratio "
              f"{from_pool / drun:.3f}  (median of {n_new})")
        lost = conc["lost_or_mixed"]
        print(f"(6) {conc['commands']} concurrent commands in one container (pids limit "
              f"{conc['pids_limit']}): lost or mixed: {lost}"
              + (f" ({conc['failed']} failed: {conc['first_error']})" if lost else "")
              + f"; wall {conc['wall_ms']:.0f} ms (each sleeps 200 ms)"
              + (f"; {conc['fallbacks']} fell back to the Engine API" if conc["fallbacks"] else ""))
        print(f"    same commands as Engine API execs: wall {conc['engine_wall_ms']:.0f} ms, "
              f"lost or mixed: {conc['engine_lost_or_mixed']}; ratio agent/engine "
              f"{conc['wall_ms'] / conc['engine_wall_ms']:.3f}")
        for label, mem in (("after the serial runs", mem_serial),
                           (f"after {conc['commands']} concurrent", mem_conc)):
            if mem:
                print(f"(7) agent RSS {label}: VmRSS {mem[1] / 1024:.2f} MiB, VmHWM "
                      f"{mem[2] / 1024:.2f} MiB (host pid {mem[0]})")
            else:
                print(f"(7) agent RSS {label}: no process `{AGENT_CMDLINE}` in the container")
    finally:
        if server is not None:
            stop_server(server)
        subprocess.run([SANDRUN, "sandbox", "prune", "--all"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        home_id = os.path.join(home, "instance-id")
        if os.path.exists(home_id):
            remove_labelled("sandrun.instance=" + open(home_id).read().strip())
        if os.path.exists(os.path.join(state, "instance-id")):
            subprocess.run([BENCH, "--state-dir", state, "down"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            remove_labelled("sandrun.instance=" + open(os.path.join(state, "instance-id"))
                            .read().strip())
        # Scratch images and the warm pool's mount stay mounted on the host: off first.
        with open("/proc/self/mountinfo") as f:
            points = [line.split()[4] for line in f]
        for point in sorted((p for p in points if p.startswith(tmp + "/")), key=len,
                            reverse=True):
            subprocess.run(["umount", "-l", point], stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
