// Approvals over MCP, through a running `sandrun serve` (the operator's side): an exec that needs
// one answers approval-pending with its id; with mcp.waitForApproval it waits for the operator's
// answer and returns the approved command's result; a call cancelled while it waits withdraws its
// approval (recorded as denied), so an operator can no longer start it behind the caller's back.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { SandrunHome, dockerSkip, show, waitFor } from './harness.mjs';

const skip = await dockerSkip();

// Session B leaves the sandbox (elevated on) and asks for every command (ask always).
const EXTRA = {
  sandbox: { mode: 'all', docker: { image: 'sandrun-sandbox:minimal' } },
  tools: {
    exec: { loginShellPath: false },
    elevated: { enabled: true, allowFrom: { cli: ['*'], api: ['*'], mcp: ['*'] } },
  },
};

describe('approvals through MCP', { skip }, () => {
  let home;

  const pending = () => {
    const r = home.run(['approvals', 'list', '--json']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout).pending || [];
  };
  const shown = (id) => {
    const r = home.run(['approvals', 'show', id]);
    assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  // The one pending approval, once it is there.
  const awaitPending = async () => {
    let id = '';
    await waitFor('a pending approval', async () => {
      const list = pending();
      if (list.length === 0) return false;
      id = list[0].id;
      return true;
    }, { timeoutMs: 20000, intervalMs: 50 });
    return id;
  };

  before(async () => {
    home = await SandrunHome.create({ extra: EXTRA });
    await home.startServe();
    const set = home.run(['session', 'set', 'B', '--elevated', 'on', '--ask', 'always']);
    assert.equal(set.code, 0, `${set.stdout}${set.stderr}`);
  });
  after(async () => {
    await home?.cleanup();
  });

  test('an exec that needs an approval answers approval-pending with its id', async () => {
    const client = await home.stdioClient({ flags: ['--session', 'B'] });
    const r = await client.callTool({ name: 'exec', arguments: { command: 'echo later' } });
    assert.equal(r.isError ?? false, false, show(r));
    assert.equal(r.structuredContent.status, 'approval-pending', show(r));
    const id = r.structuredContent.approvalId;
    assert.ok(typeof id === 'string' && id.length > 0, show(r));
    assert.equal(shown(id).status, 'pending');
    const denied = home.run(['approvals', 'approve', id, 'deny']);
    assert.equal(denied.code, 0, `${denied.stdout}${denied.stderr}`);
    await client.close();
  });

  test('mcp.waitForApproval: the call waits and returns the approved command\'s result', async () => {
    home.writeConfig({ extra: EXTRA, mcp: { waitForApproval: true, maxBlockMs: 30000 } });
    const client = await home.stdioClient({ flags: ['--session', 'B'] });
    const call = client.callTool({
      name: 'exec', arguments: { command: 'echo approved-$((6*7))' },
    }, undefined, { timeout: 60000 });
    const id = await awaitPending();
    const approved = home.run(['approvals', 'approve', id, 'allow-once']);
    assert.equal(approved.code, 0, `${approved.stdout}${approved.stderr}`);
    const r = await call;
    assert.equal(r.isError ?? false, false, show(r));
    assert.equal(r.structuredContent.status, 'completed', show(r));
    assert.equal(r.structuredContent.output, 'approved-42', show(r));
    assert.equal(r.structuredContent.host, 'gateway', show(r));
    await client.close();
  });

  test('a call cancelled while it waits withdraws its approval', async () => {
    home.writeConfig({ extra: EXTRA, mcp: { waitForApproval: true, maxBlockMs: 30000 } });
    const client = await home.stdioClient({ flags: ['--session', 'B'] });
    const abort = new AbortController();
    const call = client.callTool({
      name: 'exec', arguments: { command: 'echo must-not-run' },
    }, undefined, { signal: abort.signal, timeout: 60000 });
    const id = await awaitPending();
    abort.abort();
    await assert.rejects(call);
    let record;
    await waitFor('the approval to be withdrawn', async () => {
      record = shown(id);
      return record.status !== 'pending';
    }, { timeoutMs: 10000, intervalMs: 50 });
    assert.equal(record.decision, 'deny', show(record));
    assert.match(record.decidedBy || '', /cancelled/, show(record));
    // An operator's late answer finds nothing to start.
    const late = home.run(['approvals', 'approve', id, 'allow-once']);
    assert.notEqual(late.code, 0, `${late.stdout}${late.stderr}`);
    assert.deepEqual(pending(), []);
    await client.close();
  });
});
