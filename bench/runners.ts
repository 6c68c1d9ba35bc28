/**
 * The runners scenario (issue 25): build runners against one Berth with BERTH_BUILDER=runners.
 * bench/run.ts starts Berth (compiled, as `npm start`) and runs this script against it; it
 * prints one JSON line.
 *
 * The runners are bench runner processes (bench/runner-client.ts): the real protocol over
 * HTTP with the runner's own client, and a build that costs nothing, so what is measured
 * is the protocol and the control plane, not buildah. Each build is an `internal_source`
 * revision (an uploaded archive, as `langgraph deploy --remote` makes) placed on a listener
 * with no agent, so it stops at AWAITING_DEPLOY: no deploy is measured with the build.
 *
 * - idle: N runner loops in this process, each with a runner key of its own, long-polling
 *   the claim route (wait=30, as `berth builder`) with nothing queued; the server's CPU
 *   (share of one core, from /proc) over the window;
 * - for 1, 2 and 4 runner processes: pick-up, one revision at a time with the runners
 *   waiting (from the PATCH's answer, the revision queued, to a runner's claim answering
 *   with its job); then a burst of builds, PATCHed together: builds per minute (from the
 *   first PATCH to the last result reported) and the server's CPU per build (from the
 *   first PATCH until every revision has left BUILDING, divided by the builds).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { RunnerClient } from '../src/runner/client.js';
import type { RunnersResult, RunnersRound } from './runners-report.js';
import { pauseWindow } from './server-metrics.js';
import { percentile } from './stats.js';
import { gzippedTar } from '../test/support/archives.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    pid: { type: 'string' },
    key: { type: 'string' },
    /** Runner processes in each round; empty: the idle measurement alone. */
    processes: { type: 'string', default: '1,2,4' },
    builds: { type: 'string', default: '60' },
    paced: { type: 'string', default: '30' },
    'idle-runners': { type: 'string', default: '100' },
    'idle-seconds': { type: 'string', default: '30' },
  },
});
if (!values.url || !values.pid || !values.key) throw new Error('--url, --pid and --key are required');
const BASE = values.url;
const SERVER_PID = Number(values.pid);
const ADMIN_KEY = values.key;
const PROCESSES = values.processes.split(',').filter(Boolean).map(Number);
const BUILDS = Number(values.builds);
const PACED = Number(values.paced);
const IDLE_RUNNERS = Number(values['idle-runners']);
const IDLE_SECONDS = Number(values['idle-seconds']);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const CLOCK_TICKS = 100;
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}
/**
 * Milliseconds the main threads of `pids` have spent runnable but waiting for a CPU
 * (/proc/<pid>/schedstat, second field): on a shared machine, the part of a delay that is
 * other work's, not Berth's.
 */
