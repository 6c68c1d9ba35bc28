/**
 * The fairness scenario (issue 20, item 3): workspace B fills its share of the engine with
 * builds that do not end (a builder that holds every build until the scenario is over, the
 * stand-in for builds that may run for hours), then workspace A creates image revisions
 * one after another. Measured: A's pick-up delay (the revision's first QUEUED event minus
 * its created_at, as in bench/engine.ts) and the time from the create to DEPLOYED.
 *
 * For comparison, the same first step with the workspace share at BERTH_ENGINE_CONCURRENCY
 * (what the engine did before shares: B may take every slot): A's revision is then not
 * picked up at all while B's builds run, which the baseline reports after waiting
 * `--baseline-wait-ms`.
 *
 * Berth runs in this process as in bench/engine.ts (bench/in-process.ts), with the
 * product's engine settings unless BERTH_ENGINE_CONCURRENCY / BERTH_ENGINE_WORKSPACE_SLOTS
 * say otherwise. Run by bench/run.ts; prints one JSON line.
 * DATABASE_URL = postgres://… for PostgreSQL, else SQLite in a temporary directory.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import type { BuildRequest, BuiltImage, StepContext } from '../src/engine/drivers/types.js';

import type { Db } from '../src/store/database.js';
import { gitIntegration } from '../test/support/codehost.js';

import { FakeBuildDriver } from '../test/support/drivers/fake-build.js';
import { type Client, client } from '../test/support/http.js';

import { pickupDelays, startBenchBerth } from './in-process.js';
import { percentile } from './stats.js';

const { values } = parseArgs({
  options: {
    hostile: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '30' },
    'baseline-wait-ms': { type: 'string', default: '5000' },
  },
});
const HOSTILE = Number(values.hostile);
const ROUNDS = Number(values.rounds);
const BASELINE_WAIT_MS = Number(values['baseline-wait-ms']);

/** Every build waits until the scenario ends (or its step is stopped): builds that never finish. */
class EndlessBuilds extends FakeBuildDriver {
  holding = 0;
  readonly #release = new AbortController();

