/**
 * `npm run bench`: Berth under load against the ceiling of this machine.
 *
 * Builds Berth and starts it as a child process (`node dist/main.js serve`, as `npm start`) on the embedded
 * default and, when DATABASE_URL is a postgres URL or with `--postgres`, on a throwaway
 * PostgreSQL database; fills a workspace with 100,000 deployments (bench/seed.ts); drives
 * each scenario with autocannon, and the same load against a bare node:http server
 * (bench/ceiling.ts) and the get, list and create loads against a FastAPI peer on a seeded
 * SQLite file of its own at each size (bench/peer.ts); runs the engine scenario (bench/engine.ts);
 * appends the results to bench/results.md. Flags: see `usage` below.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon, { type AutocannonRequest } from 'autocannon';
import { IN_PROGRESS_STATUSES } from '../src/domain/revision-status.js';
import { openDatabase } from '../src/store/database.js';
import type { BuildResult } from './build.js';
import type { DashboardResult } from './dashboard.js';
import { runnersReport, type RunnersResult } from './runners-report.js';
import type { Flow, FlowsResult } from './flows.js';
import { causeOf } from './causes.js';
import { stopChild } from './children.js';
import { type Peer, PEER_MISSING, peerPython, startPeer } from './peer.js';
import { TEAMS } from './seed.js';
import { percentile, Samples } from './stats.js';
import { pauseWindow, type PauseFigures } from './server-metrics.js';
import { freePort } from '../test/support/process.js';
import { createPostgresDatabase } from '../test/support/server.js';

const usage = `npm run bench -- [flags]
  --connections N        concurrent connections (default 50)
  --duration S           seconds measured per scenario (default 10)
  --warmup S             seconds of unmeasured load before each (default 2)
  --deployments N,M      deployments in the listing workspace, one seeded database each (default 1000,100000)
  --engine on,off        the engine in the server, without it (BERTH_ENGINE=off), or both one after the other (default on,off)
  --quick                get, list and create at 1,000 deployments, 3 s each after 1 s of warm-up, waiting at most
                         5 s for a quiet machine (flags given win)
  --node-flags 'F'       the server's node flags instead of those of \`npm start\` (e.g. '--max-semi-space-size=16 --trace-gc')
  --server DIR           run the server of another checkout (built there with npm run build), to compare trees A/B
  --engine-revisions N   revisions in the engine burst (default 1000)
  --backlog N            revisions queued in another workspace for the backlog scenario (default 20000)
  --postgres             also on PostgreSQL (postgres://postgres@127.0.0.1:5432/), in a throwaway database;
                         implied when DATABASE_URL is a postgres URL (its server is used the same way)
  --only-postgres        skip the embedded default
  --scenarios a,b        subset of: get,list,list-1,list-sparse,list-sparse-1,create,patch,backlog,engine,fairness,listeners,runners,build,flows,dashboard
  --dashboard-loads N    loads of the deployments list in the dashboard scenario (default 10)
  --pushes N             warm pushes measured in the flows scenario (default 5)
  --agents N             simulated listener agents in the listeners scenario (default 1000)
  --runner-builds N      builds in each burst of the runners scenario, per count of runner processes (default 60; 20 with --quick)
  --api-only             the same as --engine off
  --no-peer              leave out the FastAPI peer (bench/peer/fastapi_peer.py: get, list and create at each size, for
                         issue 24's 5× targets; needs python3-fastapi and python3-uvicorn: scripts/setup-bench-peer.sh)
  --cpu-prof             write a CPU profile of each Berth server to bench/profiles/ and summarise it
  --label TEXT           a line saying what this run measures (e.g. which change), written with the results
  --no-write             print the results without appending them to bench/results.md`;

const { values: flags } = parseArgs({
  options: {
    connections: { type: 'string', default: '50' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    deployments: { type: 'string' },
    engine: { type: 'string', default: 'on,off' },
    quick: { type: 'boolean', default: false },
    server: { type: 'string' },
    'node-flags': { type: 'string' },
    'engine-revisions': { type: 'string', default: '1000' },
    backlog: { type: 'string', default: '20000' },
    agents: { type: 'string', default: '1000' },
    'runner-builds': { type: 'string' },
    pushes: { type: 'string', default: '5' },
    'dashboard-loads': { type: 'string', default: '10' },
    postgres: { type: 'boolean', default: false },
    'only-postgres': { type: 'boolean', default: false },
    scenarios: { type: 'string' },
    'cpu-prof': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
    'no-peer': { type: 'boolean', default: false },
    'api-only': { type: 'boolean', default: false },
    label: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (flags.help) {
  process.stdout.write(`${usage}\n`);
  process.exit(0);
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BENCH = path.join(ROOT, 'bench');
const RESULTS = path.join(BENCH, 'results.md');
const PROFILES = path.join(BENCH, 'profiles');
/** The tree whose server is measured: this one, or another checkout for an A/B comparison. */
const SERVER_ROOT = flags.server ? path.resolve(flags.server) : ROOT;
const QUICK = flags.quick;
const CONNECTIONS = Number(flags.connections);
const DURATION = Number(flags.duration ?? (QUICK ? '3' : '10'));
const WARMUP = Number(flags.warmup ?? (QUICK ? '1' : '2'));
const SIZES = (flags.deployments ?? (QUICK ? '1000' : '1000,100000')).split(',').map((n) => Number(n.trim()));
const ENGINE_MODES = (flags['api-only'] ? 'off' : flags.engine)
  .split(',')
  .map((m) => m.trim())
  .filter((m): m is 'on' | 'off' => m === 'on' || m === 'off');
if (ENGINE_MODES.length === 0 || SIZES.some((n) => !Number.isInteger(n) || n < 100)) throw new Error(`bad --engine or --deployments\n${usage}`);
const ENGINE_REVISIONS = Number(flags['engine-revisions']);
const BACKLOG = Number(flags.backlog);
const AGENTS = Number(flags.agents);
const RUNNER_BUILDS = Number(flags['runner-builds'] ?? (QUICK ? '20' : '60'));
const ALL_SCENARIOS = [
  'get',
  'list',
  'list-1',
  'list-sparse',
  'list-sparse-1',
  'create',
  'patch',
  'backlog',
  'engine',
  'fairness',
  'listeners',
  'runners',
] as const;
/** Scenarios with a script of their own rather than autocannon against the seeded server. */
const SCRIPTED: readonly string[] = ['engine', 'fairness', 'listeners', 'runners'];
type ScenarioName = (typeof ALL_SCENARIOS)[number];
/** The phases of issue 24's 5× targets, also driven against the FastAPI peer. */
const PEER_SCENARIOS: readonly ScenarioName[] = ['get', 'list', 'create'];
/** Not per database: builds and deploys the sample agent with podman (bench/build.ts). */
const BUILD_SCENARIO = 'build';
/** Not per database either: the sample agent behind a `git` integration, push to answer and the rest (bench/flows.ts). */
const FLOWS_SCENARIO = 'flows';
/** Not per database: Chromium against the dashboard over 10,000 deployments of its own (bench/dashboard.ts). */
const DASHBOARD_SCENARIO = 'dashboard';
const IMAGE_SCENARIOS: readonly string[] = [BUILD_SCENARIO, FLOWS_SCENARIO, DASHBOARD_SCENARIO];
const SELECTED = new Set<string>(
  flags.scenarios ? flags.scenarios.split(',').map((s) => s.trim()) : QUICK ? ['get', 'list', 'create'] : [...ALL_SCENARIOS, ...IMAGE_SCENARIOS],
);
for (const name of SELECTED) {
  if (!(ALL_SCENARIOS as readonly string[]).includes(name) && !IMAGE_SCENARIOS.includes(name)) throw new Error(`unknown scenario '${name}'\n${usage}`);
}

const envUrl = process.env.DATABASE_URL?.trim();
const POSTGRES_ADMIN_URL = envUrl && /^postgres(ql)?:\/\//.test(envUrl) ? envUrl : flags.postgres ? 'postgres://postgres@127.0.0.1:5432/postgres' : undefined;
const DATABASES: ('sqlite' | 'postgres')[] = [...(flags['only-postgres'] ? [] : (['sqlite'] as const)), ...(POSTGRES_ADMIN_URL ? (['postgres'] as const) : [])];
if (DATABASES.length === 0) throw new Error('--only-postgres needs --postgres or a postgres DATABASE_URL');

// ---------------------------------------------------------------------------- processes

const cleanups: (() => Promise<void> | void)[] = [];
let interrupted = false;
process.on('SIGINT', () => {
  if (interrupted) process.exit(130);
  interrupted = true;
  process.stderr.write('\ninterrupted: cleaning up\n');
  void runCleanups().finally(() => process.exit(130));
});
async function runCleanups(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await Promise.resolve(cleanup()).catch(() => {});
}

function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

interface Child {
  process: ChildProcess;
  pid: number;
  output: string[];
  stop(): Promise<void>;
}

