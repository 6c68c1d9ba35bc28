import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LocalContainerRuntime } from '../../src/containers/runtime/index.js';
import { client } from '../support/http.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import { type BerthProcess, spawnBerth, stopBerth } from '../support/process.js';
import { eventually } from '../support/runtimes.js';
import { createPostgresDatabase, postgresUnavailable } from '../support/server.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const IMAGE = 'localhost/berth-test-agent:v1';

/** A rollback through the API, with a real Berth process and podman: the replaced container is resumed. */
describe('rollback to a replaced revision resumes its standby container (real process, podman)', async () => {
  holdMachineTurnForSuite({ before, after });
  const unavailable = await new LocalContainerRuntime({ runtime: 'podman' }).unavailableReason();
  if (unavailable) {
    process.stdout.write(`# SKIP standby rollback: ${unavailable}\n`);
    return;
  }
  const runtime: Record<string, string> = process.env.CONTAINERS_CONF ? {} : { CONTAINERS_CONF: '/etc/berth/containers.conf' };
  const podman = (...args: string[]) =>
    execFileSync('podman', args, { env: { ...process.env, ...runtime } })
      .toString()
      .trim();
  const containersOf = (id: string) => podman('ps', '-a', '--filter', `label=berth.deployment=${id}`, '--format', '{{.Names}}').split('\n').filter(Boolean);
  const cleanups: (() => Promise<void>)[] = [];

  before(() => execFileSync('bash', [path.join(ROOT, 'scripts/build-test-image.sh'), IMAGE], { stdio: 'ignore' }));
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  async function rollbackResumes(database: Record<string, string>) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-standby-'));
    cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    const key = `berth_test_${randomUUID()}`;
    const berth: BerthProcess = await spawnBerth({
      BERTH_CONTAINER_RUNTIME: 'podman',
      ...runtime,
      ...database,
      BERTH_DATA_DIR: dataDir,
      BERTH_BOOTSTRAP_API_KEY: key,
      BERTH_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      BERTH_STANDBY_SECONDS: '600',
    });
    cleanups.push(() => stopBerth(berth));
    const api = client(berth.url, { key });
    const ids: string[] = [];
    cleanups.push(async () => {
      for (const id of ids) {
        const names = containersOf(id);
        if (names.length > 0) podman('rm', '-f', '-t', '0', ...names);
      }
    });
    const deployed = async (deploymentId: string, revisionId: string) =>
      eventually(
        async () => {
          const revision = (await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body;
          assert.ok(!/FAILED/.test(revision.status), `revision ${revisionId} ${revision.status}: ${revision.status_message}`);
          return revision.status === 'DEPLOYED' ? revision : undefined;
        },
        `revision ${revisionId} to be DEPLOYED`,
        60_000,
      );

    const created = await api('POST', '/v2/deployments', {
      body: {
        name: `standby-${randomUUID().slice(0, 8)}`,
        source: 'external_docker',
        source_config: {},
        source_revision_config: { image_uri: IMAGE },
        secrets: [{ name: 'S', value: 'one' }],
      },
    });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    ids.push(id);
    const rev1 = await deployed(id, created.body.latest_revision_id);
    const [firstName] = containersOf(id);
    assert.ok(firstName);
    const firstId = podman('container', 'inspect', '--format', '{{.Id}}', firstName);

    // A secret change replaces it: a new container, the first kept paused.
    const patched = await api('PATCH', `/v2/deployments/${id}`, { body: { secrets: [{ name: 'S', value: 'two' }] } });
    assert.equal(patched.status, 200, patched.text);
    const rev2 = await deployed(id, patched.body.latest_revision_id);
    assert.notEqual(rev2.url, rev1.url);
    const standby = await eventually(
      async () => containersOf(id).find((name) => name.includes('.standby-')),
      'the replaced container to be kept as a standby',
      30_000,
    );
    assert.equal(containersOf(id).length, 2);
    assert.equal(podman('container', 'inspect', '--format', '{{.State.Status}}', standby), 'paused');

    // A hostile workspace's key cannot roll it back (nor learn that it exists).
    const workspace = await api('POST', '/v1/workspaces', { body: { name: `hostile-${randomUUID().slice(0, 8)}` } });
    assert.equal(workspace.status, 201, workspace.text);
    const hostileKey = await api('POST', '/v1/api-keys', { body: { name: 'hostile', workspace_id: workspace.body.id, role: 'admin' } });
    assert.equal(hostileKey.status, 201, hostileKey.text);
    const hostile = client(berth.url, { key: hostileKey.body.key });
    const refused = await hostile('POST', `/v2/deployments/${id}/revisions/${rev1.id}/redeploy`);
    assert.equal(refused.status, 404);
    assert.equal(podman('container', 'inspect', '--format', '{{.State.Status}}', standby), 'paused');

    // The rollback: a new revision, a copy of the first, served by the first's own container.
    const redeployed = await api('POST', `/v2/deployments/${id}/revisions/${rev1.id}/redeploy`);
    assert.equal(redeployed.status, 200, redeployed.text);
    const rev3 = await deployed(id, redeployed.body.latest_revision_id);
    assert.equal(rev3.url, rev1.url, 'the deployment serves from the first container again');
    assert.equal((await api('GET', `/v2/deployments/${id}`)).body.url, rev1.url);
    // The second is parked once the copy serves.
    const runningIds = () =>
      podman('ps', '--filter', `label=berth.deployment=${id}`, '--filter', 'status=running', '--format', '{{.ID}}').split('\n').filter(Boolean);
    const running = await eventually(async () => (runningIds().length === 1 ? runningIds() : undefined), 'one container to serve', 30_000);
    assert.ok(firstId.startsWith(running[0] as string), 'no new container was started for the rollback');
    const ok = await fetch(`${rev3.url}/ok`);
    assert.equal(ok.status, 200);
    const logs = (await api('POST', `/v1/projects/${id}/revisions/${rev3.id}/deploy_logs`, { body: {} })).text;
    assert.match(logs, /Unpaused a standby container/);
    assert.doesNotMatch(logs, /Starting container/);

    // Deleting the deployment removes its standby too.
    await api('DELETE', `/v2/deployments/${id}`);
    await eventually(async () => (await api('GET', `/v2/deployments/${id}`)).status === 404 || undefined, 'the deployment to be deleted', 60_000);
    assert.deepEqual(containersOf(id), []);
  }

  test('a standby past its time, of a deployment Berth does not know, is removed when Berth starts', async () => {
    const driver = new LocalContainerRuntime({ runtime: 'podman', env: { ...process.env, ...runtime }, standby: { keepMs: 1_000, perDeployment: 1 } });
    const deploymentId = `test-${randomUUID()}`;
    const step = { signal: new AbortController().signal, log: async () => {} };
    cleanups.push(async () => {
      const names = containersOf(deploymentId);
      if (names.length > 0) podman('rm', '-f', '-t', '0', ...names);
    });
    const started = await driver.start({ deploymentId, revisionId: randomUUID(), instanceName: 'orphan', image: IMAGE, env: {}, resources: {} }, step);
    assert.equal(await driver.park(started.handle, step), true);
    const [standby] = containersOf(deploymentId);
    const expiresAt = Number(standby?.split('.standby-')[1]) * 1000;
    await eventually(async () => Date.now() > expiresAt || undefined, 'the standby time to end', 10_000);

    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-standby-'));
    cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    const berth = await spawnBerth({
      BERTH_CONTAINER_RUNTIME: 'podman',
      ...runtime,
      BERTH_DATA_DIR: dataDir,
      BERTH_BOOTSTRAP_API_KEY: `berth_test_${randomUUID()}`,
    });
    cleanups.push(() => stopBerth(berth));
    await eventually(async () => containersOf(deploymentId).length === 0 || undefined, 'the expired standby to be removed at start-up', 30_000);
  });

  test('on SQLite', async () => {
    await rollbackResumes({});
  });

  test('on PostgreSQL', async (t) => {
    const skip = await postgresUnavailable();
    if (skip) return t.skip(skip);
    const database = await createPostgresDatabase();
    cleanups.push(database.drop);
    await rollbackResumes({ DATABASE_URL: database.url });
  });
});
