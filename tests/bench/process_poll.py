#!/usr/bin/env python3
"""What a `process poll` round trip costs through `sandrun serve` (median of N), both as a raw
HTTP request on a kept-alive unix-socket connection and as a one-shot `sandrun process poll`
CLI call, next to a `/healthz` request as the server's floor. Prints figures; asserts nothing.
Usage: process_poll.py [--runs N]   (after `bash scripts/setup`)
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
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SANDRUN = os.path.join(ROOT, "build", "sandrun")


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost")
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix_path)


def timed_ms(fn, runs):
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="sandrun-pollbench-")
    os.chmod(home, 0o700)
    with open(os.path.join(home, "config.json"), "w") as f:
        json.dump({"sandbox": {"mode": "off"}}, f)
    env = dict(os.environ, SANDRUN_HOME=home)
    server = subprocess.Popen([SANDRUN, "serve"], env=env, stderr=subprocess.DEVNULL)
    sock = os.path.join(home, "sandrun.sock")
    try:
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        started = subprocess.run([SANDRUN, "exec", "--background", "--json", "--", "sleep 120"],
                                 env=env, capture_output=True, text=True, check=True)
        session = json.loads(started.stdout)["details"]["sessionId"]
        conn = UnixConnection(sock)
        body = json.dumps({"tool": "process", "action": "poll", "sessionId": session})

        def poll():
            conn.request("POST", "/v1/tools/process", body=body,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200, resp.status

        def healthz():
            conn.request("GET", "/healthz")
            conn.getresponse().read()

        for _ in range(10):
            poll()
        floor = timed_ms(healthz, args.runs)
        raw = timed_ms(poll, args.runs)
        cli = timed_ms(lambda: subprocess.run(
            [SANDRUN, "process", "poll", "--session-id", session], env=env,
            stdout=subprocess.DEVNULL, check=True), max(20, args.runs // 10))
        print(f"process poll round trip, median of {args.runs}:")
        print(f"  HTTP on a kept-alive unix socket: {raw:7.3f} ms  (GET /healthz floor {floor:.3f} ms)")
        print(f"  one-shot `sandrun process poll`:  {cli:7.3f} ms")
        subprocess.run([SANDRUN, "process", "kill", "--session-id", session], env=env,
                       stdout=subprocess.DEVNULL)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=20)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
