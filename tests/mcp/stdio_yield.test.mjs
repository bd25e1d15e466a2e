// mcp.maxBlockMs: a call never blocks past it. A long command returns "running" with a
// sessionId, and `process` (poll, list, kill) follows it, both with `sandrun mcp` in-process and
// bridged to a running `sandrun serve` (whose sessions the CLI then sees too).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { SandrunHome, dockerSkip, show, strings, waitFor } from './harness.mjs';

const MAX_BLOCK_MS = 1500;

// Runs a command that outlives maxBlockMs and follows it with process poll to the end; returns
// its sessionId. The printed markers are computed by the shell, so the command text (which a
// result may echo) never contains them.
async function yieldThenPoll(client) {
  const exec = (args) => client.callTool({ name: 'exec', arguments: args });
  const proc = (args) => client.callTool({ name: 'process', arguments: args });
  const warm = await exec({ command: 'true' }); // the container exists before the clock starts
  assert.equal(warm.structuredContent?.status, 'completed', show(warm));

  const start = Date.now();
  const r = await exec({ command: 'echo phase-$((1+1))-start; sleep 4; echo phase-$((2+1))-done' });
  const blocked = Date.now() - start;
  const sc = r.structuredContent;
  assert.equal(sc.status, 'running', show(r));
  assert.ok(typeof sc.sessionId === 'string' && sc.sessionId.length > 0, show(r));
  assert.ok(!r.isError, show(r));
  assert.ok(blocked >= MAX_BLOCK_MS - 200 && blocked < MAX_BLOCK_MS + 2000,
    `returned after ${blocked} ms with maxBlockMs ${MAX_BLOCK_MS}`);

  const listed = await proc({ action: 'list' });
  assert.ok(strings(listed).some((s) => s.includes(sc.sessionId)), `list: ${show(listed)}`);

  const seen = [...strings(r)];
  let last;
  let polls = 0;
  await waitFor('the session to complete', async () => {
    last = await proc({ action: 'poll', sessionId: sc.sessionId, timeout: 10000 });
    polls++;
    assert.ok(!last.isError, show(last));
    seen.push(...strings(last));
    return last.structuredContent.status !== 'running';
  }, { timeoutMs: 30000, intervalMs: 0 });
  assert.equal(last.structuredContent.status, 'completed', show(last));
  assert.equal(last.structuredContent.exitCode, 0, show(last));
  assert.ok(polls <= 2, `poll with timeout 10000 waits for the end (${polls} polls)`);
  const all = seen.join('\n');
  assert.ok(all.includes('phase-2-start') && all.includes('phase-3-done'), show(seen));
  return sc.sessionId;
}

// A long command killed with process kill: nothing of it is left in the sandbox.
async function yieldThenKill(client) {
  const exec = (args) => client.callTool({ name: 'exec', arguments: args });
  const marker = `60.${Math.floor(Math.random() * 9000) + 1000}`;
  const r = await exec({ command: `sleep ${marker}` });
  assert.equal(r.structuredContent.status, 'running', show(r));
  const killed = await client.callTool({
    name: 'process', arguments: { action: 'kill', sessionId: r.structuredContent.sessionId },
  });
  assert.ok(!killed.isError, show(killed));
  await waitFor(`no sleep ${marker} left`, async () => {
    const ps = await exec({ command: `ps -o args | grep -c '[s]leep ${marker}' || true` });
    return Number(ps.structuredContent.output.trim()) === 0;
  }, { timeoutMs: 10000, intervalMs: 250 });
}

const skip = await dockerSkip();

describe('sandrun mcp with mcp.maxBlockMs', { skip }, () => {
  let home;

  before(async () => {
    home = await SandrunHome.create({ mcp: { maxBlockMs: MAX_BLOCK_MS } });
  });
  after(async () => {
    await home?.cleanup();
  });

  test('in-process: a long call yields, poll follows it to the end, kill ends one', async () => {
    const client = await home.stdioClient();
    await yieldThenPoll(client);
    await yieldThenKill(client);
    await client.close();
  });

  test('bridged to sandrun serve: the same, and the server holds the session', async () => {
    await home.startServe();
    const client = await home.stdioClient();
    const id = await yieldThenPoll(client);
    // The CLI's process tool goes through the server's socket: it finds the MCP call's session.
    const cli = home.run(['process', 'poll', '--session-id', id]);
    assert.equal(cli.code, 0, `${cli.stdout}${cli.stderr}`);
    assert.equal(JSON.parse(cli.stdout).details?.status, 'completed', cli.stdout);
    await yieldThenKill(client);
    await client.close();
    const exit = await home.stopServe();
    assert.equal(exit.code, 0, `sandrun serve exit: ${show(exit)}`);
  });
});
