/**
 * The listeners scenario (issue 12): many listener agents long-polling one Berth while
 * deployments change. bench/run.ts starts Berth (compiled, as `npm start`, with its default
 * rate limit) and runs this script against it; it prints one JSON line.
 *
 * - setup: N listeners (each answers its key once) and one `external_docker` deployment
 *   placed on each; N simulated agents, each doing what `berth listener` does with the
 *   agent's own protocol client: a heartbeat at start and then only when no call reached
 *   Berth within `heartbeat_interval_seconds` (as the agent does), a long
 *   poll of its desired state with its generation cursor, and a `DEPLOYED` report for every
 *   revision handed to it (the real agent starts a container first; here that is instant);
 * - idle: every agent waiting in its long poll; the server's CPU (share of one core, from
 *   /proc) and RSS over the window;
 * - changes: PATCHes giving distinct deployments a new image (a new revision), at a steady
 *   rate; the delay from sending each PATCH to its agent receiving a desired state that
 *   names the new revision (the engine hands it over, the generation grows, the waiting
 *   poll wakes and answers).
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import type { DesiredStateView } from '../src/contract/listener-protocol.js';
import { ProtocolClient } from '../src/agent/protocol.js';
import { percentile } from './stats.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    pid: { type: 'string' },
    key: { type: 'string' },
    agents: { type: 'string', default: '1000' },
    'idle-seconds': { type: 'string', default: '60' },
    patches: { type: 'string', default: '300' },
    'patch-interval-ms': { type: 'string', default: '50' },
    'wait-seconds': { type: 'string', default: '30' },
  },
});
if (!values.url || !values.pid || !values.key) throw new Error('--url, --pid and --key are required');
const BASE = values.url;
const SERVER_PID = Number(values.pid);
const ADMIN_KEY = values.key;
const AGENTS = Number(values.agents);
const IDLE_SECONDS = Number(values['idle-seconds']);
const PATCHES = Math.min(Number(values.patches), AGENTS);
const PATCH_INTERVAL_MS = Number(values['patch-interval-ms']);
const WAIT_SECONDS = Number(values['wait-seconds']);

const CLOCK_TICKS = 100;
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}
function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN) / 1024;
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function admin(method: string, route: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${BASE}${route}`, {
    method,
    headers: { 'x-api-key': ADMIN_KEY, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  // The setup is one key's thousands of calls under the default rate limit: past it, wait as told.
  if (response.status === 429) {
    await sleep(Number(response.headers.get('retry-after') ?? 1) * 1000);
    return admin(method, route, body);
  }
  if (!response.ok) throw new Error(`${method} ${route} answered ${response.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** Runs `work` over `items` with at most `limit` at a time. */
async function pool<T>(items: T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const index = next++;
        await work(items[index] as T, index);
      }
    }),
  );
}

interface SimulatedAgent {
  deploymentId: string;
  /** The revision the agent last saw handed to it or serving. */
  revisionId: string | undefined;
  /** Its state last said the revision is DEPLOYED. */
  serving: boolean;
  /** Set by the PATCH phase: the revision to wait for, and when its PATCH was sent. */
  expecting?: { since: number; resolve: (ms: number) => void };
}

const counts = { polls: 0, heartbeats: 0, reports: 0, errors: 0, lastError: '' };

function runAgent(agent: SimulatedAgent, client: ProtocolClient, signal: AbortSignal, heartbeatSeconds: { value: number }): Promise<void> {
  const heartbeats = (async () => {
    // As the agent does (agent/agent.ts): one at start, then only when no other
    // call reached Berth within the interval, which a polling agent never lets happen.
    let triedAt = 0;
    while (!signal.aborted) {
      const due = Math.max(client.heardAt(), triedAt) + heartbeatSeconds.value * 1000 - Date.now();
      if (triedAt > 0 && due > 0) {
        await sleep(Math.min(due, 1000));
        continue;
      }
      triedAt = Date.now();
      await client.heartbeat(signal).then(
        (answer) => {
          counts.heartbeats++;
          heartbeatSeconds.value = answer.heartbeat_interval_seconds;
        },
        (error: Error) => signal.aborted || noteError(error),
      );
    }
  })();
  const polls = (async () => {
    let generation: number | undefined;
    let firstWait = true;
    while (!signal.aborted) {
      let state: DesiredStateView;
      try {
        // The first wait is cut at random: agents started at different times do not all wake together.
        const wait = generation === undefined ? 0 : firstWait ? 1 + Math.floor(Math.random() * WAIT_SECONDS) : WAIT_SECONDS;
        if (generation !== undefined) firstWait = false;
        state = await client.state(generation, wait, signal);
      } catch (error) {
        if (signal.aborted) return;
        noteError(error as Error);
        await sleep(1000);
        continue;
      }
      const received = performance.now();
      counts.polls++;
      generation = state.generation;
      const mine = state.deployments.find((d) => d.deployment_id === agent.deploymentId);
      if (!mine) continue;
      agent.serving = mine.revision_status === 'DEPLOYED';
      if (mine.revision_id !== agent.revisionId) {
        agent.revisionId = mine.revision_id;
        if (agent.expecting) {
          agent.expecting.resolve(received - agent.expecting.since);
          agent.expecting = undefined;
        }
      }
      if (mine.revision_status === 'AWAITING_DEPLOY' || mine.revision_status === 'DEPLOYING') {
        // Not awaited by the poll: the real agent rolls out beside its long poll.
        void client
          .reports({ revisions: [{ deployment_id: mine.deployment_id, revision_id: mine.revision_id, status: 'DEPLOYED', url: 'http://127.0.0.1:1' }] }, signal)
          .then(
            () => counts.reports++,
            (error: Error) => signal.aborted || noteError(error),
          );
      }
    }
  })();
  return Promise.all([heartbeats, polls]).then(() => undefined);
}