/** Runs TypeScript through tsx, or with `compiled`, plain node in the measured tree (the server as `npm start` runs it). */
function spawnNode(args: string[], env: NodeJS.ProcessEnv, compiled = false): Child {
  const loader = compiled ? [] : ['--import', 'tsx'];
  const child = spawn(process.execPath, [...loader, ...args], { cwd: compiled ? SERVER_ROOT : ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const handle: Child = {
    process: child,
    pid: child.pid as number,
    output,
    stop: () => stopChild(child, 20_000),
  };
  cleanups.push(() => handle.stop());
  return handle;
}

/** Runs a node script to its end and parses the last JSON line it printed. */
async function runJson<T>(args: string[], env: NodeJS.ProcessEnv): Promise<T> {
  const child = spawnNode(args, env);
  const code = await new Promise<number | null>((resolve) => child.process.once('exit', (c) => resolve(c)));
  const text = child.output.join('');
  if (code !== 0) throw new Error(`${args.join(' ')} exited with ${code}:\n${text.slice(-4000)}`);
  const line = text
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{'));
  if (!line) throw new Error(`${args.join(' ')} printed no result:\n${text.slice(-4000)}`);
  return JSON.parse(line) as T;
}

/** utime + stime of a process, in seconds. */
function processCpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command name: state is field 3, utime 14 and stime 15 (1-based in proc(5)).
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Busy CPU of the whole machine so far, in seconds (every core, from /proc/stat). */
function machineBusySeconds(): number {
  const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  const busy = cpu.slice(0, 8).reduce((sum, v, i) => (i === 3 || i === 4 ? sum : sum + v), 0);
  return busy / CLOCK_TICKS;
}

/** CPU seconds so far of each PostgreSQL server process on this machine, by pid. */
function postgresCpuSeconds(): Map<string, number> {
  const byPid = new Map<string, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byPid.set(entry, (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS);
    } catch {
      // The process ended meanwhile.
    }
  }
  return byPid;
}

/** PostgreSQL's CPU between two samples (processes that ended in between are not counted). */
function postgresCpuSince(before: Map<string, number>): number {
  let total = 0;
  for (const [pid, seconds] of postgresCpuSeconds()) total += seconds - (before.get(pid) ?? 0);
  return total;
}

/**
 * Waits (at most `patienceS`) until the rest of the machine is nearly idle, so a run does
 * not start while other work holds a core; answers the busy cores it saw last.
 */
async function waitForQuiet(ownPids: number[], patienceS = QUICK ? 5 : 45): Promise<number> {
  const deadline = performance.now() + patienceS * 1000;
  for (;;) {
    const own = () => ownPids.reduce((sum, pid) => sum + processCpuSeconds(pid), 0) + process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6;
    const machine0 = machineBusySeconds();
    const own0 = own();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const other = machineBusySeconds() - machine0 - (own() - own0);
    if (other < 0.25 || performance.now() > deadline) {
      if (other >= 0.25) log(`  the machine stayed busy (${other.toFixed(2)} cores of other work); measuring anyway`);
      return other;
    }
  }
}

function memoryOf(pid: number): { hwmMb: number; rssMb: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { hwmMb: kb('VmHWM') / 1024, rssMb: kb('VmRSS') / 1024 };
}

// ---------------------------------------------------------------------------- Berth

/** The node flags of `npm start` (package.json), so the bench measures the server users run. */
const SERVER_NODE_FLAGS = (() => {
  if (flags['node-flags'] !== undefined) return flags['node-flags'].split(/\s+/).filter(Boolean);
  const pkg = JSON.parse(fs.readFileSync(path.join(SERVER_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const command = /\bnode (.*?)dist\/main\.js/.exec(pkg.scripts.start);
  if (!command) throw new Error(`package.json start script does not run node on dist/main.js: ${pkg.scripts.start}`);
  return command[1]!.split(/\s+/).filter(Boolean);
})();

interface BerthProcess extends Child {
  url: string;
  /** Milliseconds from spawn to the first 200 on /ok. */
  startupMs: number;
}

async function startBerthProcess(env: NodeJS.ProcessEnv, profileName?: string): Promise<BerthProcess> {
  const port = await freePort();
  // Each server gets a directory of profiles (one per thread that runs JavaScript), and
  // the main thread's profile is picked from it afterwards.
  const profile = profileName ? ['--cpu-prof', `--cpu-prof-dir=${path.join(PROFILES, profileName)}`] : [];
  if (profileName) {
    fs.mkdirSync(PROFILES, { recursive: true });
    // Profiles are large and belong to one machine: never committed.
    fs.writeFileSync(path.join(PROFILES, '.gitignore'), '*\n');
  }
  const started = performance.now();
  const child = spawnNode([...profile, ...SERVER_NODE_FLAGS, 'dist/main.js', 'serve'], { ...env, PORT: String(port) }, true);
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.process.exitCode !== null) throw new Error(`Berth exited during start:\n${child.output.join('').slice(-4000)}`);
    const ok = await fetch(`${url}/ok`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    if (performance.now() - started > 60_000) throw new Error(`Berth did not answer /ok within 60 s:\n${child.output.join('')}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return { ...child, url, startupMs: performance.now() - started };
}

/** The profile of the main thread: the one whose file name says thread 0 (CPU.<date>.<time>.<pid>.<thread>.<seq>). */
function mainThreadProfile(dir: string): string {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const main = files.find((f) => f.split('.').at(-3) === '0') ?? files[0];
  if (!main) throw new Error(`no CPU profile in ${dir}`);
  return path.join(dir, main);
}

// ---------------------------------------------------------------------------- load

interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** Load generator CPU, in cores (1.0 = one core busy). */
  loadCpu: number;
  /** The server's CPU over the same window, in cores. */
  serverCpu: number;
  /** PostgreSQL's server processes over the window, in cores. */
  databaseCpu: number;
  /** Everything else on the machine over the window, in cores (other work skews results). */
  otherCpu: number;
  /** Berth's own view of the window (its /metrics): event-loop delay and GC pauses. */
  pauses?: PauseFigures;
  /** The server's peak RSS so far (VmHWM), MB. */
  hwmMb?: number;
  /** Latency of each connection's first answer, outside the window (see load()). */
  firstAnswerP99?: number;
  firstAnswerMax?: number;
}

interface Scenario {
  name: ScenarioName;
  title: string;
  /** Overrides --connections. */
  connections?: number;
  /** Builds the requests; called once per run so counters start afresh. */
  requests(): AutocannonRequest[];
  /**
   * Paths read once each before the load, so that the window measures a warm server (what
   * a server that has run a while keeps in memory) however fast the machine goes through them.
   */
  primes?: string[];
}

/**
 * One autocannon run over the same connections throughout: they open, each gets its first
 * answer, the load runs `warmupSeconds` more, and only then is the window of `seconds`
 * measured (latencies, throughput, CPU, and with `metrics` the server's own pauses).
 *
 * A new connection's first request is not part of the window: libuv (since 1.45, Node 20)
 * accepts one connection per turn of the event loop, so while the server is saturated the
 * n-th of 50 connections opened at once is accepted n turns late. Runs of a warm-up and then
 * a measured autocannon each opened 50 fresh connections inside the window, and the creates'
 * p99 (1,000 answers in a 3 s window, 50 of them firsts waiting up to 3 s) was that ramp, not
 * the steady state. The ramp is real for a client that opens a connection per request while
 * the server is saturated, so it is reported apart: `firstAnswerP99`/`firstAnswerMax`.
 */
async function load(
  url: string,
  serverPid: number,
  scenario: Scenario,
  headers: Record<string, string>,
  seconds: number,
  options: { warmupSeconds: number; metrics: boolean },
): Promise<LoadResult> {
  const connections = scenario.connections ?? CONNECTIONS;
  const latencies = new Samples();
  const firstAnswers: number[] = [];
  const answered = new Set<unknown>();
  let ok = 0;
  let non2xx = 0;
  let measuring = false;
  let baseline: { cpu: NodeJS.CpuUsage; server: number; machine: number; postgres: Map<string, number>; at: number } | undefined;
  let figures: LoadResult | undefined;
  let window: Promise<{ end(): Promise<PauseFigures> }> | undefined;
  let instance: ReturnType<typeof autocannon> | undefined;
  const endWindow = () => {
    if (!baseline) return;
    measuring = false;
    const wall = (performance.now() - baseline.at) / 1000;
    const cpu = process.cpuUsage(baseline.cpu);
    const loadCpu = (cpu.user + cpu.system) / 1e6 / wall;
    const serverCpu = (processCpuSeconds(serverPid) - baseline.server) / wall;
    const databaseCpu = postgresCpuSince(baseline.postgres) / wall;
    figures = {
      rps: ok / wall,
      p50: percentile(latencies.values(), 50),
      p99: percentile(latencies.values(), 99),
      requests: latencies.length,
      non2xx,
      errors: 0,
      loadCpu,
      serverCpu,
      databaseCpu,
      otherCpu: Math.max(0, (machineBusySeconds() - baseline.machine) / wall - loadCpu - serverCpu - databaseCpu),
      firstAnswerP99: percentile(firstAnswers, 99),
      firstAnswerMax: Math.max(...firstAnswers),
    };
    instance?.stop();
  };
  const startWindow = () => {
    if (options.metrics) window = pauseWindow(url);
    baseline = {
      cpu: process.cpuUsage(),
      server: processCpuSeconds(serverPid),
      machine: machineBusySeconds(),
      postgres: postgresCpuSeconds(),
      at: performance.now(),
    };
    measuring = true;
    setTimeout(endWindow, seconds * 1000);
  };
  // Long enough for any ramp; the window's end stops the run.
  const limitSeconds = seconds + options.warmupSeconds + 300;
  const result = await new Promise<import('autocannon').AutocannonResult>((resolve, reject) => {
    instance = autocannon({ url, connections, duration: limitSeconds, headers, requests: scenario.requests(), timeout: 30 }, (error, res) =>
      error ? reject(error) : resolve(res),
    );
    instance.on('response', (client: unknown, status: number, _bytes: number, responseTime: number) => {
      if (!answered.has(client)) {
        answered.add(client);
        firstAnswers.push(responseTime);
        if (answered.size === connections) setTimeout(startWindow, options.warmupSeconds * 1000);
        return;
      }
      if (!measuring) return;
      latencies.push(responseTime);
      if (status < 300) ok += 1;
      else non2xx += 1;
    });
  });
  if (!figures) throw new Error(`${scenario.name}: only ${answered.size} of ${connections} connections were answered in ${limitSeconds} s`);
  figures.errors = result.errors + result.timeouts;
  if (window) {
    figures.pauses = await (await window).end();
    figures.hwmMb = memoryOf(serverPid).hwmMb;
  }
  return figures;
}

/** Reads each path once, a few at a time; any answer but 200 stops the run. */
async function prime(url: string, paths: string[], headers: Record<string, string>): Promise<void> {
  let next = 0;
  const reader = async () => {
    while (next < paths.length) {
      const path = paths[next++] as string;
      const response = await fetch(`${url}${path}`, { headers });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`priming ${path} answered ${response.status}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, reader));
}

/** With `metrics`, the server is Berth: its /metrics is read around the measured window. */
async function measure(url: string, pid: number, scenario: Scenario, headers: Record<string, string>, metrics = false): Promise<LoadResult> {
  if (scenario.primes) await prime(url, scenario.primes, headers);
  await waitForQuiet([pid]);
  const result = await load(url, pid, scenario, headers, DURATION, { warmupSeconds: WARMUP, metrics });
  const bad = result.non2xx + result.errors;
  const p = result.pauses;
  log(
    `  ${scenario.name.padEnd(11)} ${result.rps.toFixed(0).padStart(6)} req/s  p50 ${result.p50.toFixed(2)} ms  p99 ${result.p99.toFixed(2)} ms` +
      `  (first answer on a new connection: p99 ${num(result.firstAnswerP99 ?? Number.NaN)} max ${num(result.firstAnswerMax ?? Number.NaN)} ms)` +
      (p
        ? `  loop p99 ${num(p.loopP99)} max ${num(p.loopMax)} ms${p.stalls ? ` stalls ≥50 ms ${p.stalls['50']}` : ''}, gc ${num(p.gcCount, 0)} (${num(p.gcMajor, 0)} major) ${num(p.gcTotalMs)} ms max ${num(p.gcMaxMs)} ms`
        : '') +
      `  (load gen ${result.loadCpu.toFixed(2)} cores, server ${result.serverCpu.toFixed(2)}, ` +
      `${result.databaseCpu >= 0.01 ? `postgres ${result.databaseCpu.toFixed(2)}, ` : ''}other ${result.otherCpu.toFixed(2)} cores${bad ? `, ${bad} failed` : ''})`,
  );
  return result;
}

function scenarios(ids: string[], runId: string, deployments: number): Scenario[] {
  const n = deployments.toLocaleString('en');
  const json = { 'content-type': 'application/json' };
  const rotate = <T>(items: T[]) => {
    let i = 0;
    return () => items[i++ % items.length] as T;
  };
  let created = 0;
  let patched = 0;
  return [
    {
      name: 'get',
      title: 'get one deployment',
      // Each deployment's decrypted secrets are cached on its first read. The rotation's first
      // pass through the 5,000 sampled ids misses; at 1,300 GETs/s (a slow phase of this
      // machine) it took the whole window, and a PostgreSQL miss is a second query.
      primes: ids.map((id) => `/v2/deployments/${id}`),
      requests: () => {
        const next = rotate(ids);
        return [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/v2/deployments/${next()}` }) }];
      },
    },
    {
      name: 'list',
      title: `list 20 of ${n} (name_contains + status)`,
      requests: () => {
        const team = rotate(TEAMS);
        return [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/v2/deployments?name_contains=${team()}&status=READY&limit=20` }) }];
      },
    },
    {
      name: 'list-1',
      title: `list 20 of ${n}, 1 connection (latency without queueing)`,
      connections: 1,
      requests: () => {
        const team = rotate(TEAMS);
        return [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/v2/deployments?name_contains=${team()}&status=READY&limit=20` }) }];
      },
    },
    {
      name: 'list-sparse',
      title: `list 20 of ${n}, rare name (1 in 1,000 matches: the search reads deep)`,
      requests: () => {
        // '-0424' matches the 100 names numbered 042400–042499, of which 80 are READY.
        const prefix = rotate(Array.from({ length: 97 }, (_, k) => `-${String((k * 37) % Math.max(1, Math.floor(deployments / 100))).padStart(4, '0')}`));
        return [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/v2/deployments?name_contains=${prefix()}&status=READY&limit=20` }) }];
      },
    },
    {
      name: 'list-sparse-1',
      title: `list 20 of ${n}, rare name, 1 connection (the search's own latency)`,
      connections: 1,
      requests: () => {
        const prefix = rotate(Array.from({ length: 97 }, (_, k) => `-${String((k * 37) % Math.max(1, Math.floor(deployments / 100))).padStart(4, '0')}`));
        return [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/v2/deployments?name_contains=${prefix()}&status=READY&limit=20` }) }];
      },
    },
    {
      name: 'create',
      title: 'create (deployment + revision + 2 encrypted secrets)',
      requests: () => [
        {
          method: 'POST',
          path: '/v2/deployments',
          headers: json,
          setupRequest: (req) => ({
            ...req,
            body: JSON.stringify({
              name: `bench-${runId}-${created++}`,
              source: 'external_docker',
              source_config: { resource_spec: { cpu: 0.5, memory_mb: 512 } },
              source_revision_config: { image_uri: `registry.example.com/bench/agent:v${created}` },
              secrets: [
                { name: 'OPENAI_API_KEY', value: `sk-${randomBytes(18).toString('base64url')}` },
                { name: 'DATABASE_URL', value: 'postgres://app:secret@db.internal/app' },
              ],
            }),
          }),
        },
      ],
    },
    {
      name: 'backlog',
      title: `get one deployment while the engine drains ${BACKLOG.toLocaleString('en')} revisions queued in another workspace`,
      requests: () => {
        const next = rotate(ids);
        return [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/v2/deployments/${next()}` }) }];
      },
    },
    {
      name: 'patch',
      title: 'PATCH creating a revision',
      requests: () => {
        const next = rotate(ids);
        return [
          {
            method: 'PATCH',
            headers: json,
            setupRequest: (req) => ({
              ...req,
              path: `/v2/deployments/${next()}`,
              body: JSON.stringify({ source_revision_config: { image_uri: `registry.example.com/bench/agent:p${patched++}` } }),
            }),
          },
        ];
      },
    },
  ];
}

