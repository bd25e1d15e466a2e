// POST /mcp on `sandrun serve --listen 127.0.0.1:0` (Streamable HTTP) with the official SDK client
// and raw requests: bearer tokens (401 without or with a wrong one), Origin checks (403), GET 405,
// tools over JSON and SSE responses with progress, a closed SSE stream that kills its command,
// and the unix socket (no token: the server's own user).
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';

import { SandrunHome, dockerSkip, show, waitFor } from './harness.mjs';

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-http', version: '1' } },
};

// One HTTP request (TCP `url`, or a unix `socketPath`): {status, headers, body}.
function request(url, { method = 'POST', headers = {}, body, socketPath } = {}) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({
      socketPath, host: u.hostname, port: u.port, path: u.pathname, method, headers, timeout: 30000,
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: text }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: timed out`)));
    req.on('error', reject);
    req.end(body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body));
  });
}

const JSON_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

// The JSON-RPC messages of a response body: one JSON object, or the data lines of an SSE stream.
function messagesOf(res) {
  if (/^text\/event-stream/.test(res.headers['content-type'] || '')) {
    return res.body.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
  }
  return [JSON.parse(res.body)];
}

const skip = await dockerSkip();

describe('POST /mcp (Streamable HTTP)', { skip }, () => {
  let home;
  let url;
  let token;
  const auth = () => ({ Authorization: `Bearer ${token}` });

  before(async () => {
    home = await SandrunHome.create({ extra: { tenants: { acme: {} } } });
    token = home.createToken({ tenant: 'acme', role: 'agent' });
    const served = await home.startServe(['--listen', '127.0.0.1:0']);
    assert.match(served.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    url = `${served.url}/mcp`;
  });
  after(async () => {
    await home?.cleanup();
  });

  test('with a bearer token the SDK client lists the tools and runs exec', async () => {
    const client = await home.httpClient(url, { headers: auth() });
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['apply_patch', 'exec', 'policy_check', 'process']);
    const r = await client.callTool({ name: 'exec', arguments: { command: 'echo hello' } });
    assert.equal(r.structuredContent?.status, 'completed', show(r));
    assert.equal(r.structuredContent.exitCode, 0);
    assert.equal(r.structuredContent.output, 'hello', 'OpenClaw trims the trailing newline');
    assert.equal(r.structuredContent.host, 'sandbox');
    const failed = await client.callTool({ name: 'exec', arguments: { command: 'exit 3' } });
    assert.equal(failed.structuredContent?.status, 'completed', show(failed));  // OpenClaw's
    assert.equal(failed.structuredContent.exitCode, 3);
    assert.equal(failed.isError ?? false, false);
    await client.close();
  });

  test('progress notifications arrive on the SSE response', async () => {
    const client = await home.httpClient(url, { headers: auth() });
    const progress = [];
    const r = await client.callTool(
      { name: 'exec', arguments: { command: 'for i in 1 2 3 4 5; do echo beat-$i; sleep 0.3; done' } },
      undefined,
      { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true, timeout: 30000 },
    );
    assert.equal(r.structuredContent?.status, 'completed', show(r));
    assert.ok(progress.some((p) => /beat-[1-5]/.test(p.message || '')), `progress: ${show(progress)}`);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress);
    await client.close();
  });

  test('no token or a wrong token: 401, and the SDK cannot connect', async () => {
    await assert.rejects(home.httpClient(url), (e) => {
      assert.equal(e.code, 401, String(e));
      return true;
    });
    const wrong = { Authorization: `Bearer sandrun_${'0'.repeat(64)}` };
    await assert.rejects(home.httpClient(url, { headers: wrong }), (e) => {
      assert.equal(e.code, 401, String(e));
      return true;
    });
    const raw = await request(url, { headers: JSON_HEADERS, body: INIT });
    assert.equal(raw.status, 401, raw.body);
    assert.match(raw.headers['www-authenticate'] || '', /^Bearer/);
  });

  test('Origin: a foreign one gets 403, a localhost one is served; GET is 405', async () => {
    const evil = await request(url, {
      headers: { ...JSON_HEADERS, ...auth(), Origin: 'http://evil.example.com' }, body: INIT,
    });
    assert.equal(evil.status, 403, evil.body);
    for (const origin of ['http://localhost:5173', 'https://127.0.0.1', 'http://[::1]:8080']) {
      const ok = await request(url, { headers: { ...JSON_HEADERS, ...auth(), Origin: origin }, body: INIT });
      assert.equal(ok.status, 200, `${origin}: ${ok.body}`);
      assert.equal(messagesOf(ok)[0].result?.protocolVersion, '2025-11-25', ok.body);
    }
    const get = await request(url, { method: 'GET', headers: { Accept: 'text/event-stream', ...auth() } });
    assert.equal(get.status, 405, get.body);
  });

  // The 2026-07-28 revision over HTTP (basic/transports/streamable-http.mdx): MCP-Protocol-Version,
  // Mcp-Method and Mcp-Name mirror the body; a mismatch or a missing one is 400 HeaderMismatch
  // (-32020), an unsupported version 400 -32022, an unknown method 404 -32601.
  test('modern era: headers mirror the body, mismatches are 400 -32020', async () => {
    const meta = (version = '2026-07-28') => ({
      'io.modelcontextprotocol/protocolVersion': version,
      'io.modelcontextprotocol/clientInfo': { name: 'raw-http', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    });
    const post = (headers, body) => request(url, {
      headers: { ...JSON_HEADERS, ...auth(), 'MCP-Protocol-Version': '2026-07-28', ...headers },
      body: { jsonrpc: '2.0', ...body },
    });
    const one = (res) => messagesOf(res)[0];

    const discover = await post({ 'Mcp-Method': 'server/discover' },
      { id: 1, method: 'server/discover', params: { _meta: meta() } });
    assert.equal(discover.status, 200, discover.body);
    assert.equal(one(discover).result?.resultType, 'complete', discover.body);
    assert.ok(one(discover).result.supportedVersions.includes('2026-07-28'), discover.body);

    const exec = (command) => ({ name: 'exec', arguments: { command }, _meta: meta() });
    const call = await post({ 'Mcp-Method': 'tools/call', 'Mcp-Name': 'exec' },
      { id: 2, method: 'tools/call', params: exec('echo modern-http') });
    assert.equal(call.status, 200, call.body);
    const called = messagesOf(call).find((m) => m.id === 2);
    assert.equal(called?.result?.resultType, 'complete', call.body);
    assert.equal(called.result.structuredContent?.output?.trimEnd(), 'modern-http', call.body);

    const refusals = [
      { why: 'Mcp-Name differs from params.name', code: -32020, status: 400,
        headers: { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'process' },
        body: { id: 3, method: 'tools/call', params: exec('echo no') } },
      { why: 'no Mcp-Name on tools/call', code: -32020, status: 400, headers: { 'Mcp-Method': 'tools/call' },
        body: { id: 4, method: 'tools/call', params: exec('echo no') } },
      { why: 'Mcp-Method differs from method', code: -32020, status: 400,
        headers: { 'Mcp-Method': 'server/discover' },
        body: { id: 5, method: 'tools/list', params: { _meta: meta() } } },
      { why: 'no Mcp-Method', code: -32020, status: 400, headers: {},
        body: { id: 6, method: 'tools/list', params: { _meta: meta() } } },
      { why: 'MCP-Protocol-Version differs from _meta', code: -32020, status: 400,
        headers: { 'Mcp-Method': 'tools/list', 'MCP-Protocol-Version': '2025-11-25' },
        body: { id: 7, method: 'tools/list', params: { _meta: meta() } } },
      { why: 'an unsupported version', code: -32022, status: 400,
        headers: { 'Mcp-Method': 'tools/list', 'MCP-Protocol-Version': '1900-01-01' },
        body: { id: 8, method: 'tools/list', params: { _meta: meta('1900-01-01') } } },
      { why: 'an unknown method', code: -32601, status: 404, headers: { 'Mcp-Method': 'no/such' },
        body: { id: 9, method: 'no/such', params: { _meta: meta() } } },
    ];
    for (const r of refusals) {
      const res = await post(r.headers, r.body);
      assert.equal(res.status, r.status, `${r.why}: ${res.status} ${res.body}`);
      const reply = one(res);
      assert.equal(reply.error?.code, r.code, `${r.why}: ${res.body}`);
      assert.equal(reply.id, r.body.id, `${r.why}: ${res.body}`);
    }
  });

  test('the unix socket serves /mcp to the server user without a token', async () => {
    const init = await request('http://localhost/mcp', {
      socketPath: home.socket, headers: JSON_HEADERS, body: INIT,
    });
    assert.equal(init.status, 200, init.body);
    const session = init.headers['mcp-session-id'];
    const call = await request('http://localhost/mcp', {
      socketPath: home.socket,
      headers: {
        ...JSON_HEADERS,
        'MCP-Protocol-Version': '2025-11-25',
        ...(session ? { 'Mcp-Session-Id': session } : {}),
      },
      body: {
        jsonrpc: '2.0', id: 2, method: 'tools/call',
        params: { name: 'exec', arguments: { command: 'echo via-socket' } },
      },
    });
    assert.equal(call.status, 200, call.body);
    const reply = messagesOf(call).find((m) => m.id === 2);
    assert.equal(reply?.result?.structuredContent?.output?.trimEnd(), 'via-socket', call.body);
  });

  test('closing the SSE response of a tools/call kills its command', async () => {
    const client = await home.httpClient(url, { headers: auth() });
    const marker = `300.${Math.floor(Math.random() * 9000) + 1000}`;
    const count = async () => {
      const command = `ps -o args | grep -c '[s]leep ${marker}' || true`;
      const r = await client.callTool({ name: 'exec', arguments: { command } });
      assert.equal(r.structuredContent?.status, 'completed', show(r));
      return Number(r.structuredContent.output.trim());
    };
    // A raw initialize: its session (if the server keeps one) for the raw tools/call.
    const init = await request(url, { headers: { ...JSON_HEADERS, ...auth() }, body: INIT });
    assert.equal(init.status, 200, init.body);
    const session = init.headers['mcp-session-id'];
    const u = new URL(url);
    const body = JSON.stringify({
      jsonrpc: '2.0', id: 7, method: 'tools/call',
      params: { name: 'exec', arguments: { command: `sleep ${marker}` }, _meta: { progressToken: 'p7' } },
    });
    let response = null;
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname, method: 'POST',
      headers: {
        ...JSON_HEADERS, ...auth(), 'MCP-Protocol-Version': '2025-11-25',
        ...(session ? { 'Mcp-Session-Id': session } : {}),
      },
    }, (res) => {
      response = { status: res.statusCode, type: res.headers['content-type'], body: '' };
      res.setEncoding('utf8');
      res.on('data', (c) => (response.body += c));
    });
    req.on('error', () => {}); // destroyed below
    req.end(body);
    await waitFor(`sleep ${marker} to run`, async () => (await count()) >= 1);
    await waitFor('the SSE response headers', () => response, { timeoutMs: 10000 });
    assert.equal(response.status, 200, show(response));
    assert.match(response.type || '', /^text\/event-stream/, show(response));
    assert.ok(!/"id":7/.test(response.body), `answered before it was cut: ${response.body}`);
    req.destroy();
    await waitFor(`no sleep ${marker} left`, async () => (await count()) === 0,
      { timeoutMs: 10000, intervalMs: 250 });
    await client.close();
  });

  test('a cancel notification from another client sharing the token cancels nothing', async () => {
    // Over HTTP only the closed stream cancels: clients of one token share request ids.
    const call = request(url, {
      headers: { ...JSON_HEADERS, ...auth() },
      body: {
        jsonrpc: '2.0', id: 11, method: 'tools/call',
        params: { name: 'exec', arguments: { command: 'sleep 1.5; echo survived-$((40+2))' } },
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const cancel = await request(url, {
      headers: { ...JSON_HEADERS, ...auth() },
      body: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 11 } },
    });
    assert.equal(cancel.status, 202, cancel.body);
    const res = await call;
    const reply = messagesOf(res).find((m) => m.id === 11);
    assert.equal(reply?.result?.structuredContent?.output, 'survived-42', res.body);
  });
});

describe('POST /mcp while the server stops', { skip }, () => {
  test('a call in flight finishes and is answered (SIGTERM is no client hang-up)', async () => {
    const home = await SandrunHome.create({ extra: { tenants: { acme: {} } } });
    try {
      const token = home.createToken({ tenant: 'acme', role: 'agent' });
      const served = await home.startServe(['--listen', '127.0.0.1:0']);
      const call = request(`${served.url}/mcp`, {
        headers: { 'Content-Type': 'application/json', Accept: 'application/json',
          Authorization: `Bearer ${token}` },
        body: {
          jsonrpc: '2.0', id: 3, method: 'tools/call',
          params: { name: 'exec', arguments: { command: 'sleep 1; echo finished-$((1+1))' } },
        },
      });
      await new Promise((resolve) => setTimeout(resolve, 400));
      const stopping = home.stopServe();
      const res = await call;
      assert.equal(res.status, 200, res.body);
      const reply = JSON.parse(res.body);
      assert.equal(reply.result?.structuredContent?.output, 'finished-2', res.body);
      const exit = await stopping;
      assert.equal(exit.code, 0, show(exit));
    } finally {
      await home.cleanup();
    }
  });
});