function noteError(error: Error): void {
  counts.errors++;
  counts.lastError = error.message;
}

async function main(): Promise<void> {
  const setupStarted = performance.now();
  const keys: string[] = new Array<string>(AGENTS);
  const agents: SimulatedAgent[] = new Array<SimulatedAgent>(AGENTS);
  const runId = Math.random().toString(36).slice(2, 8);
  await pool(
    Array.from({ length: AGENTS }, (_, i) => i),
    16,
    async (i) => {
      const listener = await admin('POST', '/v2/listeners', { compute_type: 'docker', compute_id: `bench-${runId}-${i}`, compute_config: {} });
      keys[i] = listener.listener_key as string;
      const deployment = await admin('POST', '/v2/deployments', {
        name: `listener-bench-${runId}-${i}`,
        source: 'external_docker',
        source_config: { listener_id: listener.id, resource_spec: { cpu: 0.5, memory_mb: 256 } },
        source_revision_config: { image_uri: `registry.example.com/bench/agent:v0-${i}` },
        secrets: [{ name: 'OPENAI_API_KEY', value: `sk-bench-${i}` }],
      });
      agents[i] = { deploymentId: deployment.id as string, revisionId: undefined, serving: false };
    },
  );
  const createdMs = performance.now() - setupStarted;

  const stop = new AbortController();
  const heartbeatSeconds = { value: 60 };
  const running = agents.map((agent, i) => runAgent(agent, new ProtocolClient(BASE, keys[i] as string, 'berth-bench-listener'), stop.signal, heartbeatSeconds));

  // Settled: every first revision DEPLOYED (reported by its agent) and every agent back in its poll.
  const settleStarted = performance.now();
  while (agents.some((agent) => !agent.serving)) {
    if (performance.now() - settleStarted > 180_000)
      throw new Error(`${agents.filter((a) => !a.serving).length} agents not serving after 180 s: ${counts.lastError}`);
    await sleep(250);
  }
  const settledMs = performance.now() - settleStarted;
  // The engine's follow-ups of the first deploys and the collection of the setup's garbage
  // are not the idle agents' cost: let them pass before measuring.
  await sleep(10_000);

  // Idle: every agent in its long poll, heartbeats going.
  const idleErrorsBefore = counts.errors;
  const idleCounts = { polls: counts.polls, heartbeats: counts.heartbeats };
  const cpu0 = cpuSeconds(SERVER_PID);
  const wall0 = performance.now();
  await sleep(IDLE_SECONDS * 1000);
  const idleWall = (performance.now() - wall0) / 1000;
  const idle = {
    seconds: idleWall,
    serverCpu: (cpuSeconds(SERVER_PID) - cpu0) / idleWall,
    rssMb: rssMb(SERVER_PID),
    polls: counts.polls - idleCounts.polls,
    heartbeats: counts.heartbeats - idleCounts.heartbeats,
    errors: counts.errors - idleErrorsBefore,
  };

  // Changes: one PATCH per chosen deployment, evenly spread over the agents.
  const step = Math.max(1, Math.floor(AGENTS / PATCHES));
  const delays: Promise<number>[] = [];
  const patchCpu0 = cpuSeconds(SERVER_PID);
  const patchWall0 = performance.now();
  for (let k = 0; k < PATCHES; k++) {
    const agent = agents[(k * step) % AGENTS] as SimulatedAgent;
    const tick = performance.now();
    delays.push(
      new Promise<number>((resolve, reject) => {
        agent.expecting = { since: tick, resolve };
        setTimeout(() => reject(new Error(`deployment ${agent.deploymentId}: its agent did not see the new revision within 60 s`)), 60_000).unref();
      }),
    );
    await admin('PATCH', `/v2/deployments/${agent.deploymentId}`, { source_revision_config: { image_uri: `registry.example.com/bench/agent:v1-${k}` } });
    const wait = PATCH_INTERVAL_MS - (performance.now() - tick);
    if (wait > 0) await sleep(wait);
  }
  const seen = await Promise.all(delays);
  const patchWall = (performance.now() - patchWall0) / 1000;
  const patchCpu = (cpuSeconds(SERVER_PID) - patchCpu0) / patchWall;

  stop.abort();
  await Promise.all(running);
  process.stdout.write(
    `${JSON.stringify({
      agents: AGENTS,
      setupSeconds: createdMs / 1000,
      settleSeconds: settledMs / 1000,
      idle,
      patches: {
        count: PATCHES,
        intervalMs: PATCH_INTERVAL_MS,
        serverCpu: patchCpu,
        p50: percentile(seen, 50),
        p99: percentile(seen, 99),
        max: Math.max(...seen),
      },
      totals: { ...counts },
    })}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`listeners bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
