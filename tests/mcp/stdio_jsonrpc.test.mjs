// `sandrun mcp` spoken to with raw JSON-RPC lines (what no SDK would send): malformed JSON, non-
// requests, unknown methods, bad params and a 5 MiB line each get their JSON-RPC error and the
// server keeps serving; notifications get no answer; stdin EOF ends it. Both protocol eras: the
// legacy initialize (2025-06-18, 2025-11-25) and the stateless 2026-07-28 revision (no
// initialize; _meta on every request; server/discover; -32022 for an unsupported version).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import {
  CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY, SandrunHome, dockerSkip, show,
} from './harness.mjs';

const MODERN = '2026-07-28';
const meta = (version = MODERN) => ({
  [PROTOCOL_VERSION_KEY]: version,
  [CLIENT_INFO_KEY]: { name: 'raw-lines', version: '1.0.0' },
  [CLIENT_CAPABILITIES_KEY]: {},
});

// `id`: the id the error must carry, or a list of the acceptable ones.
function assertError(reply, code, id, what) {
  assert.equal(reply.jsonrpc, '2.0', `${what}: ${show(reply)}`);
  assert.ok((Array.isArray(id) ? id : [id]).includes(reply.id), `${what}: id ${show(reply)}`);
  assert.equal(reply.error?.code, code, `${what}: ${show(reply)}`);
  assert.equal(typeof reply.error.message, 'string', `${what}: ${show(reply)}`);
  assert.ok(!('result' in reply), `${what}: ${show(reply)}`);
}

const dockerSkipReason = await dockerSkip();