// ---------------------------------------------------------------------------- databases

/** A throwaway database for one run, dropped at the end (or on Ctrl-C). */
async function createBenchDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const database = await createPostgresDatabase(adminUrl, 'berth_bench');
  cleanups.push(database.drop);
  return database;
}

/** Waits until the engine has no revision in progress; answers how long that took. */
async function drainEngine(database: { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string }, timeoutMs = 180_000): Promise<number> {
  const db = openDatabase(database);
  const started = performance.now();
  try {
    for (;;) {
      const row = await db
        .selectFrom('revisions')
        .select((eb) => eb.fn.countAll<string | number>().as('n'))
        .where('status', 'in', [...IN_PROGRESS_STATUSES])
        .executeTakeFirstOrThrow();
      if (Number(row.n) === 0) return (performance.now() - started) / 1000;
      if (performance.now() - started > timeoutMs) throw new Error(`${row.n} revisions still in progress after ${timeoutMs / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await db.destroy();
  }
}

interface EngineResult {
  revisions: number;
  engineConcurrency: number;
  createSeconds: number;
  totalSeconds: number;
  revisionsPerSecond: number;
  /** The engine alone, started on revisions created while it was stopped. */
  backlog?: { revisions: number; seconds: number; revisionsPerSecond: number };
  burstPickup: { p50: number; p99: number; max: number };
  paced: { revisions: number; intervalMs: number };
  pacedPickup: { p50: number; p99: number; max: number };
  statuses: Record<string, number>;
}

interface DatabaseRun {
  kind: 'sqlite' | 'postgres';
  /** Deployments seeded in the listing workspace. */
  deployments: number;
  /** Whether the engine ran in the server (BERTH_ENGINE). */
  engineMode: 'on' | 'off';
  startupEmptyMs: number;
  startupSeededMs?: number;
  seedSeconds?: number;
  results: Partial<Record<ScenarioName, LoadResult>>;
  /** The FastAPI peer at the same size, in the same run. */
  peer?: Partial<Record<ScenarioName, LoadResult>>;
  drains: Partial<Record<ScenarioName, number>>;
  memory?: { hwmMb: number; rssMb: number };
  engine?: EngineResult;
  fairness?: FairnessResult;
  listeners?: ListenersResult;
  runners?: RunnersResult;
  profile?: string;
}

/** bench/fairness.ts: another workspace's image revisions while one holds its share with endless builds. */
interface FairnessResult {
  concurrency: number;
  share: number;
  hostile: number;
  hostileBuilding: number;
  rounds: number;
  pickup: { p50: number; p99: number; max: number } | null;
  deployed: { p50: number; p99: number; max: number } | null;
  baseline: { share: number; hostileBuilding: number; pickedUp: boolean; waitedMs: number };
}

interface ListenersResult {
  agents: number;
  setupSeconds: number;
  settleSeconds: number;
  idle: { seconds: number; serverCpu: number; rssMb: number; polls: number; heartbeats: number; errors: number };
  patches: { count: number; intervalMs: number; serverCpu: number; p50: number; p99: number; max: number };
  totals: { polls: number; heartbeats: number; reports: number; errors: number; lastError: string };
  /** A bare node:http server's CPU at the idle agents' request rate (share of one core). */
  idleFloor?: number;
  profile?: string;
}

/**
 * One database at one size: seeded once, then served with each engine mode in turn (the
 * first mode's server also runs the scripted scenarios when `scripted`). One run per mode.
 */
async function runDatabase(
  kind: 'sqlite' | 'postgres',
  deployments: number,
  ceilings: Partial<Record<ScenarioName, LoadResult>>,
  encryptionKey: string,
  scripted: boolean,
): Promise<DatabaseRun[]> {
  log(`${kind}: preparing (${deployments.toLocaleString('en')} deployments)`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `berth-bench-${kind}-`));
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const postgres = kind === 'postgres' ? await createBenchDatabase(POSTGRES_ADMIN_URL as string) : undefined;
  const database = postgres ? { kind: 'postgres' as const, url: postgres.url } : { kind: 'sqlite' as const, file: path.join(dataDir, 'berth.sqlite') };
  const apiKey = `berth_bench_${randomBytes(16).toString('hex')}`;
  const { DATABASE_URL: _ignored, ...baseEnv } = process.env;
  const env: NodeJS.ProcessEnv = {
    ...baseEnv,
    HOST: '127.0.0.1',
    BERTH_DATA_DIR: dataDir,
    BERTH_BOOTSTRAP_API_KEY: apiKey,
    BERTH_ENCRYPTION_KEY: encryptionKey,
    BERTH_RATE_LIMIT_PER_MINUTE: '0',
    BERTH_CONTAINER_RUNTIME: 'none',
    LOG_LEVEL: 'warn',
    ...(postgres ? { DATABASE_URL: postgres.url } : {}),
  };
  const run: DatabaseRun = { kind, deployments, engineMode: ENGINE_MODES[0] as 'on' | 'off', startupEmptyMs: 0, results: {}, drains: {} };
  const runs = [run];

  // First start on an empty database: migrations and bootstrap included.
  const first = await startBerthProcess({ ...env, BERTH_ENGINE: run.engineMode });
  run.startupEmptyMs = first.startupMs;
  await first.stop();
  log(`${kind}: start to first /ok on an empty database ${run.startupEmptyMs.toFixed(0)} ms`);

  const httpScenarios = ALL_SCENARIOS.filter((s) => !SCRIPTED.includes(s) && SELECTED.has(s));
  if (httpScenarios.length > 0) {
    log(`${kind}: seeding ${deployments.toLocaleString('en')} deployments`);
    const seeded = await runJson<{ ms: number; sampleIds: string[] }>(['bench/seed.ts', '--deployments', String(deployments)], {
      ...env,
      BERTH_DATA_DIR: dataDir,
    });
    run.seedSeconds = seeded.ms / 1000;
    log(`${kind}: seeded in ${run.seedSeconds.toFixed(1)} s`);

    // Shuffled, so consecutive requests touch unrelated rows.
    const ids = [...seeded.sampleIds].sort(() => Math.random() - 0.5);
    for (const [i, mode] of ENGINE_MODES.entries()) {
      const modeRun = i === 0 ? run : { ...run, engineMode: mode, results: {}, drains: {}, memory: undefined, profile: undefined, seedSeconds: undefined };
      if (i > 0) runs.push(modeRun);
      await serveScenarios(modeRun, { ...env, BERTH_ENGINE: mode }, database, ids, ceilings);
    }
  }
  if (postgres) await postgres.drop();

  if (scripted && SELECTED.has('listeners')) run.listeners = await runListeners(kind, env);
  if (scripted && SELECTED.has('runners')) run.runners = await runRunners(kind, env);

  if (scripted && SELECTED.has('engine')) {
    log(`${kind}: engine, ${ENGINE_REVISIONS} revisions`);
    await waitForQuiet([]);
    const engineDb = postgres ? await createBenchDatabase(POSTGRES_ADMIN_URL as string) : undefined;
    run.engine = await runJson<EngineResult>(['bench/engine.ts', '--revisions', String(ENGINE_REVISIONS)], {
      ...env,
      ...(engineDb ? { DATABASE_URL: engineDb.url } : {}),
    });
    await engineDb?.drop();
    const e = run.engine;
    log(
      `${kind}: engine ${e.revisions} revisions in ${e.totalSeconds.toFixed(2)} s = ${e.revisionsPerSecond.toFixed(0)} rev/s with the creates, ` +
        `${e.backlog?.revisionsPerSecond.toFixed(0) ?? '?'} rev/s alone; ` +
        `pick-up paced p50 ${e.pacedPickup.p50} ms p99 ${e.pacedPickup.p99} ms; burst p50 ${e.burstPickup.p50} ms p99 ${e.burstPickup.p99} ms`,
    );
  }
  if (scripted && SELECTED.has('fairness')) {
    log(`${kind}: fairness, one workspace holding its share with endless builds`);
    await waitForQuiet([]);
    const fairnessDb = postgres ? await createBenchDatabase(POSTGRES_ADMIN_URL as string) : undefined;
    run.fairness = await runJson<FairnessResult>(['bench/fairness.ts'], { ...env, ...(fairnessDb ? { DATABASE_URL: fairnessDb.url } : {}) });
    await fairnessDb?.drop();
    const f = run.fairness;
    log(`${kind}: fairness pick-up p50 ${f.pickup?.p50} ms p99 ${f.pickup?.p99} ms; baseline picked up: ${f.baseline.pickedUp}`);
  }
  return runs;
}

/** A new workspace of the bootstrap key's organization; its id. */
async function createWorkspace(url: string, headers: Record<string, string>, name: string): Promise<string> {
  const response = await fetch(`${url}/v1/workspaces`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  if (response.status !== 201) throw new Error(`creating workspace ${name} answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}

/** Starts the seeded server with one engine mode and measures the HTTP scenarios against it. */
async function serveScenarios(
  run: DatabaseRun,
  env: NodeJS.ProcessEnv,
  database: { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string },
  ids: string[],
  ceilings: Partial<Record<ScenarioName, LoadResult>>,
): Promise<void> {
  const profileName = flags['cpu-prof']
    ? `berth-${run.kind}-${run.deployments}-${run.engineMode}-${new Date().toISOString().replace(/[:.]/g, '-')}`
    : undefined;
  const berth = await startBerthProcess(env, profileName);
  run.startupSeededMs = berth.startupMs;
  log(`${run.kind}: engine ${run.engineMode}: start to first /ok at ${run.deployments.toLocaleString('en')} deployments ${berth.startupMs.toFixed(0)} ms`);
  const headers = { 'x-api-key': env.BERTH_BOOTSTRAP_API_KEY as string };
  const runId = randomBytes(3).toString('hex');
  // Creates land in a workspace of their own: the listing workspace stays as seeded for the
  // scenarios and engine modes that follow (thousands of newer names that match no needle
  // would otherwise sit ahead of every match in the listing index).
  const createHeaders = SELECTED.has('create') ? { ...headers, 'x-tenant-id': await createWorkspace(berth.url, headers, `bench-creates-${runId}`) } : headers;
  for (const scenario of scenarios(ids, runId, run.deployments)) {
    if (!SELECTED.has(scenario.name)) continue;
    if (scenario.name === 'backlog') {
      // Without the engine nothing would drain it: it would stay queued under every later scenario.
      if (run.engineMode === 'off') continue;
      // Another workspace's burst, written while the server runs: the engine's sweep finds it within 2 s.
      const queued = await runJson<{ ms: number }>(['bench/seed.ts', '--queued', String(BACKLOG)], env);
      log(`${run.kind}: ${BACKLOG.toLocaleString('en')} revisions queued in another workspace in ${(queued.ms / 1000).toFixed(1)} s`);
    }
    run.results[scenario.name] = await measure(berth.url, berth.pid, scenario, scenario.name === 'create' ? createHeaders : headers, true);
    if (!ceilings[scenario.name]) throw new Error(`no ceiling for ${scenario.name}`);
    if ((scenario.name === 'create' || scenario.name === 'patch' || scenario.name === 'backlog') && run.engineMode === 'on') {
      // The engine in the server works through the revisions just made (they fail at
      // deploy: BERTH_CONTAINER_RUNTIME=none); let it finish before the next scenario.
      run.drains[scenario.name] = await drainEngine(database);
      log(`${run.kind}: engine backlog after ${scenario.name} drained in ${run.drains[scenario.name]?.toFixed(1)} s`);
    }
  }
  run.memory = memoryOf(berth.pid);
  log(`${run.kind}: server peak RSS ${run.memory.hwmMb.toFixed(0)} MB (now ${run.memory.rssMb.toFixed(0)} MB)`);
  await berth.stop();
  if (profileName) {
    run.profile = mainThreadProfile(path.join(PROFILES, profileName));
    const { summarise } = await import('./profile-summary.js');
    const { formatLongTasks } = await import('./long-tasks.js');
    const profile = JSON.parse(fs.readFileSync(run.profile, 'utf8'));
    const summary = `${summarise(profile, 25)}\n\n${formatLongTasks(profile)}`;
    fs.writeFileSync(`${run.profile}.txt`, `${summary}\n`);
    log(`${run.kind}: CPU profile ${path.relative(ROOT, run.profile)} (summary in .txt beside it)\n${summary}`);
  }
}

/** The fairness scenario's lines, with the target of issue 20. */
function fairnessReport(f: FairnessResult): string[] {
  const met = f.pickup !== null && f.pickup.p99 < 2000 && f.rounds > 0;
  return [
    `Fair engine slots (bench/fairness.ts): workspace B creates ${f.hostile} code-host deployments whose builds never end (a builder that holds them), ` +
      `${f.concurrency} engine slots, workspace share ${f.share} (BERTH_ENGINE_WORKSPACE_SLOTS default); B builds ${f.hostileBuilding} at once and its other revisions wait QUEUED. ` +
      `Then workspace A creates ${f.rounds} image deployments one after another (instant runtime). Pick-up: the revision's first QUEUED event − its created_at.`,
    '',
    '| share | B building | A pick-up p50 ms | p99 ms | max ms | A create → DEPLOYED p50 ms | p99 ms |',
    '|---:|---:|---:|---:|---:|---:|---:|',
    `| ${f.share} | ${f.hostileBuilding} | ${f.pickup?.p50 ?? '–'} | ${f.pickup?.p99 ?? '–'} | ${f.pickup?.max ?? '–'} | ${f.deployed?.p50 ?? '–'} | ${f.deployed?.p99 ?? '–'} |`,
    `| ${f.baseline.share} (no share kept back, as before) | ${f.baseline.hostileBuilding} | ${f.baseline.pickedUp ? 'picked up' : `not picked up within ${f.baseline.waitedMs / 1000} s`} | | | | |`,
    '',
    'Target (issue 20):',
    '',
    `- **${met ? 'met' : 'not met'}**: another workspace's image revision picked up within 2 s while one workspace saturates its share: p99 ${f.pickup?.p99 ?? '–'} ms`,
    '',
  ];
}

/** The bare node:http server of bench/ceiling.ts, and the port it listens on. */
async function startCeiling(): Promise<{ ceiling: ReturnType<typeof spawnNode>; port: number }> {
  const ceiling = spawnNode(['bench/ceiling.ts'], process.env);
  const port = await new Promise<number>((resolve, reject) => {
    ceiling.process.stdout?.on('data', (chunk: Buffer) => {
      const match = /"port":(\d+)/.exec(chunk.toString());
      if (match) resolve(Number(match[1]));
    });
    ceiling.process.once('exit', () => reject(new Error(`ceiling server exited: ${ceiling.output.join('')}`)));
  });
  return { ceiling, port };
}

/**
 * The FastAPI peer (bench/peer.ts) at each size, seeded as Berth is, under the get, list and
 * create loads; with a line saying what ran, or why it did not. Never fails the bench.
 */
async function measurePeer(): Promise<{ note: string; bySize: Map<number, Partial<Record<ScenarioName, LoadResult>>> }> {
  const bySize = new Map<number, Partial<Record<ScenarioName, LoadResult>>>();
  if (flags['no-peer']) return { note: 'left out (--no-peer)', bySize };
  if (!PEER_SCENARIOS.some((name) => SELECTED.has(name))) return { note: 'not run (none of get, list and create selected)', bySize };
  const python = peerPython();
  if (!python) {
    log(`FastAPI peer: ${PEER_MISSING}; going on without it`);
    return { note: PEER_MISSING, bySize };
  }
  let ran = '';
  let failure = '';
  for (const size of SIZES) {
    let peer: Peer | undefined;
    try {
      peer = await startPeer(python, size, (cleanup) => cleanups.push(cleanup));
      ran = `${peer.describe} (\`${python}\`)`;
      log(`FastAPI peer, ${size.toLocaleString('en')} deployments: ${peer.describe}`);
      const results: Partial<Record<ScenarioName, LoadResult>> = {};
      const ids = [...peer.sampleIds].sort(() => Math.random() - 0.5);
      for (const scenario of scenarios(ids, randomBytes(3).toString('hex'), size)) {
        if (!PEER_SCENARIOS.includes(scenario.name) || !SELECTED.has(scenario.name)) continue;
        results[scenario.name] = await measure(peer.url, peer.pid, scenario, { 'x-api-key': peer.apiKey });
      }
      bySize.set(size, results);
    } catch (error) {
      failure = `failed at ${size.toLocaleString('en')} deployments (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
      log(`FastAPI peer: ${failure}; going on without it`);
      break;
    } finally {
      await peer?.stop();
    }
  }
  return { note: bySize.size === 0 ? failure : `${ran}${failure ? `; ${failure}` : ''}`, bySize };
}

/**
 * What the idle agents' request rate costs a bare node:http server on this machine (the
 * ceiling's fixed deployment body, about the size of a desired state): the floor under
 * Berth's idle figure, since each call wakes the process however little it does.
 */
async function idleFloor(requestsPerSecond: number, seconds: number): Promise<number> {
  const { ceiling, port } = await startCeiling();
  try {
    const url = `http://127.0.0.1:${port}/v2/deployments/${randomUUID()}`;
    const fire = () =>
      void fetch(url).then(
        (response) => response.arrayBuffer(),
        () => undefined,
      );
    const timer = setInterval(fire, 1000 / requestsPerSecond);
    try {
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const cpu0 = processCpuSeconds(ceiling.pid);
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      return (processCpuSeconds(ceiling.pid) - cpu0) / seconds;
    } finally {
      clearInterval(timer);
    }
  } finally {
    await ceiling.stop();
  }
}

/**
 * The listeners scenario (bench/listeners.ts) against a server of its own on an empty
 * database, with the default rate limit: what a real deployment with that many agents runs.
 */
async function runListeners(kind: 'sqlite' | 'postgres', baseEnv: NodeJS.ProcessEnv): Promise<ListenersResult> {
  log(`${kind}: listeners, ${AGENTS} agents long-polling`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `berth-bench-listeners-${kind}-`));
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const postgres = kind === 'postgres' ? await createBenchDatabase(POSTGRES_ADMIN_URL as string) : undefined;
  const { BERTH_RATE_LIMIT_PER_MINUTE: _unlimited, ...env } = baseEnv;
  const serverEnv = { ...env, BERTH_DATA_DIR: dataDir, ...(postgres ? { DATABASE_URL: postgres.url } : {}) };
  const profileName = flags['cpu-prof'] ? `berth-listeners-${kind}-${new Date().toISOString().replace(/[:.]/g, '-')}` : undefined;
  const berth = await startBerthProcess(serverEnv, profileName);
  await waitForQuiet([berth.pid]);
  let result: ListenersResult;
  try {
    result = await runJson<ListenersResult>(
      ['bench/listeners.ts', '--url', berth.url, '--pid', String(berth.pid), '--key', env.BERTH_BOOTSTRAP_API_KEY as string, '--agents', String(AGENTS)],
      env,
    );
  } finally {
    await berth.stop();
    await postgres?.drop();
  }
  if (profileName) {
    result.profile = mainThreadProfile(path.join(PROFILES, profileName));
    const { summarise } = await import('./profile-summary.js');
    const summary = summarise(JSON.parse(fs.readFileSync(result.profile, 'utf8')), 25);
    fs.writeFileSync(`${result.profile}.txt`, `${summary}\n`);
    log(`${kind}: listeners CPU profile ${path.relative(ROOT, result.profile)}\n${summary}`);
  }
  const { idle, patches } = result;
  result.idleFloor = await idleFloor((idle.polls + idle.heartbeats) / idle.seconds, Math.min(idle.seconds, 30));
  log(
    `${kind}: ${result.agents} agents idle: server ${(idle.serverCpu * 100).toFixed(1)} % of a core, RSS ${idle.rssMb.toFixed(0)} MB; ` +
      `bare node:http at the same request rate ${(result.idleFloor * 100).toFixed(1)} %; ` +
      `PATCH → agent p50 ${patches.p50.toFixed(1)} ms p99 ${patches.p99.toFixed(1)} ms max ${patches.max.toFixed(1)} ms; ${result.totals.errors} failed calls${result.totals.errors > 0 ? ` (last: ${result.totals.lastError})` : ''}`,
  );
  return result;
}

/**
 * The runners scenario (bench/runners.ts) against a server of its own on an empty database,
 * with BERTH_BUILDER=runners and the default rate limit.
 */
async function runRunners(kind: 'sqlite' | 'postgres', baseEnv: NodeJS.ProcessEnv): Promise<RunnersResult> {
  log(`${kind}: runners, bench runner processes building ${RUNNER_BUILDS} revisions at a time`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `berth-bench-runners-${kind}-`));
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const postgres = kind === 'postgres' ? await createBenchDatabase(POSTGRES_ADMIN_URL as string) : undefined;
  const { BERTH_RATE_LIMIT_PER_MINUTE: _unlimited, ...env } = baseEnv;
  const serverEnv = {
    ...env,
    BERTH_DATA_DIR: dataDir,
    BERTH_BUILDER: 'runners',
    // Runners push there; nothing listens, since no bench runner pushes, but each claim signs a push credential.
    BERTH_REGISTRY: `127.0.0.1:${await freePort()}`,
    BERTH_REGISTRY_TLS_VERIFY: 'off',
    // Every bench build is one workspace's, and a workspace's builds on runners count in its share (3 by default).
    BERTH_ENGINE_WORKSPACE_SLOTS: '8',
    ...(postgres ? { DATABASE_URL: postgres.url } : {}),
  };
  const profileName = flags['cpu-prof'] ? `berth-runners-${kind}-${new Date().toISOString().replace(/[:.]/g, '-')}` : undefined;
  const berth = await startBerthProcess(serverEnv, profileName);
  const loadBefore = os.loadavg();
  await waitForQuiet([berth.pid]);
  let result: RunnersResult;
  try {
    const paced = QUICK ? '20' : '50';
    result = await runJson<RunnersResult>(
      [
        'bench/runners.ts',
        '--url',
        berth.url,
        '--pid',
        String(berth.pid),
        '--key',
        env.BERTH_BOOTSTRAP_API_KEY as string,
        '--builds',
        String(RUNNER_BUILDS),
        '--paced',
        paced,
      ],
      env,
    );
  } finally {
    await berth.stop();
    await postgres?.drop();
  }
  result.load = { before: loadBefore[0] as number, after: os.loadavg()[0] as number };
  if (profileName) {
    result.profile = mainThreadProfile(path.join(PROFILES, profileName));
    const { summarise } = await import('./profile-summary.js');
    const summary = summarise(JSON.parse(fs.readFileSync(result.profile, 'utf8')), 25);
    fs.writeFileSync(`${result.profile}.txt`, `${summary}\n`);
    log(`${kind}: runners CPU profile ${path.relative(ROOT, result.profile)}\n${summary}`);
  }
  for (const r of result.rounds) {
    log(
      `${kind}: ${r.processes} runner(s): pick-up p50 ${r.pickup.p50.toFixed(1)} ms p99 ${r.pickup.p99.toFixed(1)} ms; ` +
        `${r.burst.buildsPerMinute.toFixed(0)} builds/min; ${r.burst.serverCpuMsPerBuild.toFixed(1)} ms server CPU per build`,
    );
  }
  log(`${kind}: ${result.idle.runners} idle runners polling: server ${(result.idle.serverCpu * 100).toFixed(1)} % of a core`);
  return result;
}

// ---------------------------------------------------------------------------- report

interface Target {
  id: string;
  /** The issue that set the target. */
  issue: 4 | 14 | 24;
  /** Given the run's deployments, written out. */
  text: (deployments: string) => string;
  /** Null when the run did not measure it. */
  check(run: DatabaseRun, ceilings: Partial<Record<ScenarioName, LoadResult>>): { met: boolean; measured: string } | null;
}

const ratioOf = (run: DatabaseRun, ceilings: Partial<Record<ScenarioName, LoadResult>>, name: ScenarioName) => {
  const berth = run.results[name];
  const ceiling = ceilings[name];
  return berth && ceiling ? berth.rps / ceiling.rps : undefined;
};

const TARGETS: Target[] = [
  {
    id: 'get',
    issue: 4,
    text: () => `get ≥ 0.5 of ceiling with p99 < 10 ms at ${CONNECTIONS} connections`,
    check: (run, ceilings) => {
      const ratio = ratioOf(run, ceilings, 'get');
      const r = run.results.get;
      if (ratio === undefined || !r) return null;
      return { met: ratio >= 0.5 && r.p99 < 10, measured: `${ratio.toFixed(2)} of ceiling, p99 ${r.p99.toFixed(1)} ms` };
    },
  },
  {
    id: 'create',
    issue: 4,
    text: () => 'create ≥ 0.25 of ceiling',
    check: (run, ceilings) => {
      const ratio = ratioOf(run, ceilings, 'create');
      return ratio === undefined ? null : { met: ratio >= 0.25, measured: `${ratio.toFixed(2)} of ceiling` };
    },
  },
  {
    id: 'list',
    issue: 4,
    text: (n) => `listing 20 of ${n} under 20 ms p99`,
    check: (run) => {
      const r = run.results.list;
      const single = run.results['list-1'];
      const alone = single ? `; with 1 connection p99 ${single.p99.toFixed(1)} ms` : '';
      return r ? { met: r.p99 < 20, measured: `p99 ${r.p99.toFixed(1)} ms at ${CONNECTIONS} connections${alone}` } : null;
    },
  },
  {
    id: 'pickup',
    issue: 4,
    text: () => 'engine pick-up under 50 ms (p99, engine not saturated)',
    check: (run) => {
      const e = run.engine;
      return e ? { met: e.pacedPickup.p99 < 50, measured: `p99 ${e.pacedPickup.p99} ms (p50 ${e.pacedPickup.p50} ms)` } : null;
    },
  },
  {
    id: 'rss',
    issue: 4,
    text: (n) => `RSS under 200 MB at ${n} deployments`,
    check: (run) => (run.memory ? { met: run.memory.hwmMb < 200, measured: `peak ${run.memory.hwmMb.toFixed(0)} MB` } : null),
  },
  {
    id: 'search-1',
    issue: 14,
    text: (n) => `rare name_contains at ${n}: p99 under 20 ms with 1 connection`,
    check: (run) => {
      const r = run.results['list-sparse-1'];
      return r ? { met: r.p99 < 20, measured: `p99 ${r.p99.toFixed(1)} ms` } : null;
    },
  },
  {
    id: 'search-50',
    issue: 14,
    text: (n) => `rare name_contains at ${n}: at least 1,000 requests/s at ${CONNECTIONS} connections`,
    check: (run) => {
      const r = run.results['list-sparse'];
      return r ? { met: r.rps >= 1000, measured: `${r.rps.toFixed(0)} requests/s (p99 ${r.p99.toFixed(1)} ms)` } : null;
    },
  },
  {
    id: 'list-50',
    issue: 14,
    text: (n) => `listing 20 of ${n} at ${CONNECTIONS} connections: p99 under 30 ms`,
    check: (run) => {
      const r = run.results.list;
      return r ? { met: r.p99 < 30, measured: `p99 ${r.p99.toFixed(1)} ms at ${r.rps.toFixed(0)} requests/s` } : null;
    },
  },
  {
    id: 'engine',
    issue: 14,
    text: () => 'engine with instant drivers: at least 1,000 revisions/s on SQLite, 300/s on PostgreSQL',
    check: (run) => {
      const backlog = run.engine?.backlog;
      if (!backlog) return null;
      const wanted = run.kind === 'sqlite' ? 1000 : 300;
      return { met: backlog.revisionsPerSecond >= wanted, measured: `${backlog.revisionsPerSecond.toFixed(0)} revisions/s (the engine alone on a backlog)` };
    },
  },
  {
    id: 'create-engine',
    issue: 14,
    text: () => 'create with the engine in the same process: at least 2,000/s on SQLite',
    check: (run) => {
      const r = run.results.create;
      return r && run.kind === 'sqlite' && run.engineMode === 'on' ? { met: r.rps >= 2000, measured: `${r.rps.toFixed(0)} creates/s` } : null;
    },
  },
  {
    id: 'pg-get',
    issue: 14,
    text: () => 'PostgreSQL GET: at least 0.2 of the ceiling, p99 under 15 ms',
    check: (run, ceilings) => {
      const ratio = ratioOf(run, ceilings, 'get');
      const r = run.results.get;
      if (run.kind !== 'postgres' || ratio === undefined || !r) return null;
      return { met: ratio >= 0.2 && r.p99 < 15, measured: `${ratio.toFixed(2)} of ceiling, p99 ${r.p99.toFixed(1)} ms` };
    },
  },
];

/** Issue 24: the tail under 50 connections, with the engine in the server, at every size. */
const TAIL_TARGETS: [ScenarioName, number][] = [
  ['get', 25],
  ['list', 50],
  ['create', 100],
];
for (const [name, limit] of TAIL_TARGETS) {
  TARGETS.push({
    id: `tail-${name}`,
    issue: 24,
    text: (n) => `${name} p99 under ${limit} ms at ${n} deployments, ${CONNECTIONS} connections, engine in the server`,
    check: (run) => {
      const r = run.results[name];
      if (!r || run.engineMode !== 'on') return null;
      const p = r.pauses;
      return {
        met: r.p99 < limit,
        measured: `p99 ${ms(r.p99)} ms (p50 ${ms(r.p50)} ms); event loop p99 ${num(p?.loopP99)} ms, max ${num(p?.loopMax)} ms, stalls ≥25/50/100 ms ${stallCells(p)}; longest GC pause ${num(p?.gcMaxMs)} ms`,
      };
    },
  });
}

/** Issue 24: Berth at least 5 times the FastAPI peer's rate (bench/peer/fastapi_peer.py) in every phase, in the same run. */
TARGETS.push({
  id: 'peer',
  issue: 24,
  text: (n) => `every phase (get, list, create) ≥ 5× the FastAPI peer's rate at ${n} deployments, measured in the same run`,
  check: (run) => {
    const phases = PEER_SCENARIOS.filter((name) => run.results[name] && run.peer?.[name]);
    if (phases.length === 0) return null;
    const ratios = phases.map((name) => ({ name, berth: run.results[name]!.rps, peer: run.peer![name]!.rps }));
    const unmeasured = PEER_SCENARIOS.filter((name) => !phases.includes(name));
    return {
      met: ratios.every((r) => r.berth >= 5 * r.peer),
      measured:
        ratios.map((r) => `${r.name} ${(r.berth / r.peer).toFixed(2)}× (${r.berth.toFixed(0)} against ${r.peer.toFixed(0)} req/s)`).join(', ') +
        (unmeasured.length > 0 ? `; ${unmeasured.join(' and ')} not run: only the phases measured are judged` : ''),
    };
  },
});

function machine(): string {
  const cpus = os.cpus();
  const git = (...args: string[]) => {
    try {
      return execFileSync('git', ['--no-optional-locks', ...args], { cwd: ROOT, encoding: 'utf8' }).trim();
    } catch {
      return '';
    }
  };
  const commit = git('rev-parse', '--short=12', 'HEAD') || 'unknown';
  const server = SERVER_ROOT === ROOT ? '' : `; server from ${SERVER_ROOT}`;
  const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
  return (
    `${cpus[0]?.model ?? 'unknown CPU'}, ${cpus.length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, ` +
    `Node ${process.version} (${process.platform} ${process.arch}); commit ${commit}${dirty ? ' with uncommitted changes' : ''}${server}`
  );
}

const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1));
/** The server's own figures for one scenario's window (bench/server-metrics.ts), as table cells. */
function pauseCells(r: LoadResult): string {
  const p = r.pauses ?? {};
  return (
    `${num(p.loopP50)} / ${num(p.loopP99)} / ${num(p.loopMax)}${p.loopSource === 'prom-client' ? ' (prom-client)' : ''} | ${stallCells(p)} | ${num(p.gcCount, 0)} (${num(p.gcMajor, 0)}) | ` +
    `${num(p.gcTotalMs)} / ${num(p.gcMaxMs)} | ${num(p.oldSpaceMb, 0)} | ${num(r.hwmMb, 0)} |`
  );
}

