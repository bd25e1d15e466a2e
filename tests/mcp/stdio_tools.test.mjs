// `sandrun mcp` over stdio, in-process (no server), driven by the official SDK client: the tool
// list, exec in the sandbox (completed, failed, refused), policy_check and apply_patch, progress
// notifications, cancellation that leaves no process behind, and output capping with paging
// through `process log`. One private SANDRUN_HOME for the file; its containers are removed at
// the end.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { SandrunHome, dockerSkip, show, strings, uniqueWord, waitFor } from './harness.mjs';

const MAX_OUTPUT_CHARS = 2000;
const skip = await dockerSkip();

describe('sandrun mcp (stdio, in-process)', { skip }, () => {
  let home;
  let client;

  before(async () => {
    home = await SandrunHome.create({ mcp: { maxOutputChars: MAX_OUTPUT_CHARS } });
    client = await home.stdioClient();
  });
  after(async () => {
    await home?.cleanup();
  });

  const exec = (args, options) => client.callTool({ name: 'exec', arguments: args }, undefined, options);

  test('lists the four tools with schemas and annotations', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['apply_patch', 'exec', 'policy_check', 'process']);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', `${t.name} inputSchema: ${show(t.inputSchema)}`);
      assert.equal(t.outputSchema?.type, 'object', `${t.name} outputSchema: ${show(t.outputSchema)}`);
      assert.ok(t.description, `${t.name} has a description`);
    }
    assert.equal(byName.exec.inputSchema.properties.command?.type, 'string');
    assert.ok(byName.exec.inputSchema.required?.includes('command'), show(byName.exec.inputSchema));
    for (const p of ['workdir', 'env', 'yieldMs', 'background', 'timeout', 'pty', 'elevated', 'host']) {
      assert.ok(byName.exec.inputSchema.properties[p], `exec parameter ${p}`);
    }
    assert.ok(byName.policy_check.inputSchema.properties.command, 'policy_check takes exec parameters');
    const action = byName.process.inputSchema.properties.action;
    const actions = ['list', 'poll', 'log', 'write', 'send-keys', 'submit', 'paste', 'kill', 'clear',
      'remove'];
    for (const a of actions) {
      assert.ok(action?.enum?.includes(a), `process action ${a}: ${show(action)}`);
    }
    assert.ok(byName.apply_patch.inputSchema.properties.input, 'apply_patch input');
    assert.equal(byName.policy_check.annotations?.readOnlyHint, true);
    assert.equal(byName.exec.annotations?.destructiveHint, true);
    assert.notEqual(byName.exec.annotations?.readOnlyHint, true);
  });

  test('exec runs echo hello in the sandbox', async () => {
    const r = await exec({ command: 'echo hello' });
    const sc = r.structuredContent;
    assert.ok(!r.isError, show(r));
    assert.equal(sc.status, 'completed', show(r));
    assert.equal(sc.exitCode, 0);
    assert.equal(sc.output, 'hello', 'OpenClaw trims the trailing newline');
    assert.equal(sc.host, 'sandbox');
    assert.equal(typeof sc.durationMs, 'number');
    assert.equal(r.content[0].type, 'text');
    assert.deepEqual(JSON.parse(r.content[0].text), sc, 'content is the JSON text of structuredContent');
  });

  test('a command that exits 3 is a result with its exit code, not a tool error', async () => {
    // OpenClaw's meanings: a normal exit is "completed" whatever its code (with OpenClaw's
    // "(Command exited with code N)" line); "failed" is a timeout, a signal, 126 or 127.
    const r = await exec({ command: 'echo before; exit 3' });
    assert.equal(r.isError ?? false, false, show(r));
    assert.equal(r.structuredContent.status, 'completed', show(r));
    assert.equal(r.structuredContent.exitCode, 3);
    assert.equal(r.structuredContent.output, 'before\n\n(Command exited with code 3)');
    const missing = await exec({ command: 'no-such-command-xyz' });
    assert.equal(missing.structuredContent.status, 'failed', show(missing));
    assert.equal(missing.structuredContent.exitCode, 127);
    assert.equal(missing.isError ?? false, false);
  });

  test('refusals are tool errors with a code and a message', async () => {
    const cases = [
      { args: { command: 'echo escaped', host: 'gateway' }, why: 'host gateway without elevated' },
      { args: { command: 'echo escaped', elevated: true }, why: 'elevated when tools.elevated is off' },
      { args: {}, why: 'no command', code: 'invalid-request' },
    ];
    for (const c of cases) {
      const r = await exec(c.args);
      assert.equal(r.isError, true, `${c.why}: ${show(r)}`);
      const sc = r.structuredContent;
      assert.equal(sc?.status, 'refused', `${c.why}: ${show(r)}`);
      assert.match(sc.code, /^[a-z]+(-[a-z]+)*$/, `${c.why}: ${show(r)}`);
      if (c.code) assert.equal(sc.code, c.code, `${c.why}: ${show(r)}`);
      assert.ok(typeof sc.message === 'string' && sc.message.length > 0, `${c.why}: ${show(r)}`);
      assert.ok(!strings(r).some((s) => s.includes('escaped\n')), `${c.why}: nothing ran: ${show(r)}`);
    }
  });

  // The sandbox's /workspace is the scope's own directory (workspaceAccess none): what is there
  // is looked at through exec.
  test('policy_check decides and runs nothing; exec of the same command runs it', async () => {
    const file = uniqueWord('pc-');
    const exists = async () => {
      const r = await exec({ command: `if [ -e ${file} ]; then echo present; else echo absent; fi` });
      return r.structuredContent.output.trim();
    };
    const decided = await client.callTool({ name: 'policy_check', arguments: { command: `touch ${file}` } });
    assert.ok(!decided.isError, show(decided));
    assert.equal(typeof decided.structuredContent, 'object', show(decided));
    assert.equal(await exists(), 'absent', 'policy_check ran the command');
    const ran = await exec({ command: `touch ${file}` });
    assert.equal(ran.structuredContent.status, 'completed', show(ran));
    assert.equal(await exists(), 'present');
  });

  test('apply_patch adds a file that exec then reads', async () => {
    const patch = '*** Begin Patch\n*** Add File: patched.txt\n+patched by mcp\n*** End Patch\n';
    const r = await client.callTool({ name: 'apply_patch', arguments: { input: patch } });
    assert.ok(!r.isError, show(r));
    assert.equal(r.structuredContent?.status, 'completed', show(r));
    const cat = await exec({ command: 'cat patched.txt; wc -c < patched.txt' });
    assert.match(cat.structuredContent.output, /^patched by mcp\n\s*15\n?$/, show(cat));
    const bad = await client.callTool({ name: 'apply_patch', arguments: { input: 'not a patch' } });
    assert.equal(bad.isError, true, show(bad));
    assert.equal(bad.structuredContent?.status, 'refused', show(bad));
  });

  test('progress notifications carry the output so far, progress increasing', async () => {
    const progress = [];
    const r = await exec(
      { command: 'for i in 1 2 3 4 5 6 7; do echo tick-$i; sleep 0.3; done' },
      { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true, timeout: 30000 },
    );
    assert.equal(r.structuredContent.status, 'completed', show(r));
    assert.match(r.structuredContent.output, /^tick-1\n[^]*tick-7\n?$/);
    assert.ok(progress.length >= 1, `no progress notification: ${show(r)}`);
    assert.ok(progress.some((p) => typeof p.message === 'string' && /tick-[1-7]/.test(p.message)),
      `no progress message with output: ${show(progress)}`);
    for (let i = 1; i < progress.length; i++) {
      assert.ok(progress[i].progress > progress[i - 1].progress, `not increasing: ${show(progress)}`);
    }
  });

  test('a cancelled call leaves no process and the server keeps serving', async () => {
    // The marker is the sleep's own argument: unique, and in the process list while it runs.
    const marker = `300.${Math.floor(Math.random() * 9000) + 1000}`;
    const count = `ps -o args | grep -c '[s]leep ${marker}' || true`;
    const running = async () => {
      const r = await exec({ command: count }, { timeout: 30000 });
      assert.equal(r.structuredContent?.status, 'completed', show(r));
      return Number(r.structuredContent.output.trim()); // sh -lc and sleep, or sleep alone
    };
    const controller = new AbortController();
    const outcome = exec({ command: `echo started; sleep ${marker}` },
      { signal: controller.signal, timeout: 120000 }).then((result) => ({ result }), (error) => ({ error }));
    let settled = null;
    outcome.then((o) => (settled = o));
    await waitFor(`sleep ${marker} to run`, async () => {
      if (settled) throw new Error(`the call ended before it was cancelled: ${show(settled)}`);
      return (await running()) >= 1;
    });
    controller.abort(new Error('cancelled by the test'));
    const o = await outcome;
    assert.ok(o.error, `the call was not cancelled: ${show(o)}`);
    await waitFor(`no sleep ${marker} left`, async () => (await running()) === 0,
      { timeoutMs: 10000, intervalMs: 250 });
    await client.ping();
    const again = await exec({ command: 'echo still-serving' });
    assert.equal(again.structuredContent.output.trimEnd(), 'still-serving', show(again));
    const late = client.errors.filter((e) => /unknown message ID|response/i.test(String(e?.message)));
    assert.deepEqual(late.map(String), [], 'no response for the cancelled request');
  });

  test('long output keeps head and tail, marked, and process log pages the rest', async () => {
    // 2200 numbered lines of 9 characters: 19800 characters, ten times the cap.
    const rows = "i=1; while [ $i -le 2200 ]; do printf 'row%05d\\n' $i; i=$((i+1)); done";
    const r = await exec({ command: rows });
    const sc = r.structuredContent;
    assert.equal(sc.status, 'completed', show(r));
    assert.equal(sc.truncated, true, show(r));
    assert.ok(typeof sc.sessionId === 'string' && sc.sessionId.length > 0, `sessionId: ${show(r)}`);
    const out = sc.output;
    assert.ok(out.length >= MAX_OUTPUT_CHARS / 2 && out.length <= MAX_OUTPUT_CHARS + 400,
      `output of ${out.length} characters for a cap of ${MAX_OUTPUT_CHARS}`);
    assert.ok(out.startsWith('row00001\nrow00002\n'), show(out.slice(0, 100)));
    assert.ok(out.trimEnd().endsWith('row02199\nrow02200'), show(out.slice(-100)));
    assert.ok(!out.includes('row01100'), 'the middle is cut');
    assert.ok(out.split('\n').some((line) => /[A-Za-z]{4,}/.test(line)), `no marker: ${show(out)}`);

    const log = await client.callTool({
      name: 'process', arguments: { action: 'log', sessionId: sc.sessionId, offset: 1099, limit: 3 },
    });
    assert.ok(!log.isError, show(log));
    const texts = strings(log);
    assert.ok(texts.some((s) => s.includes('row01100\nrow01101\nrow01102')), show(log));
    assert.ok(!texts.some((s) => s.includes('row01099') || s.includes('row01103')), show(log));
  });
});
