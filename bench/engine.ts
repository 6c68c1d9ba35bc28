/**
 * The engine scenario: Berth in this process (startBerth with the fake builder and an
 * instant runtime, bench/instant-runtime.ts, so every step is instant but `DEPLOYED` still
 * means a real `GET /ok` answered), with the product's engine settings. Two parts:
 *
 * - burst: N deployments created at once (each with its first revision and secrets),
 *   then the time until every revision is terminal: revisions per second;
 * - backlog: N more created while the engine is stopped, then the time from its start until
 *   every revision is terminal: the engine's own rate, with no creates competing for the CPU;
 * - paced: revisions created one at a time at a rate well under that capacity: the
 *   delay from creation to pick-up (the revision's first QUEUED event minus its
 *   created_at), which is what a client waits when the engine is not saturated.
 *
 * Run by bench/run.ts; prints one JSON line. DATABASE_URL = postgres://… for PostgreSQL,
 * else SQLite in a temporary directory.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { IN_PROGRESS_STATUSES, TERMINAL_STATUSES } from '../src/domain/revision-status.js';
import type { Db } from '../src/store/database.js';
import { pickupDelays, startBenchBerth } from './in-process.js';
import { percentile } from './stats.js';

const { values } = parseArgs({
  options: {
    revisions: { type: 'string', default: '1000' },
    paced: { type: 'string', default: '200' },
    /** 'auto': half the capacity the burst measured (but at least 20 ms apart). */
    'paced-interval-ms': { type: 'string', default: 'auto' },
    concurrency: { type: 'string', default: '50' },
  },
});
const burstCount = Number(values.revisions);
const pacedCount = Number(values.paced);
const createConcurrency = Number(values.concurrency);

const TERMINAL = [...TERMINAL_STATUSES];
const IN_PROGRESS = [...IN_PROGRESS_STATUSES];

async function main(): Promise<void> {
  const { berth, config, adminKey, close } = await startBenchBerth({ name: 'engine' });
  try {
    const principal = await berth.services.tenancy.authenticate(adminKey);
    if (!principal?.boundWorkspaceId) throw new Error('bootstrap did not create a bound key');
    const scope = { ...principal, workspaceId: principal.boundWorkspaceId };
    let counter = 0;
    const create = async (prefix: string) => {
      const n = counter++;
      const view = await berth.services.deployments.create(scope, {
        name: `${prefix}-${n}`,
        source: 'external_docker',
        source_config: { resource_spec: { cpu: 0.5, memory_mb: 256 } },
        source_revision_config: { image_uri: `localhost/bench-agent:v${n}` },
        secrets: [{ name: 'OPENAI_API_KEY', value: `sk-${randomUUID()}` }],
      });
      return view.latest_revision_id as string;
    };

    // Burst: everything created as fast as 50 concurrent callers can, the engine running.
    const burstIds: string[] = [];
    const burstStart = performance.now();
    const burstStartIso = new Date().toISOString();
    await Promise.all(
      Array.from({ length: createConcurrency }, async () => {
        // `create` takes its number synchronously, so the callers share the count.
        while (counter < burstCount) burstIds.push(await create('burst'));
      }),
    );
    const createdMs = performance.now() - burstStart;
    await waitTerminal(berth.db, burstIds, 300_000);
    const burstMs = performance.now() - burstStart;
    const burstDelays = await pickupDelays(berth.db, burstIds);

    // Backlog: the engine alone works through revisions that were all there before it started.
    const engine = berth.engine;
    if (!engine) throw new Error('the engine is off');
    await engine.stop();
    const backlogIds: string[] = [];
    const backlogEnd = counter + burstCount;
    await Promise.all(
      Array.from({ length: createConcurrency }, async () => {
        while (counter < backlogEnd) backlogIds.push(await create('backlog'));
      }),
    );
    const backlogStart = performance.now();
    await engine.start();
    await waitTerminal(berth.db, backlogIds, 300_000);
    const backlogMs = performance.now() - backlogStart;

    // Paced: one revision every interval, so the engine is never behind.
    const burstRate = burstIds.length / (burstMs / 1000);
    const pacedIntervalMs = values['paced-interval-ms'] === 'auto' ? Math.max(20, Math.ceil(2000 / burstRate)) : Number(values['paced-interval-ms']);
    const pacedIds: string[] = [];
    for (let i = 0; i < pacedCount; i++) {
      const tick = performance.now();
      pacedIds.push(await create('paced'));
      const wait = pacedIntervalMs - (performance.now() - tick);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    await waitTerminal(berth.db, pacedIds, 120_000);
    const pacedDelays = await pickupDelays(berth.db, pacedIds);

    const statuses = await berth.db
      .selectFrom('revisions')
      .select(['status', (eb) => eb.fn.countAll<string | number>().as('n')])
      .where('created_at', '>=', burstStartIso)
      .groupBy('status')
      .execute();
    process.stdout.write(
      `${JSON.stringify({
        database: config.database.kind,
        engineConcurrency: berth.engine?.settings.concurrency,
        revisions: burstIds.length,
        createSeconds: createdMs / 1000,
        totalSeconds: burstMs / 1000,
        revisionsPerSecond: burstRate,
        backlog: { revisions: backlogIds.length, seconds: backlogMs / 1000, revisionsPerSecond: backlogIds.length / (backlogMs / 1000) },
        burstPickup: { p50: percentile(burstDelays, 50), p99: percentile(burstDelays, 99), max: Math.max(...burstDelays) },
        paced: { revisions: pacedIds.length, intervalMs: pacedIntervalMs },
        pacedPickup: { p50: percentile(pacedDelays, 50), p99: percentile(pacedDelays, 99), max: Math.max(...pacedDelays) },
        statuses: Object.fromEntries(statuses.map((s) => [s.status, Number(s.n)])),
      })}\n`,
    );
  } finally {
    await close();
  }
}

async function waitTerminal(db: Db, ids: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // While any revision is in progress, counting them through the status index is all a look
  // costs (the runs create no other revisions meanwhile); the ids are checked once at the end.
  for (;;) {
    const row = await db
      .selectFrom('revisions')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .where('status', 'in', IN_PROGRESS)
      .executeTakeFirstOrThrow();
    if (Number(row.n) === 0) break;
    if (Date.now() > deadline) throw new Error(`${row.n} revisions still in progress after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  let done = 0;
  for (let at = 0; at < ids.length; at += 500) {
    const row = await db
      .selectFrom('revisions')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .where('id', 'in', ids.slice(at, at + 500))
      .where('status', 'in', TERMINAL)
      .executeTakeFirstOrThrow();
    done += Number(row.n);
  }
  if (done !== ids.length) throw new Error(`only ${done} of ${ids.length} revisions reached a terminal status`);
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`engine bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