/** Stalls of the loop over 25, 50 and 100 ms in the window; an older server counts none. */
function stallCells(p: PauseFigures | undefined): string {
  return p?.stalls ? ['25', '50', '100'].map((ms) => num(p.stalls?.[ms], 0)).join(' / ') : '–';
}

/** A figure an older server may not report. */
function num(value: number | undefined, digits = 1): string {
  return value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits);
}

function report(runs: DatabaseRun[], ceilings: Partial<Record<ScenarioName, LoadResult>>, peerNote: string, startedAt: Date, elapsedS: number): string {
  const autocannonVersion = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules/autocannon/package.json'), 'utf8')).version as string;
  const lines: string[] = [];
  lines.push(`## ${startedAt.toISOString().slice(0, 10)} ${startedAt.toISOString().slice(11, 16)} UTC`, '');
  if (flags.label) lines.push(`- Run: ${flags.label}`);
  lines.push(`- Server: \`node ${[...SERVER_NODE_FLAGS, 'dist/main.js serve'].join(' ')}\``);
  lines.push(`- Machine: ${machine()}`);
  lines.push(
    `- Load: autocannon ${autocannonVersion} in the runner process on the same machine, ${CONNECTIONS} connections, ` +
      `${DURATION} s measured per scenario over the same connections, once each had its first answer and ${WARMUP} s more had passed ` +
      "(a new connection's first answer is reported apart; before the get load, each sampled deployment is read once, as a server that has run a while has its secrets in memory); rate limiter off, LOG_LEVEL=warn, " +
      'BERTH_CONTAINER_RUNTIME=none: with the engine in the server it fails the new revisions at deploy; with BERTH_ENGINE=off nothing works on them. ' +
      'Creates go to a workspace of their own, so the listing workspace keeps its seeded deployments for every scenario and engine mode. ' +
      '"loop" is the event loop\'s delay over the measured window and "GC" the collections within it, both from the server\'s /metrics; ' +
      'peak RSS is VmHWM at the end of the scenario (the peak so far). ' +
      `"load gen CPU", "server CPU", "postgres CPU" (its server processes; parallel workers that live for one query ` +
      `land in "other") and "other CPU" (every other process on the ` +
      `machine: when it is high, the run shared the machine and its numbers are low) are cores busy (1.00 = one of the ` +
      `${os.cpus().length} cores); each scenario first waits up to ${QUICK ? 5 : 45} s for the rest of the machine to be idle.`,
  );
  lines.push(
    `- Ceiling: bare \`node:http\` server (bench/ceiling.ts) answering the same paths with fixed bodies of the same shape. ` +
      `Whole run: ${(elapsedS / 60).toFixed(1)} min.${flags['cpu-prof'] ? ' Servers ran with --cpu-prof (slower).' : ''}`,
  );
  const peered = runs.some((run) => run.peer);
  lines.push(
    peered
      ? `- FastAPI peer: bench/peer/fastapi_peer.py on ${peerNote}, one worker, a SQLite file of its own (WAL) seeded with bench/seed.ts's ` +
          'names, statuses and dates at each size; the same get, list and create loads (peer columns; "× peer" is Berth\'s rate over the peer\'s).'
      : `- FastAPI peer: ${peerNote}.`,
    '',
  );
  const ceilingRows = ALL_SCENARIOS.filter((s) => ceilings[s]);
  for (const run of runs) {
    lines.push(
      `### ${run.kind === 'sqlite' ? 'SQLite (embedded default)' : 'PostgreSQL'}, ${run.deployments.toLocaleString('en')} deployments, ` +
        `${run.engineMode === 'on' ? 'engine in the server' : 'BERTH_ENGINE=off'}`,
      '',
    );
    if (ceilingRows.length > 0) {
      const peerHeads = run.peer ? ' peer req/s | peer p50 | peer p99 | × peer |' : '';
      lines.push(
        `| scenario | Berth req/s | p50 ms | p99 ms | ceiling req/s | ceiling p50 | ceiling p99 | ratio |${peerHeads} load gen CPU | server CPU |${run.kind === 'postgres' ? ' postgres CPU |' : ''} other CPU | failed | ` +
          'loop p50 / p99 / max ms | stalls ≥25 / 50 / 100 ms | GC pauses (major) | GC total / longest ms | old space MB | peak RSS MB |',
      );
      lines.push(
        `|---|---:|---:|---:|---:|---:|---:|---:|${run.peer ? '---:|'.repeat(4) : ''}---:|---:|${run.kind === 'postgres' ? '---:|' : ''}---:|---:|---:|---:|---:|---:|---:|`,
      );
      for (const name of ceilingRows) {
        const b = run.results[name];
        const c = ceilings[name] as LoadResult;
        if (!b) continue;
        const title = scenarios([], '', run.deployments).find((s) => s.name === name)?.title ?? name;
        const p = run.peer?.[name];
        const peerCells = !run.peer ? '' : p ? `${p.rps.toFixed(0)} | ${ms(p.p50)} | ${ms(p.p99)} | ${(b.rps / p.rps).toFixed(2)} | ` : '– | – | – | – | ';
        lines.push(
          `| ${title} | ${b.rps.toFixed(0)} | ${ms(b.p50)} | ${ms(b.p99)} | ${c.rps.toFixed(0)} | ${ms(c.p50)} | ${ms(c.p99)} | ` +
            `${(b.rps / c.rps).toFixed(2)} | ${peerCells}${b.loadCpu.toFixed(2)} | ${b.serverCpu.toFixed(2)} | ${run.kind === 'postgres' ? `${b.databaseCpu.toFixed(2)} | ` : ''}${b.otherCpu.toFixed(2)} | ${b.non2xx + b.errors} | ` +
            pauseCells(b),
        );
      }
      lines.push('');
    }
    const facts: string[] = [];
    facts.push(
      `start to first 200 on /ok: ${run.startupEmptyMs.toFixed(0)} ms on an empty database (migrations included)` +
        (run.startupSeededMs !== undefined ? `, ${run.startupSeededMs.toFixed(0)} ms at ${run.deployments.toLocaleString('en')} deployments` : ''),
    );
    if (run.memory)
      facts.push(`server peak RSS (VmHWM) over the scenarios at ${run.deployments.toLocaleString('en')} deployments: ${run.memory.hwmMb.toFixed(0)} MB`);
    if (run.seedSeconds !== undefined)
      facts.push(
        `seeding ${run.deployments.toLocaleString('en')} deployments (revision, 1–2 encrypted secrets, status event each) through the store layer: ${run.seedSeconds.toFixed(1)} s`,
      );
    for (const name of ceilingRows) {
      const b = run.results[name];
      if (b?.firstAnswerMax !== undefined)
        facts.push(
          `${name}: the first answer on each of the ${CONNECTIONS} new connections (opened at once, before the window): p99 ${ms(b.firstAnswerP99 ?? Number.NaN)} ms, max ${ms(b.firstAnswerMax)} ms`,
        );
    }
    for (const [name, seconds] of Object.entries(run.drains)) facts.push(`engine backlog left by ${name} drained in ${seconds.toFixed(1)} s`);
    if (run.engine) {
      const e = run.engine;
      facts.push(
        `engine (instant runtime and fake builder, ${e.engineConcurrency} slots): ${e.revisions} revisions CREATING → terminal in ` +
          `${e.totalSeconds.toFixed(2)} s while 50 callers created them (created in ${e.createSeconds.toFixed(2)} s) = **${e.revisionsPerSecond.toFixed(0)} revisions/s**; ` +
          (e.backlog
            ? `the engine alone, started on ${e.backlog.revisions} revisions created while it was stopped: ${e.backlog.seconds.toFixed(2)} s = **${e.backlog.revisionsPerSecond.toFixed(0)} revisions/s**; `
            : '') +
          `final statuses of all ${e.revisions + (e.backlog?.revisions ?? 0) + e.paced.revisions} revisions (burst, backlog and paced): ` +
          `${Object.entries(e.statuses)
            .map(([s, n]) => `${s} ${n}`)
            .join(', ')}`,
      );
      facts.push(
        `pick-up delay (first QUEUED event − created_at): **p50 ${e.pacedPickup.p50} ms, p99 ${e.pacedPickup.p99} ms** ` +
          `(max ${e.pacedPickup.max} ms) for ${e.paced.revisions} revisions created every ${e.paced.intervalMs} ms; ` +
          `within the burst of ${e.revisions}: p50 ${e.burstPickup.p50} ms, p99 ${e.burstPickup.p99} ms (queueing behind the burst)`,
      );
    }
    if (run.profile) facts.push(`CPU profile: ${path.relative(ROOT, run.profile)}`);
    lines.push(...facts.map((f) => `- ${f}`), '');
    if (run.fairness) lines.push(...fairnessReport(run.fairness));
    if (run.listeners) lines.push(...listenersReport(run.listeners));
    if (run.runners) lines.push(...runnersReport(run.runners, ROOT));
    for (const issue of [4, 14, 24] as const) {
      const outcomes = TARGETS.filter((target) => target.issue === issue).map((target) => ({ target, outcome: target.check(run, ceilings) }));
      // A run of the listeners scenario alone measures none of them: no section then.
      if (!outcomes.some(({ outcome }) => outcome)) continue;
      lines.push(`Targets (issue ${issue}):`, '');
      for (const { target, outcome } of outcomes) {
        if (!outcome) {
          lines.push(`- not measured in this run: ${target.text(run.deployments.toLocaleString('en'))}`);
          continue;
        }
        lines.push(`- **${outcome.met ? 'met' : 'not met'}**: ${target.text(run.deployments.toLocaleString('en'))}: ${outcome.measured}`);
        if (!outcome.met) lines.push(`  - cause: ${causeOf(target.id, run.kind)}`);
      }
      lines.push('');
    }
  }
  return lines.join('\n');
}

