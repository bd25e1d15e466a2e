// The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json)
// against POST /mcp of `sandrun serve --listen 127.0.0.1:0`, in its normal configuration:
// server-initialize, ping and dns-rebinding-protection must pass.
//
// The suite cannot send a bearer token, and sandrun asks every TCP request for one. So the suite
// talks to a loopback proxy started here (127.0.0.1:0) that forwards each request verbatim to
// sandrun's TCP listener: the method, the path, every header as received (Host and Origin
// included, so the DNS-rebinding checks reach sandrun unchanged) and the body; it adds only
// `Authorization: Bearer <token>`, and streams the response back as it comes (SSE included).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { SandrunHome } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const CONFORMANCE = path.join(here, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const SCENARIOS = ['server-initialize', 'ping', 'dns-rebinding-protection'];

// The proxy described above, to `target` (http://127.0.0.1:PORT); resolves to {server, url}.
function startProxy(target, token) {
  const to = new URL(target);
  const server = http.createServer((req, res) => {
    const headers = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const [name, value] = [req.rawHeaders[i], req.rawHeaders[i + 1]];
      if (name.toLowerCase() !== 'authorization') headers.push(name, value);
    }
    headers.push('Authorization', `Bearer ${token}`);
    const upstream = http.request({
      host: to.hostname, port: to.port, method: req.method, path: req.url, headers,
      setHost: false, agent: false,
    }, (up) => {
      res.writeHead(up.statusCode, up.statusMessage, up.rawHeaders);
      up.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    res.on('close', () => upstream.destroy()); // the client went away: so does the upstream request
    req.pipe(upstream);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({ server, url: `http://127.0.0.1:${server.address().port}` });
    });
  });
}

// Every checks.json below `dir`, concatenated.
function checksBelow(dir) {
  const checks = [];
  for (const entry of fs.readdirSync(dir, { recursive: true })) {
    if (path.basename(entry) === 'checks.json') {
      checks.push(...JSON.parse(fs.readFileSync(path.join(dir, entry), 'utf8')));
    }
  }
  return checks;
}

// Runs one scenario with the pinned node: {code, output, checks}.
function runScenario(url, scenario, outputDir) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath,
      [CONFORMANCE, 'server', '--url', url, '--scenario', scenario, '--output-dir', outputDir],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } });
    let output = '';
    child.stdout.on('data', (c) => (output += c));
    child.stderr.on('data', (c) => (output += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output, checks: checksBelow(outputDir) });
    });
  });
}

describe('MCP conformance suite against POST /mcp', () => {
  let home;
  let proxy;

  before(async () => {
    home = await SandrunHome.create({ extra: { tenants: { acme: {} } } });
    const token = home.createToken({ tenant: 'acme', role: 'agent' });
    const served = await home.startServe(['--listen', '127.0.0.1:0']);
    proxy = await startProxy(served.url, token);
  });
  after(async () => {
    proxy?.server.closeAllConnections();
    await new Promise((resolve) => (proxy ? proxy.server.close(resolve) : resolve()));
    await home?.cleanup();
  });

  for (const scenario of SCENARIOS) {
    test(scenario, { timeout: 150000 }, async () => {
      const dir = fs.mkdtempSync(path.join(home.home, `conformance-${scenario}-`));
      const r = await runScenario(`${proxy.url}/mcp`, scenario, dir);
      const failed = r.checks.filter((c) => c.status === 'FAILURE');
      assert.ok(r.checks.length > 0, `no checks were recorded:\n${r.output}`);
      assert.deepEqual(failed.map((c) => `${c.id}: ${c.errorMessage}`), [], r.output);
      assert.ok(r.checks.some((c) => c.status === 'SUCCESS'), r.output);
      assert.equal(r.code, 0, r.output);
    });
  }
});
