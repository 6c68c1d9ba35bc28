import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { type Client, client } from '../support/http.js';
import { deadline } from '../support/deadline.js';
import { describeOnEachDatabase } from '../support/suite.js';

const MARKER = 'sharp-secret-marker';

const imageDeployment = (extra: Record<string, unknown> = {}) => ({
  name: `edge-${randomUUID().slice(0, 8)}`,
  source: 'external_docker',
  source_config: null,
  source_revision_config: { image_uri: 'localhost/berth-test-agent:v1' },
  secrets: [],
  ...extra,
});

const provider = (providerId: string) => ({
  provider_id: providerId,
  name: 'Provider',
  client_id: 'client',
  client_secret: `${MARKER}-client`,
  auth_url: 'https://auth.example.com/authorize',
  token_url: 'https://auth.example.com/token',
});

// No engine: a deployment being deleted stays so, and nothing else writes.
describeOnEachDatabase('sharp edges', { engine: false }, (ctx) => {
  const api: Client = (method, route, options) => ctx().api(method, route, options);

  test('no error echoes anything under secrets, client_secret or integration credentials, whatever its shape', async () => {
    const created = await api('POST', '/v2/deployments', { body: imageDeployment() });
    assert.equal(created.status, 201);
    const shapes: unknown[] = [
      { OPENAI_API_KEY: `${MARKER}-map` },
      [`OPENAI_API_KEY=${MARKER}-string`],
      [{ name: 12345, value: `${MARKER}-wrong-name` }],
      [{ name: { nested: `${MARKER}-object-name` }, value: 'x' }],
      [{ name: 'GOOD', value: { nested: `${MARKER}-object-value` } }],
      [{ name: 'bad name!', value: `${MARKER}-pattern` }],
      `${MARKER}-plain-string`,
    ];
    const answers = [];
    for (const secrets of shapes) {
      answers.push(await api('POST', '/v2/deployments', { body: imageDeployment({ secrets }) }));
      // A missing field elsewhere makes the whole body the echoed input.
      answers.push(await api('POST', '/v2/deployments', { body: { source: 'external_docker', secrets } }));
      answers.push(await api('PATCH', `/v2/deployments/${created.body.id}`, { body: { secrets } }));
      answers.push(await api('POST', `/v2/deployments/${created.body.id}/revisions`, { body: { secrets } }));
    }
    for (const clientSecret of [{ nested: `${MARKER}-cs-object` }, [`${MARKER}-cs-list`], 5, '']) {
      answers.push(await api('POST', '/v2/auth/providers', { body: { ...provider('leaky'), client_secret: clientSecret } }));
      answers.push(await api('PATCH', '/v2/auth/providers/leaky', { body: { client_secret: clientSecret, auth_url: 'not a url' } }));
      answers.push(await api('POST', '/v2/auth/providers', { body: { client_secret: `${MARKER}-cs-missing-rest` } }));
    }
    // Code-host integration credentials, likewise.
    for (const settings of [
      { github: { app_id: 'one', private_key: { pem: `${MARKER}-private-key` }, installation_id: 1, webhook_secret: [`${MARKER}-webhook`] } },
      { github: { app_id: 1, private_key: 'x'.repeat(20_000) + MARKER, installation_id: 1 } },
      { git: { repositories: 'one', password: { value: `${MARKER}-password` }, ssh_private_key: [`${MARKER}-ssh`] } },
    ]) {
      answers.push(await api('POST', '/v1/integrations/codehost', { body: { provider: 'github', name: 'leaky', ...settings } }));
      answers.push(await api('POST', '/v1/integrations/codehost', { body: { provider: 'git', ...settings } }));
    }
    for (const answer of answers) {
      assert.ok(answer.status === 422 || answer.status === 400 || answer.status === 404, `${answer.status}: ${answer.text.slice(0, 200)}`);
      assert.ok(!answer.text.includes(MARKER), `an error echoed a secret: ${answer.text.slice(0, 400)}`);
    }
  });

  test('non-finite numbers (1e999 parses to Infinity) are refused anywhere in a body', async () => {
    const cases: [string, string[]][] = [
      ['{"cpu": 1e999}', ['cpu']],
      ['{"memory_mb": -1e999}', ['memory_mb']],
      ['{"volumes": [{"size": 1e999}]}', ['volumes', 0, 'size'] as never],
      ['{"executor_future_field": 1e999}', ['executor_future_field']],
    ];
    for (const [spec, loc] of cases) {
      const body = JSON.stringify(imageDeployment()).replace('"source_config":null', `"source_config":{"resource_spec":${spec}}`);
      const res = await api('POST', '/v2/deployments', { rawBody: body });
      assert.equal(res.status, 422, `${spec}: ${res.text}`);
      assert.equal(res.body.detail[0].type, 'finite_number');
      assert.deepEqual(res.body.detail[0].loc, ['body', 'source_config', 'resource_spec', ...loc]);
    }
    const stored = await ctx().server.berth.db.selectFrom('resource_specs').select('spec').execute();
    assert.ok(
      stored.every((row) => !row.spec.includes('null')),
      'no limit was stored as null',
    );
  });

  test('HEAD of an event stream answers its headers and no body', { timeout: deadline(10_000) }, async () => {
    const created = await api('POST', '/v2/deployments', { body: imageDeployment() });
    const res = await fetch(`${ctx().server.url}/v2/deployments/${created.body.id}/events`, {
      method: 'HEAD',
      headers: { 'x-api-key': ctx().server.adminKey },
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(await res.text(), '');
    const absent = await fetch(`${ctx().server.url}/v2/deployments/${randomUUID()}/events`, {
      method: 'HEAD',
      headers: { 'x-api-key': ctx().server.adminKey },
    });
    assert.equal(absent.status, 404);
  });

  test('a listener PATCH that drops a namespace deployments use is refused with 409, as DELETE is', async () => {
    const workspace = await api('POST', '/v1/workspaces', { body: { name: `listeners-${randomUUID()}` } });
    const tenant = workspace.body.id as string;
    const listener = await api('POST', '/v2/listeners', {
      tenant,
      body: { compute_type: 'k8s', compute_id: 'cluster', compute_config: { k8s_namespaces: ['used', 'spare', 'other'] } },
    });
    assert.equal(listener.status, 201);
    const placed = await api('POST', '/v2/deployments', {
      tenant,
      body: imageDeployment({ source_config: { listener_id: listener.body.id, listener_config: { k8s_namespace: 'used' } } }),
    });
    assert.equal(placed.status, 201, placed.text);
    const path = `/v2/listeners/${listener.body.id}`;
    const refused = await api('PATCH', path, { tenant, body: { compute_config: { k8s_namespaces: ['spare'] } } });
    assert.equal(refused.status, 409, refused.text);
    assert.match(refused.body.detail, /namespace 'used'/);
    assert.deepEqual((await api('GET', path, { tenant })).body.compute_config.k8s_namespaces, ['used', 'spare', 'other']);
    const dropped = await api('PATCH', path, { tenant, body: { compute_config: { k8s_namespaces: ['used', 'other'] } } });
    assert.equal(dropped.status, 200, 'an unused namespace may go');
    assert.deepEqual(dropped.body.compute_config.k8s_namespaces, ['used', 'other']);
    assert.equal((await api('DELETE', path, { tenant })).status, 409);
  });

  test('text that is not well-formed UTF-16 (a lone surrogate) is refused, not altered on storage', async () => {
    const created = await api('POST', '/v2/deployments', { body: imageDeployment() });
    const bodies: [string, string, string][] = [
      ['POST', '/v1/workspaces', '{"name": "ws-\\ud800"}'],
      ['PATCH', `/v2/deployments/${created.body.id}`, '{"secrets": [{"name": "TOKEN", "value": "abc\\udc00def"}]}'],
      ['PATCH', `/v2/deployments/${created.body.id}`, '{"display_name": "x\\ud83d"}'],
      ['POST', '/v2/deployments', JSON.stringify(imageDeployment()).replace('"secrets":[]', '"secrets":[],"image_version":"v\\ud800"')],
      ['PATCH', `/v2/deployments/${created.body.id}`, '{"source_config": {"resource_spec": {"labels": {"\\udfff": "x"}}}}'],
    ];
    for (const [method, path, rawBody] of bodies) {
      const res = await api(method, path, { rawBody });
      assert.equal(res.status, 422, `${method} ${path} ${rawBody}: ${res.text}`);
      assert.equal(res.body.detail[0].type, 'string_unicode');
    }
    const after = await api('GET', `/v2/deployments/${created.body.id}`);
    assert.deepEqual(after.body.secrets, []);
    assert.equal(after.body.display_name, null);
    // A well-formed pair (an emoji) is text like any other.
    const emoji = await api('PATCH', `/v2/deployments/${created.body.id}`, { rawBody: '{"display_name": "crab \\ud83e\\udd80"}' });
    assert.equal(emoji.status, 200);
    assert.equal(emoji.body.display_name, 'crab 🦀');
  });

  test('workspace names are normalised, refuse control and bidi characters, and are unique without regard to case', async () => {
    const base = `Stage-${randomUUID().slice(0, 6)}`;
    const created = await api('POST', '/v1/workspaces', { body: { name: `  ${base}  ` } });
    assert.equal(created.status, 201);
    assert.equal(created.body.name, base);
    for (const variant of [base.toLowerCase(), base.toUpperCase(), ` ${base}`]) {
      const again = await api('POST', '/v1/workspaces', { body: { name: variant } });
      assert.equal(again.status, 409, `${variant}: ${again.text}`);
    }
    // Case in any script, and composed or decomposed accents, are one name.
    assert.equal((await api('POST', '/v1/workspaces', { body: { name: `Équipe ${base}` } })).status, 201);
    assert.equal((await api('POST', '/v1/workspaces', { body: { name: `e\u0301QUIPE ${base}` } })).status, 409);
    const nfd = await api('POST', '/v1/workspaces', { body: { name: `Cafe\u0301 ${base}` } });
    assert.equal(nfd.body.name, `Café ${base}`, 'stored in composed (NFC) form');
    for (const bad of [`evil\u202egpj.exe`, 'bell\u0007', 'line\nbreak', 'rtl\u200fmark', 'iso\u2066late', '   ']) {
      const res = await api('POST', '/v1/workspaces', { body: { name: bad } });
      assert.equal(res.status, 422, `${JSON.stringify(bad)}: ${res.text}`);
      assert.deepEqual(res.body.detail[0].loc, ['body', 'name']);
    }
  });

  test('query values are read as FastAPI reads them: strict numbers, pydantic booleans, real dates', async () => {
    const created = await api('POST', '/v2/deployments', { body: imageDeployment() });
    const logs = `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}/logs?type=deploy`;
    for (const [query, loc, type] of [
      ['/v2/deployments?offset=0x10', 'offset', 'int_parsing'],
      ['/v2/deployments?limit=1e1', 'limit', 'int_parsing'],
      ['/v2/deployments?offset=1%202', 'offset', 'int_parsing'],
      ['/v2/deployments?offset=Infinity', 'offset', 'int_parsing'],
      ['/v2/deployments?limit=', 'limit', 'int_parsing'],
      ['/v2/deployments?remote_reconciled=tru', 'remote_reconciled', 'bool_parsing'],
      ['/v2/deployments?remote_reconciled=%20true', 'remote_reconciled', 'bool_parsing'],
      ['/v2/listeners?offset=0b11', 'offset', 'int_parsing'],
      [`/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}?wait_for_terminal=0x1`, 'wait_for_terminal', 'float_parsing'],
      [`/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}?wait_for_terminal=1e400`, 'wait_for_terminal', 'finite_number'],
      ['/v2/deployments?offset=1e400', 'offset', 'int_parsing'],
      [`/v2/deployments?offset=${'9'.repeat(400)}`, 'offset', 'finite_number'],
      [`${logs}&start_time=2024-02-30`, 'start_time', 'datetime_parsing'],
      [`${logs}&end_time=2024-01-01T24:00:00Z`, 'end_time', 'datetime_parsing'],
    ] as const) {
      const res = await api('GET', query);
      assert.equal(res.status, 422, `${query}: ${res.text}`);
      assert.deepEqual(res.body.detail[0].loc, ['query', loc], query);
      assert.equal(res.body.detail[0].type, type, query);
    }
    // What pydantic accepts: whitespace around integers, leading zeros, `_` separators, a `.0` fraction.
    // (In an empty workspace the answer's offset is the offset asked for.)
    const empty = await api('POST', '/v1/workspaces', { body: { name: `empty-${randomUUID()}` } });
    for (const [query, offset] of [
      ['offset=%20%2010', 10],
      ['offset=007', 7],
      ['offset=1_0', 10],
      ['offset=3.0', 3],
      ['offset=%2B4', 4],
    ] as const) {
      const res = await api('GET', `/v2/deployments?${query}`, { tenant: empty.body.id });
      assert.equal(res.status, 200, `${query}: ${res.text}`);
      assert.equal(res.body.offset, offset, query);
    }
    for (const spelling of ['1', '0', 'true', 'FALSE', 'yes', 'No', 'on', 'OFF', 't', 'F', 'y', 'n']) {
      assert.equal((await api('GET', `/v2/deployments?remote_reconciled=${spelling}`)).status, 200, spelling);
    }
    const reconciled = await api('GET', '/v2/deployments?remote_reconciled=0&limit=100');
    assert.ok(
      reconciled.body.resources.some((d: { id: string }) => d.id === created.body.id),
      'remote_reconciled=0 is false',
    );
    assert.equal((await api('GET', '/v2/deployments?remote_reconciled=1&limit=100')).body.resources.length, 0, 'remote_reconciled=1 is true');
    assert.equal((await api('GET', `${logs}&start_time=2024-02-29T10:00:00%2B02:00`)).status, 200);
    assert.equal((await api('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}?wait_for_terminal=1e-2`)).status, 200);
  });

  test('every route, the health check, the OpenAPI document and the reference included, is served under /api-host', async () => {
    const health = await client(ctx().server.url)('GET', '/api-host/ok');
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { ok: true });
    const doc = await client(ctx().server.url)('GET', '/api-host/openapi.json');
    assert.equal(doc.status, 200);
    assert.equal(doc.body.openapi, '3.1.0');
    assert.equal(doc.body.paths['/api-host/ok'], undefined, 'the prefixed copies stay out of the document');
    assert.equal((await client(ctx().server.url)('GET', '/api-host/docs')).status, 200);
  });

  test('a deployment being deleted answers 409 alike to a PATCH, a new revision and a redeploy', async () => {
    const created = await api('POST', '/v2/deployments', { body: imageDeployment() });
    assert.equal((await api('DELETE', `/v2/deployments/${created.body.id}`)).status, 204);
    const id = created.body.id as string;
    const answers = [
      await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { image_uri: 'localhost/berth-test-agent:v2' } } }),
      await api('POST', `/v2/deployments/${id}/revisions`, { body: {} }),
      await api('POST', `/v2/deployments/${id}/revisions/${created.body.latest_revision_id}/redeploy`),
    ];
    assert.deepEqual(
      answers.map((res) => [res.status, res.body.detail]),
      Array(3).fill([409, `Deployment ID ${id} is being deleted and cannot be changed.`]),
    );
  });
});
