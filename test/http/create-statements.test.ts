import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LogEvent } from 'kysely';
import { describeEachDatabase } from '../support/database.js';
import { client, type Client } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * What creating a deployment costs the database. Each statement of the create's transaction
 * is a round trip on PostgreSQL while the transaction holds a pooled connection, so under
 * load their number sets the rate of creates (bench/results.md, issue 24): a new deployment
 * has nothing stored to look up, count or prune, and only its rows are written. An image
 * deployment that names no listener first asks whether the workspace has any (it must name
 * one if so).
 */
const STATEMENTS_OF_A_CREATE = [
  'select "id" from "listeners"',
  'insert into "deployments"',
  'insert into "secret_sets"',
  'insert into "secret_set_entries"',
  'insert into "resource_specs"',
  'insert into "revisions"',
  'insert into "audit_log"',
  'insert into "webhook_events"',
];

describeEachDatabase('statements of a create', (kind) => {
  let server: TestServer;
  let api: Client;
  let counting = false;
  const sent: string[] = [];
  const log = (event: LogEvent) => {
    if (counting && event.level === 'query') sent.push(event.query.sql.replace(/\s+/g, ' ').trim());
  };

  before(async () => {
    server = await startTestServer(kind, { engine: false, overrides: { databaseLog: log } });
    api = client(server.url, { key: server.adminKey });
    // The key's first use reads it; later requests find it cached.
    assert.equal((await api('GET', '/v2/deployments')).status, 200);
  });
  after(async () => server?.close());

  async function counted<T>(work: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
    sent.length = 0;
    counting = true;
    try {
      return { result: await work(), statements: [...sent] };
    } finally {
      counting = false;
    }
  }

  const body = (name: string) => ({
    name,
    source: 'external_docker',
    source_config: {},
    source_revision_config: { image_uri: 'docker.io/example/agent:1' },
    secrets: [
      { name: 'OPENAI_API_KEY', value: 'sk-first' },
      { name: 'REGION', value: 'eu' },
    ],
  });

  test('a new deployment is written with its inserts alone: nothing of it read, counted or pruned', async () => {
    const { result: res, statements } = await counted(() => api('POST', '/v2/deployments', { body: body('counted-create') }));
    assert.equal(res.status, 201, res.text);
    const work = statements.filter((sql) => !/^(begin|commit)\b/i.test(sql));
    assert.deepEqual(
      work.map((sql) => STATEMENTS_OF_A_CREATE.find((start) => sql.toLowerCase().startsWith(start)) ?? sql),
      STATEMENTS_OF_A_CREATE,
      'the statements of a create, in order',
    );
    assert.equal(statements.length, STATEMENTS_OF_A_CREATE.length + 2, 'one transaction around them');
  });

  test('the first revision is numbered 1 and the latest; the next one is 2 and shares what did not change', async () => {
    const res = await api('POST', '/v2/deployments', { body: body('numbered-create') });
    assert.equal(res.status, 201, res.text);
    const created = res.body;
    const [first] = (await api('GET', `/v2/deployments/${created.id}/revisions`)).body.resources;
    assert.equal(first.id, created.latest_revision_id);

    const patched = await api('PATCH', `/v2/deployments/${created.id}`, {
      body: { source_revision_config: { image_uri: 'docker.io/example/agent:2' }, secrets: body('x').secrets },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.notEqual(patched.body.latest_revision_id, first.id, 'a new revision');
    assert.deepEqual(patched.body.secrets, body('x').secrets);

    const rows = await server.berth.db
      .selectFrom('revisions')
      .select(['id', 'seq', 'secret_set_id', 'resource_spec_id'])
      .where('deployment_id', '=', created.id)
      .orderBy('seq')
      .execute();
    assert.deepEqual(
      rows.map((row) => [row.id, row.seq]),
      [
        [first.id, 1],
        [patched.body.latest_revision_id, 2],
      ],
    );
    assert.equal(rows[1]!.secret_set_id, rows[0]!.secret_set_id, 'the unchanged secrets are the stored set');
    assert.equal(rows[1]!.resource_spec_id, rows[0]!.resource_spec_id, 'the unchanged resource spec is the stored one');
    const deployment = await server.berth.db.selectFrom('deployments').select(['revision_count']).where('id', '=', created.id).executeTakeFirstOrThrow();
    assert.equal(deployment.revision_count, 2);
  });

  test('a new deployment of another name never shares the sets of one with the same secrets', async () => {
    const a = await api('POST', '/v2/deployments', { body: body('same-secrets-a') });
    const b = await api('POST', '/v2/deployments', { body: body('same-secrets-b') });
    assert.equal(a.status, 201, a.text);
    assert.equal(b.status, 201, b.text);
    const sets = await server.berth.db
      .selectFrom('revisions')
      .select(['deployment_id', 'secret_set_id', 'resource_spec_id'])
      .where('deployment_id', 'in', [a.body.id, b.body.id])
      .execute();
    assert.equal(sets.length, 2);
    assert.notEqual(sets[0]!.secret_set_id, sets[1]!.secret_set_id);
    assert.notEqual(sets[0]!.resource_spec_id, sets[1]!.resource_spec_id);
  });
});