/** The listeners scenario's table and the targets of issue 12. */
function listenersReport(r: ListenersResult): string[] {
  const { idle, patches } = r;
  const target = (met: boolean, text: string) => `- **${met ? 'met' : 'not met'}**: ${text}`;
  return [
    `Listeners (bench/listeners.ts): ${r.agents} simulated agents (the agent's protocol client: a heartbeat at start and then only when no other call reached Berth within the interval Berth answers; state long poll with wait=30, the first wait cut at random so that agents do not wake together), ` +
      `one \`external_docker\` deployment placed on each, default rate limit; idle measured over ${idle.seconds.toFixed(0)} s ` +
      `(${idle.polls} polls and ${idle.heartbeats} heartbeats answered meanwhile); then ${patches.count} PATCHes (new image) one every ${patches.intervalMs} ms, ` +
      "each on another agent's deployment: delay from sending the PATCH to its agent receiving a desired state naming the new revision.",
    '',
    '| scenario | agents | idle server CPU | bare node:http at the same request rate | idle RSS MB | PATCH → agent p50 ms | p99 ms | max ms | server CPU during PATCHes | failed calls |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| listeners long-polling while deployments change | ${r.agents} | ${(idle.serverCpu * 100).toFixed(1)} % | ` +
      `${r.idleFloor === undefined ? '–' : `${(r.idleFloor * 100).toFixed(1)} %`} | ${idle.rssMb.toFixed(0)} | ` +
      `${ms(patches.p50)} | ${ms(patches.p99)} | ${ms(patches.max)} | ${patches.serverCpu.toFixed(2)} | ${r.totals.errors} |`,
    '',
    'Targets (issue 12):',
    '',
    target(patches.p99 < 100, `PATCH → agent p99 under 100 ms with ${r.agents} agents connected: ${ms(patches.p99)} ms`),
    target(idle.serverCpu < 0.05, `idle agents cost under 5 % of a core: ${(idle.serverCpu * 100).toFixed(1)} %`),
    ...(r.profile ? [`- CPU profile: ${path.relative(ROOT, r.profile)}`] : []),
    '',
  ];
}