  override async build(request: BuildRequest, context: StepContext): Promise<BuiltImage> {
    this.holding += 1;
    try {
      await new Promise<void>((resolve, reject) => {
        if (this.#release.signal.aborted) return resolve();
        this.#release.signal.addEventListener('abort', () => resolve(), { once: true });
        context.signal.addEventListener('abort', () => reject(context.signal.reason), { once: true });
      });
    } finally {
      this.holding -= 1;
    }
    return super.build(request, context);
  }

  releaseAll(): void {
    this.#release.abort();
  }
}

interface Measured {
  share: number;
  concurrency: number;
  /** B's builds running when A started creating. */
  hostileBuilding: number;
  /** Per round, ms; empty when A's first revision was not picked up within the baseline wait. */
  pickupMs: number[];
  deployedMs: number[];
}

async function scenario(share: number | undefined, rounds: number, waitMs: number): Promise<Measured> {
  const slots = share !== undefined ? String(share) : process.env.BERTH_ENGINE_WORKSPACE_SLOTS;
  const builder = new EndlessBuilds();
  // Each run on a database of its own (the bootstrap key and B's builds belong to one run).
  const { berth, adminKey, close } = await startBenchBerth({
    name: 'fairness',
    builder,
    ownDatabase: true,
    env: slots ? { BERTH_ENGINE_WORKSPACE_SLOTS: slots } : {},
  });
  const settings = berth.engine?.settings;
  if (!settings) throw new Error('the engine is off');
  let integration: { remove(): Promise<void> } | undefined;
  try {
    const admin = client(berth.address, { key: adminKey });
    const hostile = await memberOf(admin, berth.address, 'hostile');
    const victim = await memberOf(admin, berth.address, 'victim');
    // Integrations are an admin's to register; the admin key acts in B's workspace for it.
    const repo = await gitIntegration(client(berth.address, { key: adminKey, tenant: hostile.workspaceId }));
    integration = repo;
    for (let i = 0; i < HOSTILE; i++) {
      const res = await hostile('POST', '/v2/deployments', {
        body: {
          name: `slow-${i}`,
          source: 'github',
          source_config: { integration_id: repo.integrationId, repo_url: repo.repoUrl, build_timeout_seconds: 86_400 },
          source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json' },
          secrets: [],
        },
      });
      if (res.status !== 201) throw new Error(`hostile create: ${res.status} ${res.text}`);
    }
    // B holds as many slots as it may (fewer than HOSTILE builds): its share.
    const expected = Math.min(HOSTILE, settings.workspaceSlots, settings.concurrency);
    await until(() => builder.holding >= expected, 30_000, `workspace B to hold ${expected} builds`);
    const hostileBuilding = builder.holding;

    const pickupMs: number[] = [];
    const deployedMs: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const started = performance.now();
      const res = await victim('POST', '/v2/deployments', {
        body: { name: `quick-${i}`, source: 'external_docker', source_config: {}, source_revision_config: { image_uri: `localhost/quick:${i}` }, secrets: [] },
      });
      if (res.status !== 201) throw new Error(`victim create: ${res.status} ${res.text}`);
      const revisionId = res.body.latest_revision_id as string;
      const deployed = await until(async () => (await statusOf(berth.db, revisionId)) === 'DEPLOYED', waitMs, '').then(
        () => true,
        () => false,
      );
      if (!deployed) break;
      deployedMs.push(performance.now() - started);
      pickupMs.push(...(await pickupDelays(berth.db, [revisionId])));
    }
    return { share: settings.workspaceSlots, concurrency: settings.concurrency, hostileBuilding, pickupMs, deployedMs };
  } finally {
    builder.releaseAll();
    await close();
    await integration?.remove();
  }
}

async function memberOf(admin: Client, baseUrl: string, name: string): Promise<Client & { workspaceId: string }> {
  const workspace = await admin('POST', '/v1/workspaces', { body: { name: `${name}-${randomUUID().slice(0, 8)}` } });
  const key = await admin('POST', '/v1/api-keys', { body: { name, workspace_id: workspace.body.id } });
  if (key.status !== 201) throw new Error(`api key: ${key.status} ${key.text}`);
  return Object.assign(client(baseUrl, { key: key.body.key }), { workspaceId: workspace.body.id as string });
}

async function statusOf(db: Db, revisionId: string): Promise<string | undefined> {
  return (await db.selectFrom('revisions').select('status').where('id', '=', revisionId).executeTakeFirst())?.status;
}

async function until(probe: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await probe())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const summary = (samples: number[]) =>
  samples.length === 0 ? null : { p50: Math.round(percentile(samples, 50)), p99: Math.round(percentile(samples, 99)), max: Math.round(Math.max(...samples)) };

async function main(): Promise<void> {
  const fair = await scenario(undefined, ROUNDS, 30_000);
  const concurrency = fair.concurrency;
  // Before shares, a workspace could take every slot: the same scenario with the share at the concurrency.
  const unfair = await scenario(concurrency, 1, BASELINE_WAIT_MS);
  process.stdout.write(
    `${JSON.stringify({
      database: process.env.DATABASE_URL?.startsWith('postgres') ? 'postgres' : 'sqlite',
      concurrency,
      share: fair.share,
      hostile: HOSTILE,
      hostileBuilding: fair.hostileBuilding,
      rounds: fair.pickupMs.length,
      pickup: summary(fair.pickupMs),
      deployed: summary(fair.deployedMs),
      baseline: { share: unfair.share, hostileBuilding: unfair.hostileBuilding, pickedUp: unfair.pickupMs.length > 0, waitedMs: BASELINE_WAIT_MS },
    })}\n`,
  );
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`fairness bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