function runQueueMs(pids: number[]): number {
  return pids.reduce((sum, pid) => {
    try {
      return sum + Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
    } catch {
      return sum;
    }
  }, 0);
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const clock = () => performance.timeOrigin + performance.now();

async function call(method: string, route: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${BASE}${route}`, {
    method,
    headers: { 'x-api-key': ADMIN_KEY, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  // The setup is one key's hundreds of calls under the default rate limit: past it, wait as told.
  if (response.status === 429) {
    await sleep(Number(response.headers.get('retry-after') ?? 1) * 1000);
    return call(method, route, body);
  }
  if (!response.ok) throw new Error(`${method} ${route} answered ${response.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

const runId = Math.random().toString(36).slice(2, 8);
async function runnerKey(name: string): Promise<string> {
  return (await call('POST', '/v1/api-keys', { name, role: 'runner' })).key as string;
}

// ---------------------------------------------------------------------------- idle

async function idle(): Promise<{ runners: number; seconds: number; serverCpu: number; claims: number; errors: number }> {
  const keys: string[] = [];
  await pool(
    Array.from({ length: IDLE_RUNNERS }, (_, i) => i),
    8,
    async (i) => void keys.push(await runnerKey(`idle-${runId}-${i}`)),
  );
  const stop = new AbortController();
  const counts = { claims: 0, errors: 0 };
  const loops = keys.map(async (key) => {
    const client = new RunnerClient(BASE, key);
    // Started at random within the first wait, as runners started at different times are.
    await sleep(Math.random() * 5000);
    while (!stop.signal.aborted) {
      try {
        await client.claim([], 30, stop.signal);
        counts.claims++;
      } catch {
        if (!stop.signal.aborted) counts.errors++;
      }
    }
  });
  await sleep(8000);
  const claims0 = counts.claims;
  const cpu0 = cpuSeconds(SERVER_PID);
  const wall0 = performance.now();
  await sleep(IDLE_SECONDS * 1000);
  const seconds = (performance.now() - wall0) / 1000;
  const result = {
    runners: keys.length,
    seconds,
    serverCpu: (cpuSeconds(SERVER_PID) - cpu0) / seconds,
    claims: counts.claims - claims0,
    errors: counts.errors,
  };
  stop.abort();
  await Promise.all(loops);
  return result;
}

// ---------------------------------------------------------------------------- builds

interface Deployment {
  id: string;
  objectPath: string;
}

/** `internal_source` deployments on a listener with no agent, each with its archive uploaded. */
async function deployments(count: number, archive: Buffer): Promise<Deployment[]> {
  const listener = await call('POST', '/v2/listeners', { compute_type: 'docker', compute_id: `runner-bench-${runId}`, compute_config: {} });
  const made: Deployment[] = [];
  await pool(
    Array.from({ length: count }, (_, i) => i),
    8,
    async (i) => {
      const deployment = await call('POST', '/v2/deployments', {
        name: `runner-bench-${runId}-${i}`,
        source: 'internal_source',
        source_config: { deployment_type: 'dev', listener_id: listener.id },
        source_revision_config: {},
        secrets: [],
      });
      const id = deployment.id as string;
      const url = await call('POST', `/v2/deployments/${id}/upload-url`);
      const put = await fetch(url.upload_url as string, { method: 'PUT', headers: { 'content-type': 'application/gzip' }, body: new Uint8Array(archive) });
      if (put.status !== 200) throw new Error(`upload answered ${put.status}: ${await put.text()}`);
      made.push({ id, objectPath: url.object_path as string });
    },
  );
  return made;
}

interface RunnerEvent {
  event: 'ready' | 'claimed' | 'done' | 'error';
  revision?: string;
  at: number;
  message?: string;
}

/** The runner processes' events, by revision; and a way to wait for one. */
class Runners {
  readonly claimed = new Map<string, number>();
  readonly done = new Map<string, number>();
  readonly errors: string[] = [];
  #children: ChildProcess[] = [];
  #ready = 0;
  #waiters = new Set<() => void>();

  constructor(keys: string[]) {
    for (const key of keys) {
      const child = spawn(process.execPath, ['--import', 'tsx', 'bench/runner-client.ts'], {
        cwd: ROOT,
        env: { ...process.env, BERTH_URL: BASE, BERTH_RUNNER_KEY: key },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      this.#children.push(child);
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        if (!line.startsWith('{')) return;
        const event = JSON.parse(line) as RunnerEvent;
        if (event.event === 'ready') this.#ready++;
        else if (event.event === 'claimed') this.claimed.set(event.revision as string, event.at);
        else if (event.event === 'done') this.done.set(event.revision as string, event.at);
        else this.errors.push(event.message ?? '');
        for (const wake of this.#waiters) wake();
      });
    }
  }

  async until(condition: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!condition()) {
      if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s (runner errors: ${this.errors.slice(-3).join('; ')})`);
      await new Promise<void>((resolve) => {
        this.#waiters.add(resolve);
        setTimeout(resolve, 250);
      }).finally(() => this.#waiters.clear());
    }
  }

  get pids(): number[] {
    return this.#children.map((child) => child.pid as number);
  }

  async started(): Promise<void> {
    await this.until(() => this.#ready === this.#children.length, 'the runner processes started', 60_000);
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.#children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
  }
}

async function queue(deployment: Deployment): Promise<{ revision: string; sent: number; answered: number }> {
  const sent = clock();
  const patched = await call('PATCH', `/v2/deployments/${deployment.id}`, { source_revision_config: { source_tarball_path: deployment.objectPath } });
  return { revision: patched.latest_revision_id as string, sent, answered: clock() };
}

/** When the engine moved the revision to BUILDING (its timeline, millisecond timestamps of the same clock). */
async function buildingAt(deployment: Deployment, revision: string): Promise<number> {
  const timeline = (await call('GET', `/v2/deployments/${deployment.id}/revisions/${revision}/timeline`)).resources as { status: string; at: string }[];
  return Date.parse(timeline.find((event) => event.status === 'BUILDING')?.at ?? '');
}

async function leftBuilding(deployment: Deployment, revision: string): Promise<string> {
  for (;;) {
    const status = (await call('GET', `/v2/deployments/${deployment.id}/revisions/${revision}`)).status as string;
    if (status !== 'QUEUED' && status !== 'BUILDING') return status;
    await sleep(200);
  }
}

async function round(processes: number, keys: string[], pool_: Deployment[]): Promise<RunnersRound> {
  const runners = new Runners(keys.slice(0, processes));
  try {
    await runners.started();
    // Each runner's first claim is on its way once it said ready; let them reach their wait.
    await sleep(2000);
    const pickups: number[] = [];
    const fromSent: number[] = [];
    const toBuilding: number[] = [];
    const waited: number[] = [];
    const pauses = await pauseWindow(BASE);
    for (let i = 0; i < PACED; i++) {
      const deployment = pool_.shift() as Deployment;
      const watched = [SERVER_PID, ...runners.pids];
      const queued0 = runQueueMs(watched);
      const { revision, sent, answered } = await queue(deployment);
      await runners.until(() => runners.claimed.has(revision), `paced build ${i} claimed`);
      waited.push(runQueueMs(watched) - queued0);
      await runners.until(() => runners.done.has(revision), `paced build ${i}`);
      pickups.push((runners.claimed.get(revision) as number) - answered);
      fromSent.push((runners.claimed.get(revision) as number) - sent);
      await leftBuilding(deployment, revision);
      toBuilding.push((await buildingAt(deployment, revision)) - answered);
      // The runner is back in its claim before the next one is queued.
      await sleep(300);
    }
    const paced = await pauses.end();
    const slowest = pickups
      .map((ms, i) => ({ ms, runQueueMs: waited[i] as number }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 3);
    const burst = pool_.splice(0, BUILDS);
    const cpu0 = cpuSeconds(SERVER_PID);
    const t0 = clock();
    const queued: { deployment: Deployment; revision: string }[] = [];
    await Promise.all(burst.map(async (deployment) => queued.push({ deployment, revision: (await queue(deployment)).revision })));
    await runners.until(() => queued.every((q) => runners.done.has(q.revision)), 'the burst built', 600_000);
    const lastDone = Math.max(...queued.map((q) => runners.done.get(q.revision) as number));
    const statuses: Record<string, number> = {};
    for (const q of queued) {
      const status = await leftBuilding(q.deployment, q.revision);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
    const cpu = cpuSeconds(SERVER_PID) - cpu0;
    const seconds = (lastDone - t0) / 1000;
    return {
      processes,
      pickup: {
        count: pickups.length,
        p50: percentile(pickups, 50),
        p99: percentile(pickups, 99),
        max: Math.max(...pickups),
        fromSentP99: percentile(fromSent, 99),
        toBuildingP50: percentile(toBuilding, 50),
        toBuildingP99: percentile(toBuilding, 99),
        slowest,
        loopMaxMs: paced.loopMax,
        gcMaxMs: paced.gcMaxMs,
      },
      burst: { builds: queued.length, seconds, buildsPerMinute: (queued.length / seconds) * 60, serverCpuMsPerBuild: (cpu / queued.length) * 1000, statuses },
      runnerErrors: runners.errors.length,
    };
  } finally {
    await runners.stop();
  }
}

async function main(): Promise<void> {
  const idleResult = await idle();
  if (PROCESSES.length === 0) {
    process.stdout.write(`${JSON.stringify({ idle: idleResult, setupSeconds: 0, rounds: [] } satisfies RunnersResult)}\n`);
    return;
  }
  const keys = await Promise.all(Array.from({ length: Math.max(...PROCESSES) }, (_, i) => runnerKey(`bench-${runId}-${i}`)));
  const setup0 = performance.now();
  const all = await deployments(PROCESSES.length * (BUILDS + PACED), await gzippedTar([{ name: 'langgraph.json', body: '{"graphs":{}}' }]));
  const setupSeconds = (performance.now() - setup0) / 1000;
  await sleep(2000);
  const rounds: RunnersRound[] = [];
  for (const processes of PROCESSES) rounds.push(await round(processes, keys, all));
  const result: RunnersResult = { idle: idleResult, setupSeconds, rounds };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`runners bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