/** The build scenario's section, with the targets of issue 10. */
function buildReport(build: BuildResult): string {
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const row = (name: string, p: BuildResult['cold']) =>
    `| ${name} | ${seconds(p.totalMs)} | ${seconds(p.gitMs)} | ${seconds(p.basesMs)} | ${seconds(p.builderMs)} | ${seconds(p.exportMs)} | ${seconds(p.runtimeMs)} | ${(p.overheadMs / 1000).toFixed(2)} s |`;
  const target = (met: boolean, text: string) => `- **${met ? 'met' : 'not met'}**: ${text}`;
  return [
    '### Build from a code host (bench/build.ts)',
    '',
    `The sample LangGraph.js agent (test/fixtures/agents/echo-agent) from a git repository served by git http-backend, built with ${build.builder} ` +
      'on the local base image and run with podman, by Berth compiled as `npm start` runs it. Cold: a fresh data directory (no npm cache) and a ' +
      'package name no earlier build installed; warm: a commit changing only the graph. Both in the build sandbox (docs/security.md), ' +
      'on a build directory of their own, so the cold build also makes the base image available to the sandbox, as the first build on a host does. ' +
      'Total: from the create or PATCH to DEPLOYED. Bases: the base image copied into the sandbox (once per host and base image). ' +
      "Export: the built image copied out of the sandbox into the host's store. " +
      "Berth's overhead: total minus git, the bases, the builder, the export and the container's start until /ok.",
    '',
    '| build | total | git | bases | builder | export | container to /ok | Berth overhead |',
    '|---|---|---|---|---|---|---|---|',
    row('cold', build.cold),
    row('warm', build.warm),
    ...(build.secretOnly ? [row(`secret only (${build.secretOnly.built ? 'built' : 'no build'})`, build.secretOnly)] : []),
    '',
    'Targets (issue 10):',
    '',
    target(build.cold.totalMs < 60_000, `cold build under 60 s: ${seconds(build.cold.totalMs)}`),
    target(build.warm.totalMs < 15_000, `warm build under 15 s: ${seconds(build.warm.totalMs)}`),
    target(
      Math.max(build.cold.overheadMs, build.warm.overheadMs) < 1000,
      `Berth's overhead under 1 s: cold ${seconds(build.cold.overheadMs)}, warm ${seconds(build.warm.overheadMs)}`,
    ),
    ...(build.secretOnly
      ? [
          target(
            !build.secretOnly.built && build.secretOnly.totalMs < 2000,
            `secret-only revision to DEPLOYED under 2 s with 0 builds (issue 21): ${seconds(build.secretOnly.totalMs)}, ${build.secretOnly.built ? '1 build' : '0 builds'}`,
          ),
        ]
      : []),
    '',
  ].join('\n');
}

