/**
 * What the metrics hook costs a GET: this checkout against a baseline commit without it
 * (default: where this branch left main), both built and run as `npm start` runs them, the API alone
 * (BERTH_ENGINE=off) on SQLite, `GET /v2/deployments/{id}` driven by autocannon in rounds
 * that alternate between the two servers (so drift on this shared machine hits both), with
 * a scrape of /metrics every 5 s on both. Prints, per server, the median over the rounds
 * of requests per second and of the server's CPU time per request (the steadier figure on
 * a loaded machine), and the differences.
 *
 *   node --import tsx bench/metrics-overhead.ts [--baseline <commit>] [--rounds 6] [--duration 10] [--connections 50]
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon, { type AutocannonResult } from 'autocannon';
import { freePort } from '../test/support/process.js';
import { percentile } from './stats.js';

const { values: flags } = parseArgs({
  options: {
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '6' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
  },
});
const ROOT = path.resolve(import.meta.dirname, '..');
const ROUNDS = Number(flags.rounds);
const DURATION = Number(flags.duration);
const CONNECTIONS = Number(flags.connections);
const KEY = `berth_bench_${randomBytes(16).toString('hex')}`;
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

interface Server {
  name: string;
  url: string;
  child: ChildProcess;
  deploymentId: string;
  rps: number[];
  cpuMicros: number[];
  p99: number[];
}

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** The baseline's sources, compiled against this checkout's node_modules (a superset of its dependencies). */
function buildBaseline(ref: string, dir: string): string {
  const archive = execFileSync('git', ['-C', ROOT, 'archive', ref, 'src', 'package.json']);
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs'), '--js-only', dir], { stdio: 'inherit' });
  return execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', ref], { encoding: 'utf8' }).trim();
}

async function start(name: string, checkout: string, dataDir: string): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--max-semi-space-size=4', path.join(checkout, 'dist/main.js'), 'serve'], {
    cwd: checkout,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      BERTH_DATA_DIR: dataDir,
      BERTH_BOOTSTRAP_API_KEY: KEY,
      BERTH_ENGINE: 'off',
      BERTH_RATE_LIMIT_PER_MINUTE: '0',
      BERTH_CONTAINER_RUNTIME: 'none',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; ; attempt += 1) {
    if (
      await fetch(`${url}/ok`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (attempt > 300 || child.exitCode !== null) throw new Error(`${name} did not start`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const created = await fetch(`${url}/v2/deployments`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'bench-get',
      source: 'external_docker',
      source_config: {},
      source_revision_config: { image_uri: 'localhost/agent:v1' },
      secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-bench' }],
    }),
  });
  if (created.status !== 201) throw new Error(`${name}: create answered ${created.status}: ${await created.text()}`);
  const { id } = (await created.json()) as { id: string };
  return { name, url, child, deploymentId: id, rps: [], cpuMicros: [], p99: [] };
}

function drive(server: Server, seconds: number): Promise<AutocannonResult> {
  return new Promise((resolve, reject) => {
    autocannon(
      { url: `${server.url}/v2/deployments/${server.deploymentId}`, connections: CONNECTIONS, duration: seconds, headers: { 'x-api-key': KEY } },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

async function round(server: Server): Promise<void> {
  await drive(server, 2);
  // Prometheus' usual 15 s interval would miss most rounds; every 5 s is a busy scraper.
  const scraper = setInterval(
    () =>
      void fetch(`${server.url}/metrics`).then(
        (r) => r.arrayBuffer(),
        () => undefined,
      ),
    5_000,
  );
  const cpuBefore = cpuSeconds(server.child.pid as number);
  const result = await drive(server, DURATION);
  const cpu = cpuSeconds(server.child.pid as number) - cpuBefore;
  clearInterval(scraper);
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${server.name}: ${result.non2xx} non-2xx answers and ${result.errors} errors`);
  const requests = result['2xx'];
  server.rps.push(requests / result.duration);
  server.cpuMicros.push((cpu / requests) * 1e6);
  server.p99.push(result.latency.p99);
  log(`  ${server.name}: ${Math.round(requests / result.duration)} req/s, ${((cpu / requests) * 1e6).toFixed(1)} µs CPU/request, p99 ${result.latency.p99} ms`);
}

const median = (values: number[]) => percentile(values, 50);

async function main(): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-metrics-overhead-'));
  const servers: Server[] = [];
  try {
    log('building this checkout and the baseline');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    const baselineDir = path.join(work, 'baseline');
    fs.mkdirSync(baselineDir);
    const baselineRef = flags.baseline ?? execFileSync('git', ['-C', ROOT, 'merge-base', 'HEAD', 'main'], { encoding: 'utf8' }).trim();
    const baselineCommit = buildBaseline(baselineRef, baselineDir);
    const head = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    servers.push(await start(`with metrics (${head})`, ROOT, path.join(work, 'data-metrics')));
    servers.push(await start(`baseline (${baselineCommit})`, baselineDir, path.join(work, 'data-baseline')));
    const probe = await fetch(`${servers[0]!.url}/metrics`);
    if (probe.status !== 200) throw new Error(`this checkout does not serve /metrics (${probe.status})`);
    for (let i = 0; i < ROUNDS; i += 1) {
      log(`round ${i + 1} of ${ROUNDS}`);
      const order = i % 2 === 0 ? servers : [...servers].reverse();
      for (const server of order) await round(server);
    }
    const [metrics, baseline] = servers as [Server, Server];
    const lines = [
      `GET /v2/deployments/{id}, SQLite, API only, ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${DURATION} s, node ${process.version}, ${os.cpus().length} CPUs`,
      '',
      '| server | req/s (median) | CPU µs per request (median) | p99 ms (median) |',
      '|---|---:|---:|---:|',
      ...servers.map((s) => `| ${s.name} | ${Math.round(median(s.rps))} | ${median(s.cpuMicros).toFixed(1)} | ${median(s.p99).toFixed(1)} |`),
      '',
      `throughput: ${(((median(baseline.rps) - median(metrics.rps)) / median(baseline.rps)) * 100).toFixed(1)} % lower with metrics; ` +
        `CPU per request: ${(((median(metrics.cpuMicros) - median(baseline.cpuMicros)) / median(baseline.cpuMicros)) * 100).toFixed(1)} % higher`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    for (const server of servers) server.child.kill('SIGTERM');
    await Promise.all(servers.map((s) => new Promise((resolve) => (s.child.exitCode !== null ? resolve(null) : s.child.once('exit', resolve)))));
    fs.rmSync(work, { recursive: true, force: true });
  }
}

await main();
