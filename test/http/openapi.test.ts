import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { STATUS_BY_CODE } from '../../src/contract/errors.js';
import { ERROR_CODES, type ErrorCode } from '../../src/domain/errors.js';
import { undeclaredAnswer } from '../support/declared-codes.js';
import { client } from '../support/http.js';
import { resolved } from '../support/openapi.js';
import { describeOnEachDatabase, otherTenants } from '../support/suite.js';

type Parameter = { name: string; in: string; required?: boolean; schema?: { enum?: string[] } };
type Operation = {
  operationId?: string;
  security?: unknown[];
  tags?: string[];
  parameters?: Parameter[];
  responses: Record<string, { 'x-error-codes'?: ErrorCode[]; content?: any }>;
  requestBody?: unknown;
};
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

function operations(doc: any): { path: string; method: string; operation: Operation }[] {
  return Object.entries(doc.paths as Record<string, Record<string, Operation>>).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ path, method, operation: item[method] as Operation })),
  );
}

const codesOf = (operation: Operation, status: number) => operation.responses[String(status)]?.['x-error-codes'] ?? [];

describeOnEachDatabase('the OpenAPI document', (ctx) => {
  test('is a valid OpenAPI 3.1 document, every operation has a unique operationId, and shared schemas are referenced', async () => {
    const doc = (await ctx().anonymous('GET', '/openapi.json')).body;
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1)?.slice(0, 2000));

    const ids = operations(doc).map(({ path, method, operation }) => operation.operationId ?? `${method} ${path} has none`);
    assert.ok(ids.length > 30, `only ${ids.length} operations`);
    assert.deepEqual(
      ids.filter((id) => id.includes(' has none')),
      [],
    );
    assert.equal(new Set(ids).size, ids.length, 'operationIds repeat');
    assert.ok(ids.includes('createDeployment') && ids.includes('listRevisions') && ids.includes('getListener'));

    for (const name of ['Deployment', 'Revision', 'Listener', 'OAuthProvider', 'Integration', 'Error', 'ErrorCode', 'HTTPValidationError', 'ResourceSpec']) {
      assert.ok(doc.components.schemas[name], `components.schemas.${name} is missing`);
    }
    const get = doc.paths['/v2/deployments/{deployment_id}'].get;
    assert.deepEqual(get.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/Deployment' });
    // Every reference resolves.
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of new Set(refs)) resolved(doc, { $ref: ref.slice(8, -1) });
    assert.deepEqual(resolved(doc, doc.components.schemas.Error.properties.code).enum, [...ERROR_CODES]);
  });

  test('each error answer lists its codes, and each code is documented under its own status', async () => {
    const doc = (await ctx().anonymous('GET', '/openapi.json')).body;
    for (const { path, method, operation } of operations(doc)) {
      const where = `${method.toUpperCase()} ${path}`;
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400 || status === '422') continue;
        const codes = response['x-error-codes'];
        assert.ok(codes && codes.length > 0, `${where} ${status} names no codes`);
        for (const code of codes) assert.equal(STATUS_BY_CODE[code], Number(status), `${where}: ${code} is listed under ${status}`);
      }
      if (operation.parameters?.length || operation.requestBody) assert.ok(operation.responses['422'], `${where} does not document 422`);
      // The health check is never rate limited.
      if (operation.operationId !== 'checkHealth') assert.deepEqual(codesOf(operation, 429), ['rate_limited'], where);
      if (operation.security?.length === 0) continue;
      assert.deepEqual(codesOf(operation, 401), ['api_key_missing', 'api_key_invalid', 'session_invalid'], where);
    }
  });

  test('the answers carry the documented code: an unknown deployment, a missing key, a bad body', async () => {
    const { api, anonymous } = ctx();
    const doc = (await anonymous('GET', '/openapi.json')).body;
    const get = doc.paths['/v2/deployments/{deployment_id}'].get as Operation;
    const missing = await api('GET', '/v2/deployments/00000000-0000-4000-8000-000000000000');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'deployment_not_found');
    assert.ok(codesOf(get, 404).includes(missing.body.code));
    const anonymousCall = await anonymous('GET', '/v2/deployments');
    assert.deepEqual([anonymousCall.status, anonymousCall.body.code], [401, 'api_key_missing']);
    const invalid = await api('POST', '/v2/deployments', { body: { name: 1 } });
    assert.equal(invalid.status, 422);
    assert.equal(invalid.body.code, 'validation_error');
    assert.ok(Array.isArray(invalid.body.detail) && invalid.body.detail[0].loc[0] === 'body');
    const route = await anonymous('GET', '/v9/nowhere');
    assert.deepEqual([route.status, route.body.code], [404, 'route_not_found']);
  });

  test("an error code a route does not declare breaks the tests' client, and one it declares passes", async () => {
    const { api } = ctx();
    const unknown = '/v2/deployments/00000000-0000-4000-8000-000000000000';
    assert.equal(await undeclaredAnswer('GET', unknown, 404, { code: 'deployment_not_found' }), null);
    assert.equal(await undeclaredAnswer('GET', `/api-host${unknown}?x=1`, 404, { code: 'deployment_not_found' }), null);
    assert.match(
      (await undeclaredAnswer('GET', unknown, 404, { code: 'listener_not_found' })) ?? '',
      /GET \/v2\/deployments\/\S+ answered 404 listener_not_found/,
    );
    assert.match((await undeclaredAnswer('GET', unknown, 409, { code: 'deployment_name_taken' })) ?? '', /answered 409/);
    assert.equal(await undeclaredAnswer('POST', '/v2/deployments', 422, { code: 'validation_error' }), null);
    // The request's framing is judged before any route, and no route answers an unknown path.
    assert.equal(await undeclaredAnswer('POST', '/v2/deployments', 400, { code: 'malformed_request' }), null);
    assert.equal(await undeclaredAnswer('GET', '/v9/nowhere', 404, { code: 'route_not_found' }), null);
    // Every answer of the suite's client goes through the check.
    assert.equal((await api('GET', unknown)).body.code, 'deployment_not_found');
  });

  /**
   * Generated from the document: every authenticated operation, called with no key, a wrong
   * key, a key of another workspace and a key of another organization, on resources of the
   * default workspace. None of them may see or change those resources.
   */
  test('every authenticated route refuses no key, a wrong key, keys of other workspaces and organizations, and a workspace it cannot name', async () => {
    const { api, anonymous, server } = ctx();
    const deployment = (
      await api('POST', '/v2/deployments', {
        body: {
          name: `sec-${Date.now()}`,
          source: 'external_docker',
          source_config: {},
          source_revision_config: { image_uri: 'registry.example.com/agent:v1' },
          secrets: [],
        },
      })
    ).body;
    const listener = (
      await api('POST', '/v2/listeners', { body: { compute_type: 'k8s', compute_id: `sec-${Date.now()}`, compute_config: { k8s_namespaces: ['ns'] } } })
    ).body;
    const integration = (
      await api('POST', '/v1/integrations/codehost', { body: { provider: 'git', name: 'sec', git: { repositories: ['/srv/git/agent.git'] } } })
    ).body;
    const providerId = `sec${Date.now()}`;
    const provider = await api('POST', '/v2/auth/providers', {
      body: { provider_id: providerId, name: 'p', client_id: 'c', client_secret: 's', auth_url: 'https://example.com/a', token_url: 'https://example.com/t' },
    });
    const memberKey = (await api('POST', '/v1/api-keys', { body: { name: 'sec-member' } })).body;
    // A public address passes the outbound check without DNS; no event it wants is sent in this suite.
    const subscription = (await api('POST', '/v1/webhook-subscriptions', { body: { url: 'http://93.184.215.14/sec', events: ['listener.offline'] } })).body;
    for (const created of [deployment, listener, integration, provider.body, memberKey, subscription]) assert.ok(created?.id, JSON.stringify(created));
    const ids: Record<string, string> = {
      deployment_id: deployment.id,
      revision_id: deployment.latest_revision_id,
      listener_id: listener.id,
      workspace_id: server.workspaceId,
      integration_id: integration.id,
      provider_id: providerId,
      key_id: memberKey.id,
      subscription_id: subscription.id,
      // No delivery is needed: another tenant's key gets 404 for the subscription before the delivery is looked up.
      delivery_id: '00000000-0000-4000-8000-000000000000',
      // No build job exists here; the runner routes refuse these callers before looking (test/runners/ tries a runner of another organization on a real job).
      job_id: '00000000-0000-4000-8000-000000000000',
    };
    const ours = Object.values(ids);
    const absentIds: Record<string, string> = Object.fromEntries(
      Object.keys(ids).map((name, n) => [name, name === 'provider_id' ? `absent${Date.now()}` : `00000000-0000-4000-8000-${String(n + 1).padStart(12, '0')}`]),
    );
    const other = await otherTenants(ctx());
    const organizationKey = (await api('POST', '/v1/api-keys', { body: { name: 'sec-organization', workspace_id: null, role: 'admin' } })).body;
    assert.ok(organizationKey?.key, JSON.stringify(organizationKey));
    const organizationWideKey = client(server.url, { key: organizationKey.key });
    const callers = {
      'no key': anonymous,
      'a wrong key': client(server.url, { key: 'berth_not-a-key' }),
      'another workspace': client(server.url, { key: other.otherWorkspaceKey }),
      'another organization': client(server.url, { key: other.otherOrganizationKey }),
      // A listener key reaches the listener protocol and nothing else.
      'a listener key': client(server.url, { key: listener.listener_key }),
    };

    const doc = (await anonymous('GET', '/openapi.json')).body;
    const authenticated = operations(doc).filter(({ operation }) => operation.security?.length !== 0);
    assert.ok(authenticated.length > 25);
    for (const { path, method, operation } of authenticated) {
      const required = (operation.parameters ?? []).filter((parameter) => parameter.in === 'query' && parameter.required);
      const query = new URLSearchParams(required.map((parameter) => [parameter.name, parameter.schema?.enum?.[0] ?? 'x']));
      const url =
        path.replace(/\{(\w+)\}/g, (_, name: string) => {
          assert.ok(ids[name], `no fixture for {${name}} in ${path}`);
          return ids[name] as string;
        }) + (required.length > 0 ? `?${query}` : '');
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
      // The same route for resources that do not exist: what a stranger to ours must get, word for word.
      const absent = Object.fromEntries(names.map((name) => [ids[name] as string, absentIds[name] as string]));
      const absentUrl = names.reduce((target, name) => target.replaceAll(ids[name] as string, absentIds[name] as string), url);
      let nowhere: { status: number; text: string } | undefined;
      const forbidden = codesOf(operation, 403);
      const adminOnly = forbidden.includes('admin_key_required');
      const organizationWide = !forbidden.includes('workspace_required');
      const where = `${method.toUpperCase()} ${path}`;
      const body = operation.requestBody ? {} : undefined;
      for (const [who, caller] of Object.entries(callers)) {
        const res = await caller(method.toUpperCase(), url, { body });
        const label = `${who}: ${where} → ${res.status} ${res.text.slice(0, 200)}`;
        if (who === 'no key' || who === 'a wrong key') {
          assert.deepEqual([res.status, res.body?.code], [401, who === 'no key' ? 'api_key_missing' : 'api_key_invalid'], label);
          continue;
        }
        assert.ok(res.status < 500, label);
        if (who === 'a listener key') {
          if (!operation.tags?.includes('listener-protocol')) assert.deepEqual([res.status, res.body?.code], [403, 'listener_key_forbidden'], label);
          continue;
        }
        if (operation.tags?.includes('build-runners')) {
          assert.deepEqual([res.status, res.body?.code], [403, 'role_forbids'], label);
          continue;
        }
        if (who === 'another workspace' && adminOnly) {
          assert.deepEqual([res.status, res.body?.code], [403, 'admin_key_required'], label);
          continue;
        }
        // The organization's OAuth providers are shared by its workspaces.
        if (who === 'another workspace' && organizationWide) continue;
        if (names.length > 0) {
          assert.equal(res.status, 404, label);
          assert.ok(codesOf(operation, 404).includes(res.body.code), label);
          nowhere ??= await api(method.toUpperCase(), absentUrl, { body });
          const expected = Object.entries(absent).reduce((text, [real, fake]) => text.replaceAll(fake, real), nowhere.text);
          assert.deepEqual([res.status, res.text], [nowhere.status, expected], `${label}: not what a resource that does not exist answers`);
        } else {
          for (const id of ours) assert.ok(!res.text.includes(id), `${label}: shows ${id}`);
        }
      }
      // A key of the whole organization must name a workspace, and one of its own organization.
      if (!organizationWide) {
        for (const [tenant, code] of [
          [undefined, 'workspace_required'],
          [other.otherOrganizationWorkspaceId, 'workspace_forbidden'],
        ] as const) {
          const res = await organizationWideKey(method.toUpperCase(), url, { body, tenant });
          assert.deepEqual(
            [res.status, res.body?.code],
            [403, code],
            `an organization key naming ${tenant ?? 'no workspace'}: ${where} → ${res.text.slice(0, 200)}`,
          );
        }
      }
    }
    // Nothing of ours changed hands or went away.
    assert.equal((await api('GET', `/v2/deployments/${deployment.id}`)).body.status !== 'AWAITING_DELETE', true);
    assert.equal((await api('GET', `/v2/listeners/${listener.id}`)).status, 200);
    assert.equal((await api('GET', `/v2/auth/providers/${providerId}`)).status, 200);
    assert.ok((await api('GET', '/v1/api-keys')).body.some((key: { id: string }) => key.id === memberKey.id));
  });
});