/** The flows scenario's section, with the targets of issue 21. */
function flowsReport(flows: FlowsResult): string {
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const row = (name: string, f: Flow) =>
    `| ${name} | ${seconds(f.totalMs)} | ${seconds(f.pollMs)} | ${seconds(f.gitMs)} | ${seconds(f.basesMs)} | ${seconds(f.builderMs)} | ${seconds(f.exportMs)} | ` +
    `${seconds(f.runtimeMs)} (${seconds(f.serverStartMs)} + ${seconds(f.graphLoadMs)} + ${seconds(f.healthMs)}) | ${seconds(f.answerMs)} | ${(f.overheadMs / 1000).toFixed(2)} s | ${f.builds} |`;
  const target = (met: boolean, text: string) => `- **${met ? 'met' : 'not met'}**: ${text}`;
  const p50 = (pick: (f: Flow) => number) => percentile(flows.pushes.map(pick), 50);
  const median: Flow = {
    totalMs: p50((f) => f.totalMs),
    pollMs: p50((f) => f.pollMs),
    gitMs: p50((f) => f.gitMs),
    basesMs: p50((f) => f.basesMs),
    builderMs: p50((f) => f.builderMs),
    exportMs: p50((f) => f.exportMs),
    runtimeMs: p50((f) => f.runtimeMs),
    serverStartMs: p50((f) => f.serverStartMs),
    graphLoadMs: p50((f) => f.graphLoadMs),
    healthMs: p50((f) => f.healthMs),
    answerMs: p50((f) => f.answerMs),
    overheadMs: p50((f) => f.overheadMs),
    builds: p50((f) => f.builds),
  };
  const load = (values: number[]) => values.map((v) => v.toFixed(1)).join(' / ');
  const noBuild = (f: Flow) => f.builds === 0;
  return [
    '### Flows of the sample project (bench/flows.ts)',
    '',
    'The sample LangGraph.js agent (test/fixtures/agents/echo-agent) in a git repository served by git http-backend, behind a `git` ' +
      'integration that builds on push (BERTH_GIT_POLL_SECONDS=1), built with buildah in the build sandbox and run with podman by ' +
      'Berth compiled as `npm start` runs it. Every flow ends when the official SDK got the expected answer from the deployment. ' +
      "Push: from `git push` returning; poll: until the poller made the revision; builder: the builder's own time; export: the " +
      'image copied out of the sandbox; container: its start until it answered /ok and listed every graph, split by the agent ' +
      "server's own log into `podman run` returning until its first line (node and the server's modules loading, tsx too when a graph was not compiled at build), its first line until it " +
      "listens (the graphs imported) and listening until Berth saw /ok and every graph; answer: DEPLOYED until the SDK's " +
      "run answered; Berth: the rest (queueing, status changes, the build's identity and reuse checks). " +
      `Machine load (1/5/15 min) before ${load(flows.load.before)}, after ${load(flows.load.after)} on ${flows.cores} cores.`,
    '',
    '| flow | total | poll | git | bases | builder | export | container | answer | Berth | builds |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    row('cold (create)', flows.cold),
    ...flows.pushes.map((f, i) => row(`push ${i + 1}`, f)),
    row(`push p50 of ${flows.pushes.length}`, median),
    row('secret only', flows.secretOnly),
    row('unchanged commit', flows.unchanged),
    row('rollback (redeploy)', flows.rollback),
    '',
    'Targets (issue 21):',
    '',
    target(
      median.totalMs < 5_000,
      `push → agent answering the SDK, warm, p50 under 5 s: ${seconds(median.totalMs)} (builder ${seconds(median.builderMs)}, Berth ${seconds(median.overheadMs)})`,
    ),
    target(
      noBuild(flows.secretOnly) && flows.secretOnly.totalMs < 2_000,
      `secret-only revision under 2 s, 0 builds: ${seconds(flows.secretOnly.totalMs)}, ${flows.secretOnly.builds} builds`,
    ),
    target(
      noBuild(flows.rollback) && flows.rollback.totalMs < 2_000,
      `rollback → old revision serving under 2 s, 0 builds: ${seconds(flows.rollback.totalMs)}, ${flows.rollback.builds} builds`,
    ),
    target(noBuild(flows.unchanged), `unchanged commit, 0 builds: ${flows.unchanged.builds} builds (${seconds(flows.unchanged.totalMs)})`),
    target(flows.cold.totalMs < 45_000, `cold build under 45 s: ${seconds(flows.cold.totalMs)}`),
    '',
  ].join('\n');
}