describe('sandrun mcp: raw JSON-RPC over stdio', () => {
  let home;

  before(async () => {
    home = await SandrunHome.create();
  });
  after(async () => {
    await home?.cleanup();
  });

  for (const version of ['2025-06-18', '2025-11-25']) {
    test(`legacy era ${version}: initialize, then tools/list`, async () => {
      const c = home.lineClient();
      const init = await c.request({
        jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      });
      assert.equal(init.result?.protocolVersion, version, show(init));
      assert.ok(init.result.capabilities?.tools, show(init));
      assert.equal(typeof init.result.serverInfo?.name, 'string', show(init));
      await c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const list = await c.request({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      assert.equal(list.result?.tools?.length, 4, show(list));
      c.child.proc.stdin.end();
      const exit = await c.child.exited;
      assert.deepEqual(exit, { code: 0, signal: null }, `stdin EOF ends the server: ${c.child.stderr}`);
    });
  }

  test('malformed input gets JSON-RPC errors and the server keeps serving', async () => {
    const c = home.lineClient();
    const init = await c.request({
      jsonrpc: '2.0', id: 0, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    assert.ok(init.result, show(init));
    await c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    let pingId = 1000;
    const pingAnswers = async () => {
      const id = pingId++;
      const pong = await c.request({ jsonrpc: '2.0', id, method: 'ping' });
      assert.deepEqual(pong, { jsonrpc: '2.0', id, result: {} });
    };
    await pingAnswers();

    // Each bad line, then the error it gets (read from what arrives after it was sent).
    const cases = [
      { line: '{"jsonrpc":"2.0","id":1,"method":"ping"', code: -32700, id: null, what: 'cut JSON' },
      { line: 'not json at all', code: -32700, id: null, what: 'not JSON' },
      { line: '42', code: -32600, id: null, what: 'a number' },
      { line: '"ping"', code: -32600, id: null, what: 'a string' },
      // An invalid request whose id can be read answers with it (or null: JSON-RPC 2.0 §5).
      { line: '{"jsonrpc":"2.0","id":3}', code: -32600, id: [3, null], what: 'no method' },
      { line: '{"jsonrpc":"1.0","id":4,"method":"ping"}', code: -32600, id: [4, null], what: 'jsonrpc 1.0' },
      { line: '{"jsonrpc":"2.0","id":5,"method":"no/such/method"}', code: -32601, id: 5,
        what: 'unknown method' },
      { line: '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"arguments":{}}}',
        code: -32602, id: 6, what: 'tools/call without a name' },
      { line: '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"no_such","arguments":{}}}',
        code: -32602, id: 7, what: 'an unknown tool' },
      { line: '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"exec","arguments":"echo"}}',
        code: -32602, id: 8, what: 'arguments not an object' },
      { line: '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":[1]}', code: -32602, id: 9,
        what: 'params not an object' },
    ];
    for (const k of cases) {
      const from = c.messages.length;
      await c.send(k.line);
      const reply = await c.next((m) => 'error' in m || 'result' in m, { from });
      assertError(reply, k.code, k.id, k.what);
      await pingAnswers();
    }

    // A notification (no id) is never answered, even an unknown one: the next message is the
    // ping's answer.
    const from = c.messages.length;
    await c.send({ jsonrpc: '2.0', method: 'notifications/no-such-thing' });
    await pingAnswers();
    assert.equal(c.messages.length - from, 1, `answered a notification: ${show(c.messages.slice(from))}`);

    // A 5 MiB line (over the 4 MiB limit): an error, and the server goes on.
    const big = `{"jsonrpc":"2.0","id":11,"method":"ping","params":{"pad":"${'x'.repeat(5 << 20)}"}}`;
    const before5 = c.messages.length;
    await c.send(big);
    const tooBig = await c.next((m) => 'error' in m || 'result' in m, { from: before5, timeoutMs: 30000 });
    assert.ok(tooBig.error, `a 5 MiB line was served: ${show(tooBig)}`);
    assert.ok([-32700, -32600].includes(tooBig.error.code), show(tooBig));
    assert.ok(tooBig.id === null || tooBig.id === 11, show(tooBig));
    await pingAnswers();
    assert.deepEqual(c.unparsed, [], 'every stdout line is JSON');

    c.child.proc.stdin.end();
    const exit = await c.child.exited;
    assert.equal(exit.code, 0, c.child.stderr);
  });

  describe(`modern era ${MODERN} (no initialize)`, () => {
    let c;
    before(() => {
      c = home.lineClient();
    });
    after(async () => {
      c.child.proc.stdin.end();
      await c.child.exited;
    });

    test('server/discover', async () => {
      const r = await c.request({
        jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta() },
      });
      assert.equal(r.result?.resultType, 'complete', show(r));
      assert.ok(r.result.supportedVersions?.includes(MODERN), show(r));
      assert.ok(r.result.capabilities?.tools, show(r));
    });

    test('tools/list with _meta', async () => {
      const r = await c.request({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: meta() } });
      assert.equal(r.result?.resultType, 'complete', show(r));
      assert.deepEqual(r.result.tools.map((t) => t.name), ['exec', 'process', 'apply_patch', 'policy_check'],
        'deterministic order');
      // A CacheableResult (2026-07-28 changelog, minor change 5).
      assert.equal(typeof r.result.ttlMs, 'number', show(r.result.ttlMs));
      assert.ok(['public', 'private'].includes(r.result.cacheScope), show(r.result.cacheScope));
    });

    test('tools/call exec with _meta', { skip: dockerSkipReason }, async () => {
      const r = await c.request({
        jsonrpc: '2.0', id: 3, method: 'tools/call',
        params: { name: 'exec', arguments: { command: 'echo modern' }, _meta: meta() },
      }, { timeoutMs: 60000 });
      assert.equal(r.result?.resultType, 'complete', show(r));
      assert.equal(r.result.structuredContent?.status, 'completed', show(r));
      assert.equal(r.result.structuredContent.output.trimEnd(), 'modern', show(r));
    });

    test('an unsupported version gets -32022 with the supported ones', async () => {
      const r = await c.request({
        jsonrpc: '2.0', id: 4, method: 'tools/list', params: { _meta: meta('1900-01-01') },
      });
      assertError(r, -32022, 4, 'unsupported version');
      assert.ok(r.error.data?.supported?.includes(MODERN), show(r));
      assert.equal(r.error.data.requested, '1900-01-01', show(r));
      const again = await c.request({
        jsonrpc: '2.0', id: 5, method: 'server/discover', params: { _meta: meta() },
      });
      assert.equal(again.result?.resultType, 'complete', show(again));
    });

    test('a request without the required clientCapabilities is -32602', async () => {
      const m = meta();
      delete m[CLIENT_CAPABILITIES_KEY];
      const r = await c.request({ jsonrpc: '2.0', id: 6, method: 'tools/list', params: { _meta: m } });
      assertError(r, -32602, 6, 'no clientCapabilities');
    });
  });
});
