import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';

import { UNKNOWN_ID, type Body, dockerBody, createDeployment, freshWorkspace, rawRequest, assertIssue, describeDeployments } from '../support/deployments.js';

/** Reading and listing deployments: GET by id, the list's envelope, paging and filters. */
describeDeployments('reading and listing deployments', (ctx) => {
  test('get answers the deployment; unknown id is 404; a non-UUID id is 422 uuid_parsing', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const got = await api('GET', `/v2/deployments/${created.id}`);
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, created);

    const unknown = await api('GET', `/v2/deployments/${UNKNOWN_ID}`);
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { detail: `Deployment ID ${UNKNOWN_ID} not found.`, code: 'deployment_not_found' });

    const malformed = await api('GET', '/v2/deployments/not-a-uuid');
    assertIssue(malformed, ['path', 'deployment_id'], 'uuid_parsing');
  });

  test('GET and DELETE with Content-Type: application/json and an empty body work (RUST client)', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const json = { 'Content-Type': 'application/json' };
    const get = await api('GET', `/v2/deployments/${created.id}`, { headers: json });
    assert.equal(get.status, 200, get.text);
    // fetch refuses a body on GET, so send `Content-Length: 0` with node:http.
    const getEmpty = await rawRequest(ctx().server.url, 'GET', `/v2/deployments/${created.id}`, {
      'Content-Type': 'application/json',
      'Content-Length': '0',
      'X-Api-Key': ctx().server.adminKey,
    });
    assert.equal(getEmpty.status, 200, getEmpty.text);
    const list = await api('GET', '/v2/deployments', { headers: json });
    assert.equal(list.status, 200, list.text);
    const del = await api('DELETE', `/v2/deployments/${created.id}`, { rawBody: '' });
    assert.equal(del.status, 204, del.text);
    assert.equal(del.text, '');

    const other = await createDeployment(api);
    const delNoBody = await api('DELETE', `/v2/deployments/${other.id}`, { headers: json });
    assert.equal(delNoBody.status, 204, delNoBody.text);
  });

  test('a deployment id in upper case names the same deployment (UUIDs are case-insensitive)', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const got = await api('GET', `/v2/deployments/${created.id.toUpperCase()}`);
    assert.equal(got.status, 200, got.text);
    assert.equal(got.body.id, created.id);
  });

  test('list: envelope, newest first, default limit 20, offset = request offset + items returned', async () => {
    const { api } = await freshWorkspace(ctx());
    assert.deepEqual((await api('GET', '/v2/deployments')).body, { resources: [], offset: 0 });

    const created: Body[] = [];
    for (let i = 0; i < 22; i++) created.push(await createDeployment(api, dockerBody({ name: `app-${String(i).padStart(2, '0')}` })));
    const newestFirst = created.map((d) => d.id).reverse();

    const page1 = await api('GET', '/v2/deployments');
    assert.equal(page1.status, 200, page1.text);
    assert.deepEqual(Object.keys(page1.body).sort(), ['offset', 'resources']);
    assert.equal(page1.body.resources.length, 20, 'default limit is 20');
    assert.equal(page1.body.offset, 20);
    assert.deepEqual(
      page1.body.resources.map((d: Body) => d.id),
      newestFirst.slice(0, 20),
    );
    assert.deepEqual(page1.body.resources[0], created[21], 'list items are full deployments');

    const page2 = await api('GET', `/v2/deployments?offset=${page1.body.offset}`);
    assert.deepEqual(
      page2.body.resources.map((d: Body) => d.id),
      newestFirst.slice(20),
    );
    assert.equal(page2.body.offset, 22);

    const small = await api('GET', '/v2/deployments?limit=5&offset=3');
    assert.deepEqual(
      small.body.resources.map((d: Body) => d.id),
      newestFirst.slice(3, 8),
    );
    assert.equal(small.body.offset, 8);
    assert.deepEqual((await api('GET', '/v2/deployments?limit=100&offset=50')).body, { resources: [], offset: 50 });
    assert.equal((await api('GET', '/v2/deployments?limit=100')).body.resources.length, 22);
  });

  test('list: limit=0, limit=101, offset=-1 and non-integers are 422 at the query parameter', async () => {
    const { api } = ctx();
    for (const limit of ['0', '101']) assertIssue(await api('GET', `/v2/deployments?limit=${limit}`), ['query', 'limit']);
    assertIssue(await api('GET', '/v2/deployments?limit=abc'), ['query', 'limit'], 'int_parsing');
    assertIssue(await api('GET', '/v2/deployments?offset=-1'), ['query', 'offset']);
    assert.equal((await api('GET', '/v2/deployments?limit=1')).status, 200);
    assert.equal((await api('GET', '/v2/deployments?limit=100')).status, 200);
  });

  test('list: name_contains is a case-insensitive substring; empty matches all; % and _ are literal; name is exact', async () => {
    const { api } = await freshWorkspace(ctx());
    const web = await createDeployment(api, dockerBody({ name: 'Alpha-Web' }));
    const web2 = await createDeployment(api, dockerBody({ name: 'beta-web' }));
    const worker = await createDeployment(api, dockerBody({ name: 'gamma-worker' }));
    const ids = async (query: string) => {
      const res = await api('GET', `/v2/deployments?${query}`);
      assert.equal(res.status, 200, `${query}: ${res.text}`);
      return res.body.resources.map((d: Body) => d.id).sort();
    };
    assert.deepEqual(await ids('name_contains=WEB'), [web.id, web2.id].sort());
    assert.deepEqual(await ids('name_contains=alpha'), [web.id]);
    assert.deepEqual(await ids('name_contains=A-W'), [web.id, web2.id, worker.id].sort());
    assert.deepEqual(await ids('name_contains=ha-w'), [web.id]);
    assert.deepEqual(await ids('name_contains='), [web.id, web2.id, worker.id].sort());
    assert.deepEqual(await ids('name_contains=nothing'), []);
    assert.deepEqual(await ids('name_contains=%25'), [], '% is not a wildcard');
    assert.deepEqual(await ids('name_contains=_'), [], '_ is not a wildcard');
    assert.deepEqual(await ids('name_contains=a%25w'), []);
    assert.deepEqual(await ids('name_contains=beta_web'), []);
    assert.deepEqual(await ids('name=beta-web'), [web2.id]);
    assert.deepEqual(await ids('name=beta'), []);
    assert.deepEqual(await ids('name=BETA-WEB'), [], 'name is exact');
    assert.deepEqual(await ids('name=beta-web&name_contains=beta'), [web2.id]);
  });

  test('list: status, deployment_ids, deployment_type, image_version and tag_value_ids filters', async () => {
    const { server } = ctx();
    const { api } = await freshWorkspace(ctx());
    const dev = await createDeployment(api, dockerBody({ source_config: { deployment_type: 'dev' } }));
    const versioned = await createDeployment(api, dockerBody({ image_version: '0.4.2' }));
    const plain = await createDeployment(api);
    const ids = async (query: string) => {
      const res = await api('GET', `/v2/deployments?${query}`);
      assert.equal(res.status, 200, `${query}: ${res.text}`);
      return res.body.resources.map((d: Body) => d.id).sort();
    };
    const all = [dev.id, versioned.id, plain.id].sort();

    assert.deepEqual(await ids('status=AWAITING_DATABASE'), all);
    assert.deepEqual(await ids('status=READY'), []);
    await server.berth.db.updateTable('deployments').set({ status: 'READY' }).where('id', '=', plain.id).execute();
    assert.deepEqual(await ids('status=READY'), [plain.id]);
    assert.deepEqual(await ids('status=READY,AWAITING_DATABASE'), all);
    assert.deepEqual(await ids('status=READY%2CAWAITING_DATABASE'), all);
    assertIssue(await api('GET', '/v2/deployments?status=SLEEPING'), ['query', 'status', 0], 'enum');

    assert.deepEqual(await ids(`deployment_ids=${dev.id},${plain.id}`), [dev.id, plain.id].sort());
    assert.deepEqual(await ids(`deployment_ids=${dev.id}%2C${plain.id}`), [dev.id, plain.id].sort());
    assert.deepEqual(await ids(`deployment_ids=${versioned.id}`), [versioned.id]);
    assert.deepEqual(await ids(`deployment_ids=${UNKNOWN_ID}`), []);
    const many = [...Array.from({ length: 250 }, () => randomUUID()), dev.id, plain.id];
    assert.deepEqual(await ids(`deployment_ids=${many.join(',')}`), [dev.id, plain.id].sort(), '252 ids, two of them known');
    assert.deepEqual(await ids(`deployment_ids=${many.join(',')}&status=READY`), [plain.id], 'ids and a status');
    const badId = await api('GET', `/v2/deployments?deployment_ids=${dev.id},not-a-uuid`);
    assert.equal(badId.status, 422, badId.text);
    assert.deepEqual(badId.body.detail[0].loc.slice(0, 2), ['query', 'deployment_ids']);
    assert.equal(badId.body.detail[0].type, 'uuid_parsing');

    assert.deepEqual(await ids('deployment_type=dev'), [dev.id]);
    assert.deepEqual(await ids('deployment_type=prod'), [versioned.id, plain.id].sort());
    assert.deepEqual(await ids('deployment_type=dev_free'), []);
    assertIssue(await api('GET', '/v2/deployments?deployment_type=huge'), ['query', 'deployment_type'], 'enum');

    assert.deepEqual(await ids('image_version=0.4.2'), [versioned.id]);
    assert.deepEqual(await ids('image_version=9.9.9'), []);

    assert.deepEqual(await ids(`tag_value_ids=${randomUUID()}`), []);
    assert.deepEqual(await ids(`tag_value_ids=${randomUUID()},${randomUUID()}`), []);

    // Every filter at once, asked again with other values: a listing is compiled once for
    // each set of filters given, and each answer must still follow its own values.
    const everything = (of: Body, type: string, needle: string) =>
      ids(`status=READY,AWAITING_DATABASE&remote_reconciled=false&deployment_type=${type}&image_version=0.4.2&name=${of.name}&name_contains=${needle}`);
    for (const needle of [versioned.name.slice(0, 2), versioned.name.slice(1, 6)]) {
      assert.deepEqual(await everything(versioned, 'prod', needle), [versioned.id], needle);
      assert.deepEqual(await everything(dev, 'dev', needle), [], `${needle}: dev has no image_version`);
      assert.deepEqual(await everything(plain, 'prod', needle), [], `${needle}: plain has no image_version`);
      assert.deepEqual(await everything(versioned, 'dev', needle), [], `${needle}: versioned is prod`);
      assert.deepEqual(await everything(versioned, 'prod', needle), [versioned.id], `${needle}: again`);
    }
    const pageOf = async (query: string) => (await api('GET', `/v2/deployments?${query}`)).body.resources.map((d: Body) => d.id);
    const newestFirst = await pageOf('status=READY,AWAITING_DATABASE');
    assert.equal(newestFirst.length, 3);
    for (let offset = 0; offset < 3; offset++) {
      assert.deepEqual(await pageOf(`status=READY,AWAITING_DATABASE&limit=1&offset=${offset}`), [newestFirst[offset]], `offset ${offset}`);
    }
    assert.deepEqual(await pageOf('status=READY,AWAITING_DATABASE&limit=2&offset=1'), newestFirst.slice(1));
  });
});
