import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { LocalContainerRuntime } from '../../src/containers/runtime/index.js';
import { type Client, client } from '../support/http.js';
import { type BerthProcess, spawnBerth, stopBerth } from '../support/process.js';
import { eventually } from '../support/runtimes.js';
import { createPostgresDatabase } from '../support/server.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import { skippedWithout } from '../support/database.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const IMAGE = 'localhost/berth-test-agent:v1';
const SLOW_IMAGE = 'localhost/berth-test-agent:slow';

/** Real processes and real containers: what a user sees when a server dies mid-revision. */
describe('engine recovery with real processes and containers', async () => {
  holdMachineTurnForSuite({ before, after });
  const unavailable = await new LocalContainerRuntime({ runtime: 'podman' }).unavailableReason();
  if (unavailable) {
    process.stdout.write(`# SKIP engine recovery: ${unavailable}\n`);
    return;
  }
  const runtime: Record<string, string> = process.env.CONTAINERS_CONF ? {} : { CONTAINERS_CONF: '/etc/berth/containers.conf' };
  const podman = (...args: string[]) => execFileSync('podman', args, { env: { ...process.env, ...runtime } }).toString();
  const running: BerthProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  before(() => {
    for (const [image, flag] of [
      [IMAGE, []],
      [SLOW_IMAGE, ['--slow']],
    ] as const) {
      execFileSync('bash', [path.join(ROOT, 'scripts/build-test-image.sh'), image, ...flag], { stdio: 'ignore' });
    }
  });
  after(async () => {
    for (const berth of running) await stopBerth(berth, 'SIGKILL');
    for (const cleanup of cleanups) await cleanup();
  });

  async function start(env: Record<string, string>): Promise<BerthProcess> {
    const berth = await spawnBerth({ BERTH_CONTAINER_RUNTIME: 'podman', ...runtime, ...env });
    running.push(berth);
    return berth;
  }

  async function revision(api: Client, deploymentId: string, revisionId: string) {
    return (await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body;
  }

  async function removeDeployment(api: Client, id: string) {
    await api('DELETE', `/v2/deployments/${id}`);
    await eventually(async () => (await api('GET', `/v2/deployments/${id}`)).status === 404, `deployment ${id} to be deleted`, 30_000);
  }

  test('SIGKILL during DEPLOYING: the next start finishes the revision, with one container', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-recovery-'));
    cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    const key = `berth_test_${randomUUID()}`;
    const env = { BERTH_DATA_DIR: dataDir, BERTH_BOOTSTRAP_API_KEY: key };

    const first = await start(env);
    let api = client(first.url, { key });
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: 'crash-me',
        source: 'external_docker',
        source_config: { resource_spec: { cpu: 0.5, memory_mb: 64 } },
        source_revision_config: { image_uri: SLOW_IMAGE },
        secrets: [],
      },
    });
    assert.equal(created.status, 201);
    const { id, latest_revision_id: revisionId } = created.body;
    await eventually(async () => (await revision(api, id, revisionId)).status === 'DEPLOYING', 'the revision to be DEPLOYING', 30_000);
    await stopBerth(first, 'SIGKILL');

    const second = await start(env);
    api = client(second.url, { key });
    const done = await eventually(
      async () => {
        const r = await revision(api, id, revisionId);
        return r.status === 'DEPLOYED' || r.status.endsWith('FAILED') ? r : undefined;
      },
      'the revision to finish after the restart',
      60_000,
    );
    assert.equal(done.status, 'DEPLOYED', done.status_message);
    assert.equal((await fetch(`${done.url}/ok`)).status, 200);
    const containers = podman('ps', '-a', '--filter', `label=berth.deployment=${id}`, '--format', '{{.Names}}').trim().split('\n').filter(Boolean);
    assert.equal(containers.length, 1, `one container, found: ${containers.join(', ')}`);
    assert.ok(second.output.join('').includes('released the leases of a Berth process that is gone'));

    await removeDeployment(api, id);
    assert.equal(podman('ps', '-a', '--filter', `label=berth.deployment=${id}`, '--format', '{{.Names}}').trim(), '');
    await stopBerth(second);
  });

  test('an image that does not exist ends DEPLOY_FAILED naming the image, and nothing keeps running', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bad-image-'));
    cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    const key = `berth_test_${randomUUID()}`;
    const berth = await start({ BERTH_DATA_DIR: dataDir, BERTH_BOOTSTRAP_API_KEY: key });
    const api = client(berth.url, { key });
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: 'no-such-image',
        source: 'external_docker',
        source_config: { resource_spec: {} },
        source_revision_config: { image_uri: 'localhost/berth-no-such-image:v1' },
        secrets: [],
      },
    });
    const failed = await eventually(
      async () => {
        const r = await revision(api, created.body.id, created.body.latest_revision_id);
        return r.status === 'DEPLOY_FAILED' ? r : undefined;
      },
      'the revision to fail',
      60_000,
    );
    assert.match(failed.status_message, /^Deploy failed: .*localhost\/berth-no-such-image:v1/);
    assert.equal(podman('ps', '-a', '--filter', `label=berth.deployment=${created.body.id}`, '--format', '{{.Names}}').trim(), '');
    const deployment = (await api('GET', `/v2/deployments/${created.body.id}`)).body;
    assert.equal(deployment.active_revision_id, null);
    await removeDeployment(api, created.body.id);
    await stopBerth(berth);
  });

  test('two server processes on one PostgreSQL never run a step of a revision twice at once', async (t) => {
    if (await skippedWithout('postgres', t)) return;
    const database = await createPostgresDatabase();
    cleanups.push(database.drop);
    const key = `berth_test_${randomUUID()}`;
    const env = {
      DATABASE_URL: database.url,
      BERTH_BOOTSTRAP_API_KEY: key,
      BERTH_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      BERTH_ENGINE_CONCURRENCY: '3',
    };
    const dataDirs = [0, 1].map(() => fs.mkdtempSync(path.join(os.tmpdir(), 'berth-replica-')));
    cleanups.push(async () => dataDirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));
    const replicas = [await start({ ...env, BERTH_DATA_DIR: dataDirs[0] as string }), await start({ ...env, BERTH_DATA_DIR: dataDirs[1] as string })];
    const apis = replicas.map((r) => client(r.url, { key }));

    const ids: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      const res = await (apis[i % 2] as Client)('POST', '/v2/deployments', {
        body: {
          name: `replica-${i}`,
          source: 'external_docker',
          source_config: { resource_spec: { cpu: 0.25, memory_mb: 32 } },
          source_revision_config: { image_uri: IMAGE },
          secrets: [{ name: 'N', value: String(i) }],
        },
      });
      assert.equal(res.status, 201);
      ids.push(res.body.id);
    }
    // Each deployment gets new revisions through both replicas while earlier ones run.
    const patches = await Promise.all(
      ids.flatMap((id, i) =>
        [1, 2].map((n) => (apis[(i + n) % 2] as Client)('PATCH', `/v2/deployments/${id}`, { body: { secrets: [{ name: 'N', value: `${i}-${n}` }] } })),
      ),
    );
    assert.ok(patches.every((p) => p.status === 200));

    for (const id of ids) {
      await eventually(
        async () => {
          const d = (await (apis[0] as Client)('GET', `/v2/deployments/${id}`)).body;
          const latest = await revision(apis[0] as Client, id, d.latest_revision_id);
          return latest.status === 'DEPLOYED' && d.active_revision_id === d.latest_revision_id;
        },
        `deployment ${id} to run its latest revision`,
        90_000,
      );
    }

    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      const { rows } = await db.query<{
        revision_id: string;
        step: string;
        worker: string;
        started_at: string;
        finished_at: string | null;
        outcome: string | null;
      }>('select revision_id, step, worker, started_at, finished_at, outcome from engine_step_runs order by started_at');
      assert.ok(rows.length >= ids.length, 'steps were recorded');
      const byRevision = new Map<string, typeof rows>();
      for (const row of rows) byRevision.set(row.revision_id, [...(byRevision.get(row.revision_id) ?? []), row]);
      for (const [revisionId, runs] of byRevision) {
        for (let i = 1; i < runs.length; i += 1) {
          const previous = runs[i - 1] as (typeof rows)[number];
          const current = runs[i] as (typeof rows)[number];
          assert.ok(previous.finished_at !== null && previous.finished_at <= current.started_at, `step runs of ${revisionId} overlap`);
        }
        assert.ok(runs.filter((r) => r.outcome === 'succeeded' && r.step === 'deploy').length <= 1, `revision ${revisionId} deployed twice`);
      }
      const revisions = await db.query<{ deployment_id: string; n: string; distinct_seq: string }>(
        'select deployment_id, count(*) as n, count(distinct seq) as distinct_seq from revisions group by deployment_id',
      );
      for (const row of revisions.rows) {
        assert.equal(row.n, '3');
        assert.equal(row.distinct_seq, '3');
      }
    } finally {
      await db.end();
    }
    for (const id of ids) await removeDeployment(apis[1] as Client, id);
    for (const replica of replicas) await stopBerth(replica);
  });
});
