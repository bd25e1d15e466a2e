#!/usr/bin/env python3
"""Load and isolation check of the multi-tenant server, bounded and loopback only.

Starts `sandrun serve` on a private SANDRUN_HOME with a TLS listener on 127.0.0.1 (a self-signed
certificate made here with openssl), one agent token and one operator token per tenant, then:
  1. every tenant subscribes to /v1/events (operator token) for the whole run;
  2. every (tenant, session) starts a background exec in the sandbox that prints a marker, and
     polls it to the end: the output must hold the marker (a lost output is a failure);
  3. every tenant tries every other tenant's session ids (poll, log, kill, remove) and must get
     exactly the answer an unknown id gets; its `process list` must show only its own sessions;
     its event stream must carry only its own sessions;
  4. latency: foreground `exec true` calls over one TLS keep-alive connection and over the unix
     socket (p50/p99, a benchmark figure, never a threshold);
  5. stops the server (SIGTERM, exit 0) and removes the run's containers with
     `sandrun sandbox recreate --all`: none may remain (a leaked container is a failure).
Prints a JSON summary on stdout; exit 0 when every check held, 1 otherwise, 2 on bad usage.

  python3 tests/load/tenants_load.py --binary build/sandrun                 # 3 x 5 (the suite's)
  python3 tests/load/tenants_load.py --binary build/sandrun --tenants 10 --sessions 20
The whole run is bounded by --deadline seconds (default 300): past it everything is stopped.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

DOCKER_SOCK = os.environ.get("DOCKER_SOCK", "/var/run/docker.sock")


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = s


class Client:
    """One keep-alive connection (TLS or unix) with a tenant's token."""

    def __init__(self, run, token, agent="main", session="main"):
        self.run, self.token, self.agent, self.session = run, token, agent, session
        self.conn = None

    def _connect(self):
        if self.run.unix:
            return UnixConnection(self.run.socket, timeout=30)
        return http.client.HTTPSConnection("127.0.0.1", self.run.port, timeout=30,
                                           context=self.run.tls)

    def request(self, method, path, body=None, headers=None):
        h = {"Authorization": "Bearer " + self.token, "X-Sandrun-Agent": self.agent,
             "X-Sandrun-Session": self.session}
        h.update(headers or {})
        data = json.dumps(body).encode() if body is not None else None
        if data is not None:
            h["Content-Type"] = "application/json"
        for attempt in range(2):
            if self.conn is None:
                self.conn = self._connect()
            try:
                self.conn.request(method, path, body=data, headers=h)
                resp = self.conn.getresponse()
                text = resp.read().decode()
                if resp.getheader("Connection", "").lower() == "close":
                    self.close()
                return resp.status, text
            except (ConnectionError, http.client.HTTPException, OSError):
                self.close()
                if attempt == 1:
                    raise
        raise RuntimeError("unreachable")

    def tool(self, path, body):
        status, text = self.request("POST", path, body)
        try:
            return status, json.loads(text)
        except ValueError:
            return status, {"raw": text}

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Run:
    def __init__(self, args):
        self.args = args
        self.binary = os.path.abspath(args.binary)
        self.home = tempfile.mkdtemp(prefix="sandrun-e2e-load-", dir="/tmp")
        os.chmod(self.home, 0o700)
        self.env = dict(os.environ, SANDRUN_HOME=self.home)
        self.socket = os.path.join(self.home, "sandrun.sock")
        self.unix = False
        self.server = None
        self.port = None
        self.tls = None
        self.failures = []
        self.lock = threading.Lock()

    def fail(self, what):
        with self.lock:
            if len(self.failures) < 50:
                self.failures.append(what)

    def sandrun(self, *argv, check=True):
        r = subprocess.run([self.binary, *argv], env=self.env, capture_output=True, text=True,
                           timeout=60)
        if check and r.returncode != 0:
            raise RuntimeError(f"sandrun {' '.join(argv)}: exit {r.returncode}: {r.stderr}")
        return r

    def setup(self):
        tenants = {f"t{i}": {} for i in range(self.args.tenants)}
        config = {"sandbox": {"mode": "all", "docker": {"image": self.args.image}},
                  "tenants": tenants}
        with open(os.path.join(self.home, "config.json"), "w") as f:
            json.dump(config, f)
        self.tokens = {}
        for t in tenants:
            agent = self.sandrun("token", "create", "--tenant", t, "--role", "agent",
                                 "--name", t + "-agent").stdout.strip()
            operator = self.sandrun("token", "create", "--tenant", t, "--role", "operator",
                                    "--name", t + "-operator").stdout.strip()
            self.tokens[t] = {"agent": agent, "operator": operator}
        cert, key = os.path.join(self.home, "cert.pem"), os.path.join(self.home, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        key, "-out", cert, "-days", "1", "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                       check=True, capture_output=True, timeout=60)
        self.tls = ssl.create_default_context(cafile=cert)
        self.server_log = open(os.path.join(self.home, "serve.log"), "w+")
        self.server = subprocess.Popen(
            [self.binary, "serve", "--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key",
             key], env=self.env, stdout=subprocess.DEVNULL, stderr=self.server_log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.port is None:
            self.server_log.seek(0)
            m = re.search(r"listening on https://127\.0\.0\.1:(\d+)", self.server_log.read())
            if m:
                self.port = int(m.group(1))
            elif self.server.poll() is not None:
                break
            else:
                time.sleep(0.05)
        if self.port is None:
            self.server_log.seek(0)
            raise RuntimeError("the server did not start listening: " + self.server_log.read())

    # 1. Event streams, one per tenant, read until the run ends.
    def subscribe(self, tenant, seen, ready):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=5, context=self.tls)
        conn.request("GET", "/v1/events",
                     headers={"Authorization": "Bearer " + self.tokens[tenant]["operator"]})
        resp = conn.getresponse()
        if resp.status != 200:
            self.fail(f"{tenant}: GET /v1/events answered {resp.status}")
            ready.set()
            return
        event = None
        while not self.stop_events.is_set():
            try:
                line = resp.fp.readline()
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                break
            if not line:
                break
            line = line.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
                if event == "ready":
                    ready.set()
            elif line.startswith("data: ") and event not in ("ready", "ping"):
                try:
                    data = json.loads(line[6:])
                except ValueError:
                    continue
                with self.lock:
                    seen.append(data)
        conn.close()

    # 2. One background session, polled to its end.
    def session(self, tenant, index, results):
        client = Client(self, self.tokens[tenant]["agent"], session=f"s{index}")
        marker = f"out-{tenant}-{index}"
        status, doc = client.tool("/v1/tools/exec", {
            "tool": "exec", "background": True,
            "command": f"echo {marker}-$((6*7)); sleep 0.2; echo done-{marker}"})
        sid = (doc.get("details") or {}).get("sessionId")
        if status != 200 or not sid:
            self.fail(f"{tenant}/s{index}: exec answered {status}: {doc}")
            return
        output = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status, doc = client.tool("/v1/tools/process",
                                      {"tool": "process", "action": "poll", "sessionId": sid,
                                       "timeout": 2000})
            if status != 200:
                self.fail(f"{tenant}/{sid}: poll answered {status}: {doc}")
                return
            output += "".join(c.get("text", "") for c in doc.get("content", []))
            if (doc.get("details") or {}).get("status") not in ("running", None):
                break
        status, doc = client.tool("/v1/tools/process",
                                  {"tool": "process", "action": "log", "sessionId": sid})
        log = "".join(c.get("text", "") for c in doc.get("content", []))
        ok = f"{marker}-42" in log and f"done-{marker}" in log
        if not ok:
            self.fail(f"{tenant}/{sid}: output lost: log {log!r}, polled {output!r}")
        with self.lock:
            results.append({"tenant": tenant, "session": f"s{index}", "id": sid, "ok": ok})
        client.close()

    # 3. Another tenant's ids answer like unknown ones.
    def cross_tenant(self, results):
        visible = 0
        checks = 0
        for attacker in self.tokens:
            for victim in results:
                if victim["tenant"] == attacker:
                    continue
                client = Client(self, self.tokens[attacker]["agent"], session=victim["session"])
                for action in ("poll", "log", "kill", "remove"):
                    unknown = client.tool("/v1/tools/process",
                                          {"tool": "process", "action": action,
                                           "sessionId": "zz-unknown"})
                    theirs = client.tool("/v1/tools/process",
                                         {"tool": "process", "action": action,
                                          "sessionId": victim["id"]})
                    checks += 1
                    same = (theirs[0] == unknown[0] and
                            json.dumps(theirs[1]).replace(victim["id"], "zz-unknown") ==
                            json.dumps(unknown[1]))
                    if not same or theirs[0] == 200:
                        visible += 1
                        self.fail(f"{attacker} {action} {victim['tenant']}'s {victim['id']}: "
                                  f"{theirs} vs unknown {unknown}")
                client.close()
            own = {r["id"] for r in results if r["tenant"] == attacker}
            for index in range(self.args.sessions):
                client = Client(self, self.tokens[attacker]["agent"], session=f"s{index}")
                status, doc = client.tool("/v1/tools/process", {"tool": "process",
                                                                "action": "list"})
                listed = {s.get("sessionId") for s in (doc.get("details") or {}).get(
                    "sessions", [])}
                checks += 1
                if not listed <= own:
                    visible += 1
                    self.fail(f"{attacker}/s{index} lists {listed - own}")
                client.close()
        return visible, checks

    # 4. Foreground `exec true`, one connection each way.
    def latency(self, count):
        out = {}
        tenant = next(iter(self.tokens))
        for name, unix in (("tls", False), ("unix", True)):
            self.unix = unix
            client = Client(self, self.tokens[tenant]["agent"], session="bench")
            client.tool("/v1/tools/exec", {"tool": "exec", "command": "true"})  # warm
            times = []
            for _ in range(count):
                start = time.perf_counter()
                status, _ = client.tool("/v1/tools/exec", {"tool": "exec", "command": "true"})
                times.append((time.perf_counter() - start) * 1000)
                if status != 200:
                    self.fail(f"latency {name}: exec true answered {status}")
                    break
            client.close()
            times.sort()
            if times:
                out[name] = {"n": len(times), "p50_ms": round(statistics.median(times), 1),
                             "p99_ms": round(times[min(len(times) - 1,
                                                       int(len(times) * 0.99))], 1)}
        self.unix = False
        return out

    def containers(self):
        label = urllib.parse.quote(json.dumps({"label": ["sandrun.stateDir=" + self.home]}))
        conn = UnixConnection(DOCKER_SOCK, timeout=10)
        conn.request("GET", "/containers/json?all=1&filters=" + label)
        found = json.loads(conn.getresponse().read())
        conn.close()
        return found

    def stop_server(self):
        if self.server is None or self.server.poll() is not None:
            return self.server.returncode if self.server else 0
        self.server.send_signal(signal.SIGTERM)
        try:
            return self.server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.server.wait()
            return -9

    def cleanup(self):
        self.stop_server()
        for c in self.containers():
            conn = UnixConnection(DOCKER_SOCK, timeout=30)
            conn.request("DELETE", f"/containers/{c['Id']}?force=1")
            conn.getresponse().read()
            conn.close()
        # Scratch workspaces may still be mounted (loop images): detach them first.
        with open("/proc/mounts") as f:
            mounts = [line.split()[1] for line in f if line.split()[1].startswith(self.home)]
        for m in sorted(mounts, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(self.home, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", required=True)
    p.add_argument("--tenants", type=int, default=3)
    p.add_argument("--sessions", type=int, default=5)
    p.add_argument("--latency-calls", type=int, default=100)
    p.add_argument("--image", default="sandrun-sandbox:minimal")
    p.add_argument("--deadline", type=int, default=300, help="seconds for the whole run")
    args = p.parse_args()
    if not (1 <= args.tenants <= 50 and 1 <= args.sessions <= 100):
        p.error("--tenants 1..50, --sessions 1..100")
    if not os.access(args.binary, os.X_OK):
        p.error(f"--binary {args.binary}: not executable")

    run = Run(args)
    # Bounded: past the deadline the run stops itself (the server and its containers go too).
    def expire(*_):
        run.fail(f"the run exceeded --deadline {args.deadline} s")
        run.cleanup()
        print(json.dumps({"ok": False, "failures": run.failures}, indent=1))
        os._exit(1)
    signal.signal(signal.SIGALRM, expire)
    signal.alarm(args.deadline)
    started = time.monotonic()
    summary = {}
    try:
        run.setup()
        run.stop_events = threading.Event()
        events = {t: [] for t in run.tokens}
        subscribers = []
        for t in run.tokens:
            ready = threading.Event()
            th = threading.Thread(target=run.subscribe, args=(t, events[t], ready), daemon=True)
            th.start()
            if not ready.wait(20):
                run.fail(f"{t}: the event stream did not become ready")
            subscribers.append(th)
        results = []
        workers = [threading.Thread(target=run.session, args=(t, i, results))
                   for t in run.tokens for i in range(args.sessions)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        lost = args.tenants * args.sessions - sum(1 for r in results if r["ok"])
        visible, checks = run.cross_tenant(results)
        # Every session's end reached its own tenant's stream, and nothing else did.
        by_tenant = {t: {r["id"] for r in results if r["tenant"] == t} for t in run.tokens}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with run.lock:
                complete = all(by_tenant[t] <= {e.get("sessionId") for e in events[t]}
                               for t in run.tokens)
            if complete:
                break
            time.sleep(0.1)
        event_leaks = 0
        with run.lock:
            for t in run.tokens:
                ids = {e.get("sessionId") for e in events[t] if e.get("sessionId")}
                foreign = ids - by_tenant[t] - {None}
                event_leaks += len(foreign)
                if foreign:
                    run.fail(f"{t}'s event stream carried other tenants' sessions {foreign}")
                if not by_tenant[t] <= ids:
                    run.fail(f"{t}'s event stream missed {by_tenant[t] - ids}")
        latency = run.latency(args.latency_calls)
        during = len(run.containers())
        run.stop_events.set()
        code = run.stop_server()
        if code != 0:
            run.fail(f"the server exited {code} on SIGTERM")
        run.sandrun("sandbox", "recreate", "--all")
        leaked = len(run.containers())
        if leaked:
            run.fail(f"{leaked} containers left after `sandbox recreate --all`")
        summary = {"tenants": args.tenants, "sessions": args.sessions,
                   "outputs_lost": lost, "cross_tenant_visible": visible + event_leaks,
                   "cross_tenant_checks": checks, "containers_during_run": during,
                   "containers_leaked": leaked, "latency": latency}
    except Exception as e:  # noqa: BLE001 -- any failure is reported, then cleaned up
        run.fail(f"{type(e).__name__}: {e}")
    finally:
        run.cleanup()
    summary["seconds"] = round(time.monotonic() - started, 1)
    summary["ok"] = not run.failures
    summary["failures"] = run.failures
    print(json.dumps(summary, indent=1))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
