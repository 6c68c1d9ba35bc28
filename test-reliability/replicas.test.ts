/**
 * Several replicas: three Berth processes on one PostgreSQL take 1,000 concurrent PATCHes
 * spread over 10 deployments. Every PATCH makes exactly one revision, numbering stays
 * gapless, `latest_revision_id` is the newest revision, and no engine step of a revision
 * ever ran twice at the same time.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { canTransition, IN_PROGRESS_STATUSES, isTerminal, type RevisionStatus } from '../src/domain/revision-status.js';
import { gitIntegrationOf } from '../test/support/codehost.js';
import { createRepository, tempDir } from '../test/support/git-repos.js';
import { type Client, client } from '../test/support/http.js';
import { type BerthProcess, spawnBerth, stopBerth } from '../test/support/process.js';
import { createPostgresDatabase } from '../test/support/server.js';
import { openPostgres, sleep } from './support.js';
import { deadline } from '../test/support/deadline.js';
import { skippedWithout } from '../test/support/database.js';

const REPLICAS = 3;
const DEPLOYMENTS = 10;
const PATCHES = Number(process.env.RELIABILITY_PATCHES ?? 1000);
const IN_FLIGHT = 50;
const TERMINAL_BOUND_MS = deadline(120_000);

describe('three replicas on one PostgreSQL', () => {
  const running: BerthProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const berth of running) await stopBerth(berth, 'SIGKILL');
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  });

  test(`${PATCHES} concurrent PATCHes over ${DEPLOYMENTS} deployments through ${REPLICAS} replicas`, { timeout: deadline(300_000) }, async (t) => {
    if (await skippedWithout('postgres', t)) return;
    const database = await createPostgresDatabase();
    cleanups.push(database.drop);
    const key = `berth_test_${randomUUID()}`;
    const env = {
      DATABASE_URL: database.url,
      BERTH_BOOTSTRAP_API_KEY: key,
      BERTH_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      BERTH_CONTAINER_RUNTIME: 'none',
      BERTH_BUILDER: 'none',
      BERTH_RATE_LIMIT_PER_MINUTE: '0',
      // Every revision made is counted below: none may be removed by the retention of old ones.
      BERTH_REVISIONS_KEPT: '1000',
      LOG_LEVEL: 'info',
    };
    const dirs = Array.from({ length: REPLICAS }, () => fs.mkdtempSync(path.join(os.tmpdir(), 'berth-replica-')));
    cleanups.push(async () => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));
    // Started together: migrations and the bootstrap race each other on the empty database.
    const spawned = await Promise.allSettled(dirs.map((dir) => spawnBerth({ ...env, BERTH_DATA_DIR: dir })));
    // Those that started are stopped by the test's hook even when another one did not.
    for (const outcome of spawned) if (outcome.status === 'fulfilled') running.push(outcome.value);
    const replicas = spawned.map((outcome) => {
      if (outcome.status === 'rejected') throw outcome.reason;
      return outcome.value;
    });
    const apis = replicas.map((r) => client(r.url, { key }));
    const api = (i: number) => apis[i % REPLICAS] as Client;

    // Half image deployments (they fail at deploy: no runtime), half code-host ones, whose
    // build step really runs (and fails: no builder) and is recorded in engine_step_runs.
    const repositories = await tempDir('berth-replicas-');
    cleanups.push(repositories.remove);
    const integration = await gitIntegrationOf(api(0), (await createRepository(repositories.path)).bare);
    const deployments: { id: string; firstRevision: string }[] = [];
    for (let i = 0; i < DEPLOYMENTS; i += 1) {
      const image = i % 2 === 0;
      const res = await api(i)('POST', '/v2/deployments', {
        body: image
          ? { name: `replica-${i}`, source: 'external_docker', source_config: null, source_revision_config: { image_uri: 'localhost/r:1' }, secrets: [] }
          : {
              name: `replica-${i}`,
              source: 'github',
              source_config: { integration_id: integration.id, repo_url: integration.repoUrl },
              source_revision_config: { repo_ref: 'main' },
              secrets: [],
            },
      });
      assert.equal(res.status, 201, res.text);
      deployments.push({ id: res.body.id, firstRevision: res.body.latest_revision_id });
    }

    const secretOfPatch = new Map<number, string>();
    const revisionOfPatch = new Map<number, string>();
    const patchOfRevision = new Map<string, number>();
    const problems: string[] = [];
    let next = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < PATCHES) {
          const i = next;
          next += 1;
          const deployment = deployments[i % DEPLOYMENTS] as { id: string };
          const secrets = [{ name: 'PATCH', value: `patch-${i}-${randomUUID()}` }];
          const res = await api(Math.floor(i / DEPLOYMENTS))('PATCH', `/v2/deployments/${deployment.id}`, { body: { secrets } });
          if (res.status !== 200) {
            problems.push(`PATCH ${i} answered ${res.status}: ${res.text.slice(0, 200)}`);
            continue;
          }
          const revisionId = res.body.latest_revision_id as string;
          if (patchOfRevision.has(revisionId))
            problems.push(`PATCH ${i} answered revision ${revisionId}, already answered to PATCH ${patchOfRevision.get(revisionId)}`);
          if (JSON.stringify(res.body.secrets) !== JSON.stringify(secrets)) problems.push(`PATCH ${i} answered secrets ${JSON.stringify(res.body.secrets)}`);
          secretOfPatch.set(i, secrets[0]?.value as string);
          revisionOfPatch.set(i, revisionId);
          patchOfRevision.set(revisionId, i);
        }
      }),
    );
    const seconds = (Date.now() - started) / 1000;
    t.diagnostic(`${PATCHES} PATCHes in ${seconds.toFixed(1)} s (${Math.round(PATCHES / seconds)}/s) through ${REPLICAS} replicas`);
    assert.deepEqual(problems.slice(0, 20), [], `${problems.length} PATCHes went wrong`);
    assert.equal(revisionOfPatch.size, PATCHES);
    for (const d of deployments) assert.ok(!patchOfRevision.has(d.firstRevision), 'a PATCH answered the first revision');

    const db = openPostgres(database.url);
    try {
      // All revisions terminal before the step runs are judged.
      const waitStart = Date.now();
      for (;;) {
        const pending = await db
          .selectFrom('revisions')
          .select(db.fn.countAll<string>().as('n'))
          .where('status', 'in', [...IN_PROGRESS_STATUSES])
          .executeTakeFirstOrThrow();
        if (Number(pending.n) === 0) break;
        assert.ok(Date.now() - waitStart < TERMINAL_BOUND_MS, `${pending.n} revisions still unfinished after ${TERMINAL_BOUND_MS} ms`);
        await sleep(250);
      }
      t.diagnostic(`all revisions terminal ${Date.now() - waitStart} ms after the last PATCH`);

      const revisions = await db.selectFrom('revisions').select(['id', 'deployment_id', 'seq', 'status']).execute();
      const rows = await db.selectFrom('deployments').select(['id', 'latest_revision_id', 'revision_count']).execute();
      assert.equal(revisions.length, DEPLOYMENTS + PATCHES, 'one revision per create and per PATCH, no more');
      const ids = new Set(revisions.map((r) => r.id));
      assert.equal(ids.size, revisions.length, 'revision ids are unique');
      for (const [i, revisionId] of revisionOfPatch) {
        const revision = revisions.find((r) => r.id === revisionId);
        assert.ok(revision, `revision ${revisionId} of PATCH ${i} does not exist`);
        assert.equal(revision.deployment_id, deployments[i % DEPLOYMENTS]?.id, `revision of PATCH ${i} belongs to another deployment`);
      }
      for (const d of rows) {
        const own = revisions.filter((r) => r.deployment_id === d.id).sort((a, b) => Number(a.seq) - Number(b.seq));
        assert.equal(own.length, 1 + PATCHES / DEPLOYMENTS, `revisions of ${d.id}`);
        assert.deepEqual(
          own.map((r) => Number(r.seq)),
          own.map((_, i) => i + 1),
          `revisions of ${d.id} are numbered 1..n without gaps or duplicates`,
        );
        assert.equal(Number(d.revision_count), own.length);
        assert.equal(d.latest_revision_id, own.at(-1)?.id, `latest_revision_id of ${d.id} is its newest revision`);
        for (const r of own) assert.ok(isTerminal(r.status), `revision ${r.id} is ${r.status}`);
        // Every replica answers the same latest revision, with that revision's secrets.
        const newestPatch = patchOfRevision.get(d.latest_revision_id as string);
        for (const replica of apis) {
          const res = await replica('GET', `/v2/deployments/${d.id}`);
          assert.equal(res.body.latest_revision_id, d.latest_revision_id);
          assert.deepEqual(res.body.secrets, [{ name: 'PATCH', value: secretOfPatch.get(newestPatch as number) }]);
        }
      }

      // No step of a revision ran twice at once, and none succeeded twice.
      const runs = await db.selectFrom('engine_step_runs').selectAll().orderBy('id').execute();
      assert.ok(runs.length > 0, 'engine steps were recorded');
      const runsByRevision = new Map<string, typeof runs>();
      for (const run of runs) runsByRevision.set(run.revision_id, [...(runsByRevision.get(run.revision_id) ?? []), run]);
      for (const [revisionId, own] of runsByRevision) {
        const sorted = [...own].sort((a, b) => a.started_at.localeCompare(b.started_at));
        for (const run of sorted) assert.ok(run.finished_at, `step run ${run.id} (${run.step} of ${revisionId}) never finished`);
        for (let i = 1; i < sorted.length; i += 1) {
          const previous = sorted[i - 1] as (typeof runs)[number];
          const current = sorted[i] as (typeof runs)[number];
          assert.ok(
            (previous.finished_at as string) <= current.started_at,
            `step runs of ${revisionId} overlap: ${previous.step} by ${previous.worker} [${previous.started_at}, ${previous.finished_at}] and ` +
              `${current.step} by ${current.worker} [${current.started_at}, ${current.finished_at}]`,
          );
        }
        for (const step of new Set(own.map((r) => r.step))) {
          const succeeded = own.filter((r) => r.step === step && r.outcome === 'succeeded').length;
          assert.ok(succeeded <= 1, `step ${step} of ${revisionId} succeeded ${succeeded} times`);
        }
      }
      const workers = new Set(runs.map((r) => r.worker.split('/').slice(0, 2).join('/')));
      t.diagnostic(`${runs.length} step runs by ${workers.size} processes`);

      // Each revision's recorded status changes form one valid path: no transition happened twice.
      const events = await db.selectFrom('deployment_events').select(['revision_id', 'status', 'id']).where('kind', '=', 'status').orderBy('id').execute();
      const pathOf = new Map<string, string[]>();
      for (const e of events) if (e.revision_id && e.status) pathOf.set(e.revision_id, [...(pathOf.get(e.revision_id) ?? []), e.status]);
      for (const r of revisions) {
        const statuses = pathOf.get(r.id) ?? [];
        let previous = 'CREATING';
        for (const status of statuses) {
          assert.ok(canTransition(previous, status as RevisionStatus), `revision ${r.id}: recorded ${previous} → ${status} (path ${statuses.join(' → ')})`);
          previous = status;
        }
        assert.equal(previous, r.status, `revision ${r.id}: its last recorded status is not its status`);
      }
    } finally {
      await db.destroy();
    }
    for (const replica of replicas) await stopBerth(replica);
    const output = replicas.map((r) => r.output.join('')).join('');
    const leaked = [key, ...secretOfPatch.values()].filter((value) => output.includes(value));
    assert.deepEqual(leaked, [], 'secret values or the API key appear in the output of the replicas');
  });
});
