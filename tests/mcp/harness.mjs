// The MCP tests' harness: a private SANDRUN_HOME per test file (like tests/e2e/sandrun_home.h),
// the sandrun binary under test (SANDRUN_BINARY, set by ctest), `sandrun serve` and `sandrun mcp`
// processes, the official SDK client on stdio or Streamable HTTP, a raw line client for stdio,
// and the clean-up: every process started here is stopped and every container of the home's
// instance is removed through dockerd's API (label sandrun.instance=<instance-id>), even when a
// test failed.
//
// Pattern of use (node --test):
//   const home = await SandrunHome.create({ mcp: { maxBlockMs: 1500 } });
//   after(() => home.cleanup());
//   const client = await home.stdioClient();
//   const result = await client.callTool({ name: 'exec', arguments: { command: 'echo hi' } });
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(here, '../..');
export const SANDRUN = process.env.SANDRUN_BINARY || path.join(ROOT, 'build/sandrun');
export const DOCKER_SOCK = process.env.DOCKER_SOCK || '/var/run/docker.sock';
export const MINIMAL_IMAGE = 'sandrun-sandbox:minimal';

// The 2026-07-28 revision's per-request _meta keys.
export const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_INFO_KEY = 'io.modelcontextprotocol/clientInfo';
export const CLIENT_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Calls `fn` until it returns a truthy value (returned) or `timeoutMs` passed (throws with the
// last value seen, described by `what`).
export async function waitFor(what, fn, { timeoutMs = 20000, intervalMs = 100 } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
    }
    await sleep(intervalMs);
  }
}

// This process's PATH without the entries others cannot search (tests/e2e/sandrun_home.h
// PublicPath: a root runner's host commands run as nobody on the PATH they are given).
export function publicPath() {
  const dirs = (process.env.PATH || '/usr/local/bin:/usr/bin:/bin').split(':');
  return dirs
    .filter((dir) => {
      if (!dir.startsWith('/')) return false;
      for (let p = dir; p && p !== '/'; p = path.dirname(p)) {
        try {
          if ((fs.statSync(p).mode & 0o001) === 0) return false;
        } catch {
          return false;
        }
      }
      return true;
    })
    .join(':');
}

