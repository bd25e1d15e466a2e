// `sandrun mcp` in-process keeps no warm pool (sandbox.pool is the server's): it serves one
// --session, so pooled containers would only wait. Calls with `rm` (a new scope each) would take
// from a pool if it kept one; none is made.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { MINIMAL_IMAGE, SandrunHome, docker, dockerSkip, show } from './harness.mjs';

const skip = await dockerSkip();

describe('sandrun mcp (stdio, in-process) and sandbox.pool', { skip }, () => {
  let home;
  let client;

  before(async () => {
    home = await SandrunHome.create({
      extra: {
        sandbox: { docker: { image: MINIMAL_IMAGE, user: '1000:1000' }, pool: { min: 2 } },
      },
    });
    client = await home.stdioClient();
  });
  after(async () => {
    await home?.cleanup();
  });

  test('new scopes get containers made for them and no pool is kept', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await client.callTool({ name: 'exec', arguments: { command: 'echo hi', rm: true } });
      assert.ok(!r.isError, show(r));
      assert.equal(r.structuredContent.exitCode, 0, show(r));
    }
    // A pool would have started filling at the first call (two containers, made one by one).
    const filters = encodeURIComponent(JSON.stringify({ label: ['sandrun.pool'] }));
    const list = await docker('GET', `/containers/json?all=1&filters=${filters}`);
    assert.equal(list.status, 200);
    const mine = list.body.filter((c) => c.Labels['sandrun.stateDir'] === home.home);
    assert.deepEqual(mine.map((c) => c.Names), [], 'warm containers of an in-process MCP server');
  });
});
