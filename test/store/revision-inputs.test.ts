import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Client, client } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { describeEachDatabase } from '../support/database.js';

/**
 * Revisions refer to their resource spec and secrets instead of copying them (issue 8,
 * item 3): twenty revisions of a deployment with large secrets must not store them twenty
 * times; and a deployment keeps a bounded number of revisions.
 */
describeEachDatabase('revision inputs stored once, revisions bounded', (kind) => {
  let server: TestServer;
  let api: Client;
  before(async () => {
    // No engine: revisions stay where the API put them, so only the API's writes count.
    server = await startTestServer(kind, { engine: false, revisionsKept: 5 });
    api = client(server.url, { key: server.adminKey });
  });
  after(async () => server.close());

  const count = async (table: 'secret_set_entries' | 'secret_sets' | 'resource_specs' | 'revisions', deploymentId?: string) => {
    const db = server.berth.db;
    if (table === 'secret_set_entries') {
      const row = await db
        .selectFrom('secret_set_entries')
        .innerJoin('secret_sets', 'secret_sets.id', 'secret_set_entries.set_id')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('secret_sets.deployment_id', '=', deploymentId as string)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    }
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('deployment_id', '=', deploymentId as string)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  };

  test('empty revisions share the secrets and resource spec of the one before', async () => {
    const secrets = Array.from({ length: 15 }, (_, i) => ({ name: `BIG_${i}`, value: `${i}`.padEnd(20_000, 's') }));
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: 'shares-inputs',
        source: 'external_docker',
        source_config: { resource_spec: { cpu: 2, labels: { team: 'a' } } },
        source_revision_config: { image_uri: 'registry.local/agent:v1' },
        secrets,
      },
    });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    // Fewer than the kept count, so none is removed and every one must refer to the same inputs.
    for (let i = 0; i < 3; i++) assert.equal((await api('POST', `/v2/deployments/${id}/revisions`, { body: {} })).status, 201);
    assert.equal(await count('revisions', id), 4);
    assert.equal(await count('secret_sets', id), 1, 'one stored secret set for four revisions');
    assert.equal(await count('secret_set_entries', id), 15);
    assert.equal(await count('resource_specs', id), 1, 'one stored resource spec for four revisions');

    // A change of one secret makes a new set; going back to the old secrets reuses the old set.
    const changed = secrets.map((s, i) => (i === 0 ? { ...s, value: 'changed' } : s));
    assert.equal((await api('PATCH', `/v2/deployments/${id}`, { body: { secrets: changed } })).status, 200);
    assert.equal(await count('secret_sets', id), 2);
    const back = await api('PATCH', `/v2/deployments/${id}`, { body: { secrets } });
    assert.equal(back.status, 200);
    assert.equal(await count('secret_sets', id), 2);
    assert.deepEqual(back.body.secrets, secrets, 'the answer shows the secrets of the new latest revision');
    assert.deepEqual((await api('GET', `/v2/deployments/${id}`)).body.source_config.resource_spec.labels, { team: 'a' });
  });

  test('a deployment keeps a bounded number of revisions, never its active or latest one', async () => {
    const created = await api('POST', '/v2/deployments', {
      body: { name: 'bounded', source: 'external_docker', source_config: {}, source_revision_config: { image_uri: 'registry.local/agent:v1' }, secrets: [] },
    });
    const id = created.body.id as string;
    const first = created.body.latest_revision_id as string;
    // The first revision serves; the others end without deploying.
    await server.berth.db.updateTable('revisions').set({ status: 'DEPLOYED' }).where('id', '=', first).execute();
    await server.berth.db.updateTable('deployments').set({ active_revision_id: first }).where('id', '=', id).execute();
    const made: string[] = [];
    for (let i = 2; i <= 12; i++) {
      const res = await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { image_uri: `registry.local/agent:v${i}` } } });
      assert.equal(res.status, 200, res.text);
      made.push(res.body.latest_revision_id);
      await server.berth.db.updateTable('revisions').set({ status: 'DEPLOY_FAILED' }).where('id', '=', res.body.latest_revision_id).execute();
    }
    const listed = (await api('GET', `/v2/deployments/${id}/revisions?limit=100`)).body.resources as { id: string; revision_number: number }[];
    assert.deepEqual(
      listed.map((r) => r.revision_number),
      [12, 11, 10, 9, 8, 1],
      'the newest five, plus the active one',
    );
    assert.equal((await api('GET', `/v2/deployments/${id}/revisions/${first}`)).status, 200);
    const pruned = made[0] as string;
    assert.equal((await api('GET', `/v2/deployments/${id}/revisions/${pruned}`)).status, 404);
    const events = await server.berth.db.selectFrom('deployment_events').select('id').where('revision_id', '=', pruned).execute();
    assert.deepEqual(events, [], 'a removed revision takes its events along');
    assert.equal(await count('resource_specs', id), 1);
  });
});