/** The dashboard scenario's section, with the targets of issue 22. */
function dashboardReport(d: DashboardResult): string {
  const ms = (values: number[], p: number) => `${percentile(values, p).toFixed(0)} ms`;
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
  const sum = (pick: (a: DashboardResult['assets'][number]) => number) => d.assets.reduce((total, a) => total + pick(a), 0);
  const target = (met: boolean, text: string) => `- **${met ? 'met' : 'not met'}**: ${text}`;
  const load = (values: number[]) => values.map((v) => v.toFixed(1)).join(' / ');
  return [
    '### Dashboard (bench/dashboard.ts)',
    '',
    `Debian's chromium (headless, playwright-core) against Berth serving dist/dashboard, in the bench's process with the engine off, ` +
      `over ${d.deployments.toLocaleString('en-US')} seeded deployments (bench/seed.ts) on the embedded database. List: navigation start until ` +
      `the first row of /deployments is in the page (the page's clock, a MutationObserver installed before its scripts), ${d.listMs.length} loads, ` +
      'the first with an empty cache. Status: from just before a revision status is committed through lifecycle/ (as the engine does) until ' +
      `the open deployment page's timeline shows it, ${d.statusMs.length} changes (CREATING → … → DEPLOYED on ${d.statusMs.length / 6} revisions). ` +
      'Assets: the scripts and styles the first load fetched; Berth serves them uncompressed, gzip -9 and brotli 11 are what a ' +
      `compressing proxy (or precompressed files) would send. Machine load (1/5/15 min) before ${load(d.load.before)}, after ${load(d.load.after)} on ${d.cores} cores.`,
    '',
    '| measure | first | p50 | p95 | max |',
    '|---|---|---|---|---|',
    `| list usable | ${(d.listMs[0] ?? Number.NaN).toFixed(0)} ms | ${ms(d.listMs, 50)} | ${ms(d.listMs, 95)} | ${ms(d.listMs, 100)} |`,
    `| status visible | ${(d.statusMs[0] ?? Number.NaN).toFixed(0)} ms | ${ms(d.statusMs, 50)} | ${ms(d.statusMs, 95)} | ${ms(d.statusMs, 100)} |`,
    '',
    '| asset | as served | gzip | brotli |',
    '|---|---|---|---|',
    ...d.assets.map((a) => `| ${a.file} | ${kb(a.bytes)} | ${kb(a.gzip)} | ${kb(a.brotli)} |`),
    `| total | ${kb(sum((a) => a.bytes))} | ${kb(sum((a) => a.gzip))} | ${kb(sum((a) => a.brotli))} |`,
    '',
    'Targets (issue 22):',
    '',
    target(
      Math.max(...d.listMs) < 1_000,
      `deployments list usable within 1 s at ${d.deployments.toLocaleString('en-US')}: slowest of ${d.listMs.length} loads ${ms(d.listMs, 100)}`,
    ),
    target(percentile(d.statusMs, 95) < 250, `status change visible within 250 ms: p95 ${ms(d.statusMs, 95)}`),
    target(
      sum((a) => a.gzip) <= 250 * 1024,
      `first load's JavaScript and CSS at most 250 KB compressed: ${kb(sum((a) => a.gzip))} gzip, ${kb(sum((a) => a.brotli))} brotli (${kb(sum((a) => a.bytes))} as Berth serves them)`,
    ),
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------- main

async function main(): Promise<void> {
  const startedAt = new Date();
  const t0 = performance.now();
  log('building the server (npm run build)');
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: SERVER_ROOT, stdio: 'inherit' });
  log(`databases: ${DATABASES.join(', ')}; scenarios: ${[...SELECTED].join(', ')}; ${CONNECTIONS} connections, ${DURATION} s each`);

  const ceilings: Partial<Record<ScenarioName, LoadResult>> = {};
  const httpScenarios = scenarios([randomUUID()], 'ceiling', SIZES[0] as number).filter((s) => SELECTED.has(s.name));
  if (httpScenarios.length > 0) {
    const { ceiling, port } = await startCeiling();
    log('ceiling (bare node:http):');
    for (const scenario of httpScenarios) {
      ceilings[scenario.name] = await measure(`http://127.0.0.1:${port}`, ceiling.pid, scenario, { 'x-api-key': 'ceiling' });
    }
    await ceiling.stop();
  }
  const peer = await measurePeer();

  const encryptionKey = randomBytes(32).toString('hex');
  const runs: DatabaseRun[] = [];
  const databaseScenarios = [...SELECTED].filter((name) => !IMAGE_SCENARIOS.includes(name));
  if (databaseScenarios.length > 0) {
    for (const kind of DATABASES) {
      for (const [i, size] of SIZES.entries()) runs.push(...(await runDatabase(kind, size, ceilings, encryptionKey, i === 0)));
    }
  }
  for (const run of runs) run.peer = peer.bySize.get(run.deployments);
  let build: BuildResult | undefined;
  if (SELECTED.has(BUILD_SCENARIO)) {
    log('build: the sample agent from git to DEPLOYED, cold and warm');
    await waitForQuiet([]);
    build = await runJson<BuildResult>(['bench/build.ts'], process.env);
    log(`build: cold ${(build.cold.totalMs / 1000).toFixed(1)} s, warm ${(build.warm.totalMs / 1000).toFixed(1)} s`);
  }
  let flows: FlowsResult | undefined;
  if (SELECTED.has(FLOWS_SCENARIO)) {
    log(`flows: the sample agent behind a git integration, cold, ${flags.pushes} pushes, secret-only, unchanged commit, rollback`);
    await waitForQuiet([]);
    flows = await runJson<FlowsResult>(['bench/flows.ts', String(Number(flags.pushes))], process.env);
    log(
      `flows: push to answer p50 ${(
        percentile(
          flows.pushes.map((p) => p.totalMs),
          50,
        ) / 1000
      ).toFixed(1)} s`,
    );
  }

  let dashboard: DashboardResult | undefined;
  if (SELECTED.has(DASHBOARD_SCENARIO)) {
    log("dashboard: Chromium over 10,000 deployments, the list, status changes in the timeline, the first load's assets");
    await waitForQuiet([]);
    dashboard = await runJson<DashboardResult>(['bench/dashboard.ts', '10000', String(Number(flags['dashboard-loads'])), '5'], process.env);
  }

  const section =
    report(runs, ceilings, peer.note, startedAt, (performance.now() - t0) / 1000) +
    (build ? buildReport(build) : '') +
    (flows ? flowsReport(flows) : '') +
    (dashboard ? dashboardReport(dashboard) : '');
  process.stdout.write(`\n${section}\n`);
  if (!flags['no-write']) {
    const header =
      '# Benchmark results\n\n' +
      'Appended by `npm run bench` (bench/run.ts), newest last; earlier runs are kept as history. ' +
      'Compare ratios within one run: absolute numbers depend on the machine and on what else runs on it.\n\n';
    if (!fs.existsSync(RESULTS)) fs.writeFileSync(RESULTS, header);
    fs.appendFileSync(RESULTS, `${section}\n`);
    log(`appended to ${path.relative(ROOT, RESULTS)}`);
  }
}

main()
  .catch(async (error) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await runCleanups();
  });