// One request to dockerd on its unix socket: {status, body (parsed JSON or text)}.
export function docker(method, apiPath, { timeoutMs = 30000 } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { socketPath: DOCKER_SOCK, method, path: apiPath, headers: { Host: 'docker' }, timeout: timeoutMs },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => {
          let body = text;
          try {
            body = text ? JSON.parse(text) : null;
          } catch {}
          resolve({ status: res.statusCode, body });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`docker ${method} ${apiPath}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

// Why Docker cannot be used, or null. Without an engine a test file is skipped when run by hand,
// and fails under CI=true (DESIGN.md: a test that needs Docker fails in CI).
export async function dockerUnavailable() {
  try {
    const ping = await docker('GET', '/_ping', { timeoutMs: 5000 });
    if (ping.status !== 200) return `dockerd answered /_ping with ${ping.status}`;
    const image = await docker('GET', `/images/${encodeURIComponent(MINIMAL_IMAGE)}/json`);
    if (image.status !== 200) return `image ${MINIMAL_IMAGE} missing (bash scripts/setup builds it)`;
    return null;
  } catch (e) {
    return `no Docker engine on ${DOCKER_SOCK}: ${e.message}`;
  }
}

// The `skip` option of a test file's describe(): false, or the reason (throws under CI=true).
export async function dockerSkip() {
  const why = await dockerUnavailable();
  if (!why) return false;
  if (process.env.CI === 'true') throw new Error(`Docker engine required in CI: ${why}`);
  return `${why}; CI=true makes this a failure`;
}

// Removes every container labelled sandrun.instance=<id> (forced, with its volumes); returns how
// many there were.
export async function removeInstanceContainers(instanceId) {
  const filters = encodeURIComponent(JSON.stringify({ label: [`sandrun.instance=${instanceId}`] }));
  const list = await docker('GET', `/containers/json?all=1&filters=${filters}`);
  if (list.status !== 200 || !Array.isArray(list.body)) {
    throw new Error(`listing containers: ${list.status} ${JSON.stringify(list.body)}`);
  }
  for (const c of list.body) {
    const removed = await docker('DELETE', `/containers/${c.Id}?force=1&v=1`);
    if (removed.status !== 204 && removed.status !== 404) {
      throw new Error(`removing container ${c.Id}: ${removed.status} ${JSON.stringify(removed.body)}`);
    }
  }
  return list.body.length;
}

// The mount points at or below `dir`, deepest first (scratch images stay mounted on the host
// while a scope has a container: tests/support/mounts.h).
function mountPointsBelow(dir) {
  const points = [];
  for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const point = line.split(' ')[4];
    if (point && (point === dir || point.startsWith(dir + '/'))) points.push(point);
  }
  return points.sort((a, b) => b.length - a.length);
}

// The text of a tool result's structuredContent, with its content text as a fallback.
export function outputOf(result) {
  const sc = result?.structuredContent;
  if (sc && typeof sc.output === 'string') return sc.output;
  return (result?.content || []).map((c) => c.text || '').join('');
}

// Every string in a value (structuredContent, content), to find text whatever field holds it.
export function strings(value, out = []) {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => strings(v, out));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => strings(v, out));
  return out;
}

// A JSON dump of a result for assertion messages (long outputs cut).
export function show(value) {
  const text = JSON.stringify(value);
  return text && text.length > 3000 ? text.slice(0, 1500) + ' ... ' + text.slice(-1500) : text;
}

// A child process whose stderr is kept (for assertion messages) and which cleanup() stops.
class Child {
  constructor(proc, name) {
    this.proc = proc;
    this.name = name;
    this.stderr = '';
    this.exited = new Promise((resolve) => {
      proc.on('exit', (code, signal) => resolve({ code, signal }));
    });
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (chunk) => {
      this.stderr += chunk;
      if (this.stderr.length > 1 << 20) this.stderr = this.stderr.slice(-(1 << 19));
    });
  }

  get running() {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  // SIGTERM, then SIGKILL after `graceMs`; the exit {code, signal}.
  async stop(graceMs = 10000) {
    if (!this.running) return this.exited;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    const exit = await this.exited;
    clearTimeout(timer);
    return exit;
  }
}

// One JSON-RPC message per line over a spawned `sandrun mcp`'s stdin/stdout, for the tests that
// must send what the SDK would never send (malformed JSON, huge lines, unknown methods).
export class LineClient {
  constructor(child) {
    this.child = child;
    this.messages = []; // every message received, in order
    this.unparsed = []; // stdout lines that were not JSON
    this.waiters = new Set();
    this.ended = false; // stdout closed: nothing more will come
    const lines = readline.createInterface({ input: child.proc.stdout, crlfDelay: Infinity });
    lines.on('line', (line) => {
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        this.unparsed.push(line);
        return;
      }
      this.messages.push(msg);
      for (const w of [...this.waiters]) w();
    });
    lines.on('close', () => {
      this.ended = true;
      for (const w of [...this.waiters]) w();
    });
    child.proc.stdin.on('error', () => {}); // a server that exits while we write: seen as exit
  }

  // Writes one line (an object is JSON-encoded); resolves once it is handed to the pipe.
  send(message) {
    const line = typeof message === 'string' ? message : JSON.stringify(message);
    return new Promise((resolve, reject) => {
      if (this.ended) {
        reject(new Error(`sandrun mcp has exited; stderr: ${this.child.stderr.slice(-2000)}`));
        return;
      }
      this.child.proc.stdin.write(line + '\n', (err) => (err ? reject(err) : resolve()));
    });
  }

  // The first message received from index `from` on that satisfies `pred`, within `timeoutMs`;
  // rejects at once when the server's stdout ends first.
  next(pred, { from = 0, timeoutMs = 20000 } = {}) {
    return new Promise((resolve, reject) => {
      const fail = (why) => {
        done();
        reject(new Error(`${why}; received: ${show(this.messages.slice(from))}; ` +
          `stderr: ${this.child.stderr.slice(-2000)}`));
      };
      const check = () => {
        const found = this.messages.slice(from).find(pred);
        if (found) {
          done();
          resolve(found);
        } else if (this.ended) {
          fail('no matching message: sandrun mcp closed its stdout');
        }
      };
      const timer = setTimeout(() => fail(`no matching message within ${timeoutMs} ms`), timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  // Sends a request and waits for the response with its id.
  async request(message, opts = {}) {
    const from = this.messages.length;
    await this.send(message);
    return this.next((m) => m.id === message.id && ('result' in m || 'error' in m), { from, ...opts });
  }
}

export class SandrunHome {
  // A private home (/tmp/sandrun-e2e-XXXXXX, 0700), its workspace (<home>-ws) and config.json:
  // the sandbox on the minimal image, `mcp` members (maxBlockMs, ...) and `extra` top-level ones.
  static async create({ mcp, extra } = {}) {
    const self = new SandrunHome();
    self.home = fs.mkdtempSync(path.join('/tmp', 'sandrun-e2e-'));
    fs.chmodSync(self.home, 0o700);
    self.workspace = self.home + '-ws';
    fs.mkdirSync(self.workspace, { mode: 0o777 });
    fs.chmodSync(self.workspace, 0o777);
    self.children = [];
    self.clients = [];
    self.writeConfig({ mcp, extra });
    return self;
  }

  writeConfig({ mcp, extra } = {}) {
    const config = { sandbox: { docker: { image: MINIMAL_IMAGE } }, ...(extra || {}) };
    if (mcp) config.mcp = mcp;
    fs.writeFileSync(path.join(this.home, 'config.json'), JSON.stringify(config, null, 2));
  }

  env(extra = {}) {
    return { SANDRUN_HOME: this.home, PATH: publicPath(), HOME: process.env.HOME || '/root', ...extra };
  }

  // The argv of `sandrun --workspace <ws> ARGS...`.
  argv(args) {
    return ['--workspace', this.workspace, ...args];
  }

  // Runs `sandrun ARGS...` to completion: {code, stdout, stderr}.
  run(args, { input, timeoutMs = 60000 } = {}) {
    const r = spawnSync(SANDRUN, this.argv(args), {
      env: this.env(),
      input: input ?? '',
      encoding: 'utf8',
      timeout: timeoutMs,
      maxBuffer: 64 << 20,
    });
    if (r.error) throw r.error;
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  // Starts a long-lived `sandrun ARGS...` that cleanup() stops.
  spawn(args, { stdin = 'ignore', env = {} } = {}) {
    const proc = spawn(SANDRUN, this.argv(args), {
      env: this.env(env),
      stdio: [stdin, 'pipe', 'pipe'],
    });
    const child = new Child(proc, args.join(' '));
    this.children.push(child);
    return child;
  }

  get socket() {
    return path.join(this.home, 'sandrun.sock');
  }

  instanceId() {
    try {
      return fs.readFileSync(path.join(this.home, 'instance-id'), 'utf8').trim();
    } catch {
      return '';
    }
  }

  // GET /healthz on the server's unix socket answers 200.
  healthy() {
    return new Promise((resolve) => {
      const req = http.request({ socketPath: this.socket, path: '/healthz', timeout: 2000 }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('error', () => resolve(false));
      req.on('timeout', () => req.destroy());
      req.end();
    });
  }

  // Starts `sandrun serve ARGS...` and waits until it answers on its socket and, with --listen,
  // until it printed "sandrun: listening on URL". {child, url, port}.
  async startServe(args = []) {
    const child = this.spawn(['serve', ...args]);
    this.server = child;
    const listen = args.includes('--listen');
    let url = null;
    await waitFor('sandrun serve to come up', async () => {
      if (!child.running) throw new Error(`sandrun serve exited: ${child.stderr}`);
      if (listen) {
        const m = /sandrun: listening on (\S+)\n/.exec(child.stderr);
        if (!m) return false;
        url = m[1];
      }
      return this.healthy();
    }, { timeoutMs: 20000, intervalMs: 50 });
    const port = url ? Number(new URL(url).port) : 0;
    return { child, url, port };
  }

  // SIGTERM to the server; it must exit 0 (within 10 s).
  async stopServe() {
    if (!this.server) return null;
    const exit = await this.server.stop();
    this.server = null;
    return exit;
  }

  // `sandrun token create --tenant T --role R`: the secret.
  createToken({ tenant = '', role = 'agent', name } = {}) {
    const args = ['token', 'create', '--tenant', tenant, '--role', role];
    if (name) args.push('--name', name);
    const r = this.run(args);
    if (r.code !== 0) throw new Error(`token create: ${r.code} ${r.stderr}`);
    const secret = r.stdout.split('\n')[0].trim();
    if (!/^sandrun_[0-9a-f]{64}$/.test(secret)) throw new Error(`token create printed: ${r.stdout}`);
    return secret;
  }

  // The SDK client connected over stdio to `sandrun [FLAGS...] mcp`. The transport keeps the
  // server's stderr in `client.stderrText()` for assertion messages.
  async stdioClient({ flags = [], env = {}, name = 'sandrun-mcp-test' } = {}) {
    const transport = new StdioClientTransport({
      command: SANDRUN,
      args: this.argv([...flags, 'mcp']),
      env: this.env(env),
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.setEncoding('utf8');
    transport.stderr?.on('data', (chunk) => (stderr += chunk));
    const client = new Client({ name, version: '1.0.0' });
    client.errors = [];
    client.onerror = (e) => client.errors.push(e);
    await client.connect(transport);
    client.stderrText = () => stderr.slice(-4000);
    this.clients.push(client);
    return client;
  }

  // The SDK client over Streamable HTTP to `url` (…/mcp) with `headers` on every request.
  async httpClient(url, { headers = {}, name = 'sandrun-mcp-test' } = {}) {
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
    const client = new Client({ name, version: '1.0.0' });
    client.errors = [];
    client.onerror = (e) => client.errors.push(e);
    try {
      await client.connect(transport);
    } catch (e) {
      await transport.close().catch(() => {});
      throw e;
    }
    this.clients.push(client);
    return client;
  }

  // A raw line client on a new `sandrun [FLAGS...] mcp`.
  lineClient({ flags = [] } = {}) {
    return new LineClient(this.spawn([...flags, 'mcp'], { stdin: 'pipe' }));
  }

  // Closes clients, stops every process started here, removes the instance's containers and
  // the mounts below the home, then the home and the workspace. Throws (after cleaning all it
  // can) when something could not be removed.
  async cleanup() {
    const problems = [];
    for (const client of this.clients) await client.close().catch(() => {});
    for (const child of this.children) await child.stop(5000).catch(() => {});
    const id = this.instanceId();
    if (id) {
      try {
        await removeInstanceContainers(id);
      } catch (e) {
        problems.push(e.message);
      }
    }
    for (const point of mountPointsBelow(this.home)) {
      const r = spawnSync('umount', ['-l', point], { encoding: 'utf8' });
      if (r.status !== 0) problems.push(`umount -l ${point}: ${r.stderr}`);
    }
    for (const dir of [this.home, this.workspace]) {
      try {
        fs.rmSync(dir, { recursive: true, force: true });
      } catch (e) {
        problems.push(`removing ${dir}: ${e.message}`);
      }
    }
    if (problems.length) throw new Error(`clean-up: ${problems.join('; ')}`);
  }
}

// A unique word for markers in commands and their output.
export function uniqueWord(prefix) {
  return `${prefix}${process.pid}x${Math.floor(Math.random() * 1e9)}`;
}

