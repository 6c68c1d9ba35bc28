import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { type Client, client } from '../support/http.js';
import { otherTenants } from '../support/suite.js';

import {
  ISO,
  UUID,
  DEFAULT_RESOURCE_SPEC,
  secretValue,
  uniqueName,
  dockerBody,
  createDeployment,
  revisionsOf,
  patch,
  freshWorkspace,
  assertIssue,
  assertSourceConfigError,
  describeDeployments,
} from '../support/deployments.js';

/** Creating deployments: each source's body as clients send it, defaults, validation, names and secrets. */
describeDeployments('creating deployments', (ctx, githubBody, integration) => {
  test('create (github, GHA body) answers 201 with the deployment and its first revision', async () => {
    const { api, server } = ctx();
    const body = githubBody();
    const res = await api('POST', '/v2/deployments', { body });
    assert.equal(res.status, 201, res.text);
    const d = res.body;
    assert.match(d.id, UUID);
    assert.equal(d.tenant_id, server.workspaceId);
    assert.equal(d.name, body.name);
    assert.equal(d.source, 'github', 'the spelling given is echoed');
    assert.match(d.latest_revision_id, UUID);
    assert.equal(d.active_revision_id, null);
    assert.equal(d.status, 'AWAITING_DATABASE');
    assert.equal(d.source_config.integration_id, body.source_config.integration_id);
    assert.equal(d.source_config.repo_url, body.source_config.repo_url);
    assert.equal(d.source_config.deployment_type, 'dev');
    assert.equal(d.source_config.build_on_push, false);
    assert.equal(d.source_config.custom_url, null);
    assert.deepEqual(d.source_config.resource_spec, DEFAULT_RESOURCE_SPEC, 'resource_spec: null gets the defaults');
    assert.equal(d.source_revision_config.repo_ref, 'main');
    assert.equal(d.source_revision_config.graph_config_path, 'langgraph.json');
    assert.equal(d.source_revision_config.langgraph_config_path, 'langgraph.json');
    assert.equal(d.source_revision_config.image_uri, null);
    assert.equal(d.source_revision_config.repo_commit_sha, null);
    assert.deepEqual(d.secrets, body.secrets);
    assert.match(d.created_at, ISO);
    assert.match(d.updated_at, ISO);

    const revisions = await revisionsOf(api, d.id);
    assert.equal(revisions.length, 1);
    assert.equal(revisions[0]!.id, d.latest_revision_id);
  });

  test('create (codehost) keeps the codehost spelling; graph_config_path defaults to langgraph.json', async () => {
    const { api } = ctx();
    const d = await createDeployment(
      api,
      githubBody({
        source: 'codehost',
        source_config: { integration_id: integration().integrationId, repo_url: integration().repoUrl },
        source_revision_config: { repo_ref: 'release' },
      }),
    );
    assert.equal(d.source, 'codehost');
    assert.equal(d.source_config.deployment_type, 'prod', 'deployment_type defaults to prod');
    assert.equal(d.source_revision_config.repo_ref, 'release');
    assert.equal(d.source_revision_config.graph_config_path, 'langgraph.json');
    assert.equal(d.source_revision_config.langgraph_config_path, 'langgraph.json');
  });

  test('create: langgraph_config_path and graph_config_path are one field, answered under both names', async () => {
    const { api } = ctx();
    const viaAlias = await createDeployment(api, githubBody({ source_revision_config: { repo_ref: 'main', langgraph_config_path: 'agents/langgraph.json' } }));
    assert.equal(viaAlias.source_revision_config.graph_config_path, 'agents/langgraph.json');
    assert.equal(viaAlias.source_revision_config.langgraph_config_path, 'agents/langgraph.json');
    const viaCanonical = await createDeployment(
      api,
      githubBody({ source: 'codehost', source_revision_config: { repo_ref: 'main', graph_config_path: 'x/graph.json' } }),
    );
    assert.equal(viaCanonical.source_revision_config.graph_config_path, 'x/graph.json');
    assert.equal(viaCanonical.source_revision_config.langgraph_config_path, 'x/graph.json');
  });

  test('create (external_docker): resource_spec {} and null get the defaults; secrets are echoed', async () => {
    const { api } = ctx();
    const body = dockerBody({
      secrets: [
        { name: 'A', value: secretValue() },
        { name: 'B', value: secretValue() },
      ],
    });
    const d = await createDeployment(api, body);
    assert.equal(d.source, 'external_docker');
    assert.equal(d.source_revision_config.image_uri, 'registry.example.com/agent:v1');
    assert.equal(d.source_revision_config.graph_config_path, null);
    assert.equal(d.source_revision_config.langgraph_config_path, null);
    assert.deepEqual(d.source_config.resource_spec, DEFAULT_RESOURCE_SPEC);
    assert.equal(d.source_config.deployment_type, 'prod');
    assert.deepEqual(d.secrets, body.secrets);

    const withNull = await createDeployment(api, dockerBody({ source_config: { resource_spec: null } }));
    assert.deepEqual(withNull.source_config.resource_spec, DEFAULT_RESOURCE_SPEC);
    const noSourceConfig = await createDeployment(api, dockerBody({ source_config: null }));
    assert.deepEqual(noSourceConfig.source_config.resource_spec, DEFAULT_RESOURCE_SPEC);
    const partial = await createDeployment(api, dockerBody({ source_config: { resource_spec: { max_scale: 3, queue_min_scale: 2 } } }));
    assert.deepEqual(partial.source_config.resource_spec, { ...DEFAULT_RESOURCE_SPEC, max_scale: 3, queue_min_scale: 2 });
  });

  test('create: explicit nulls everywhere are accepted (GHA self-hosted body) and unknown extras are ignored', async () => {
    const { api } = ctx();
    const res = await api('POST', '/v2/deployments', {
      body: {
        name: uniqueName('gha'),
        source: 'external_docker',
        source_config: {
          integration_id: null,
          repo_url: null,
          deployment_type: 'dev_free',
          build_on_push: null,
          custom_url: null,
          resource_spec: { min_scale: 1, max_scale: 2, cpu: 2, memory_mb: 4096, queue_min_scale: null, service_account_name: null },
          listener_id: null,
          listener_config: null,
          install_command: null,
          build_command: null,
        },
        source_revision_config: { repo_ref: null, langgraph_config_path: null, graph_config_path: null, image_uri: 'docker.io/acme/agent:1.0' },
        secrets: [],
        image_version: null,
        env_vars: [],
        route_through_gateway: true,
        secret_references: [{ name: 'DB_PASSWORD', secret_name: 'db', secret_key: 'password' }],
      },
    });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.source_config.deployment_type, 'dev_free');
    assert.deepEqual(res.body.source_config.resource_spec, { min_scale: 1, max_scale: 2, cpu: 2, memory_mb: 4096 });
    assert.equal(res.body.source_config.listener_id, null);
    assert.equal(res.body.source_config.listener_config, null);
    assert.deepEqual(res.body.secrets, []);
    assert.equal(res.body.env_vars, undefined);
    assert.match(res.body.latest_revision_id, UUID);
  });

  test('create (code host) without integration_id or repo_url is a 400 source configuration error', async () => {
    const { api } = ctx();
    const base = githubBody();
    const noIntegration = await api('POST', '/v2/deployments', {
      body: { ...base, source_config: { ...base.source_config, integration_id: null } },
    });
    assertSourceConfigError(noIntegration, /integration_id/);
    const noRepo = await api('POST', '/v2/deployments', {
      body: { ...base, source: 'codehost', source_config: { integration_id: randomUUID() } },
    });
    assertSourceConfigError(noRepo, /repo_url/);

    const notUuid = await api('POST', '/v2/deployments', {
      body: { ...base, source_config: { ...base.source_config, integration_id: 'not-a-uuid' } },
    });
    assertIssue(notUuid, ['body', 'source_config', 'integration_id'], 'uuid_parsing');
    // Nothing was created by the failed attempts.
    assert.equal((await api('GET', `/v2/deployments?name=${base.name}`)).body.resources.length, 0);
  });

  test("create (code host): repo_ref defaults to the default branch; the integration and repository must be the workspace's", async () => {
    const { api } = ctx();
    const base = githubBody();
    const noRef = await createDeployment(api, { ...base, source_revision_config: { repo_ref: null, langgraph_config_path: 'langgraph.json' } });
    assert.equal(noRef.source_revision_config.repo_ref, integration().defaultBranch);
    const emptyRevisionConfig = await createDeployment(api, { ...githubBody(), source_revision_config: {} });
    assert.equal(emptyRevisionConfig.source_revision_config.repo_ref, integration().defaultBranch);

    const unknown = randomUUID();
    const noSuchIntegration = await api('POST', '/v2/deployments', { body: githubBody({ source_config: { ...base.source_config, integration_id: unknown } }) });
    assert.equal(noSuchIntegration.status, 404, noSuchIntegration.text);
    assert.deepEqual(noSuchIntegration.body, { detail: `Integration ID ${unknown} not found.`, code: 'integration_not_found' });

    const otherRepo = await api('POST', '/v2/deployments', {
      body: githubBody({ source_config: { ...base.source_config, repo_url: 'https://user:hunter2@git.example/acme/other.git' } }),
    });
    assert.equal(otherRepo.status, 400, otherRepo.text);
    assert.match(otherRepo.body.detail, /repository 'https:\/\/git\.example\/acme\/other\.git' is not one of integration/);
    assert.ok(!otherRepo.text.includes('hunter2'), 'credentials in a repository URL are never echoed');

    // Another workspace's integration is as absent as an unknown one.
    const { otherWorkspaceKey } = await otherTenants(ctx());
    const other = client(ctx().server.url, { key: otherWorkspaceKey });
    const foreign = await other('POST', '/v2/deployments', { body: githubBody() });
    assert.equal(foreign.status, 404, foreign.text);
    assert.deepEqual(foreign.body, { detail: `Integration ID ${integration().integrationId} not found.`, code: 'integration_not_found' });
  });

  test('create (external_docker) without image_uri is a 400 source configuration error', async () => {
    const { api } = ctx();
    for (const source_revision_config of [{}, { image_uri: null }, null]) {
      const res = await api('POST', '/v2/deployments', { body: dockerBody({ source_revision_config }) });
      assertSourceConfigError(res, /image_uri/);
    }
  });

  test('create without secrets is 422 at body.secrets (type missing)', async () => {
    const { api } = ctx();
    const { secrets: _omitted, ...body } = dockerBody();
    const res = await api('POST', '/v2/deployments', { body });
    assertIssue(res, ['body', 'secrets'], 'missing');
  });

  test('create with wrong types is 422 at the field', async () => {
    const { api } = ctx();
    assertIssue(await api('POST', '/v2/deployments', { body: dockerBody({ name: 5 }) }), ['body', 'name'], 'string_type');
    assertIssue(await api('POST', '/v2/deployments', { body: dockerBody({ secrets: 'x' }) }), ['body', 'secrets'], 'list_type');
    assertIssue(
      await api('POST', '/v2/deployments', { body: dockerBody({ source_config: { build_on_push: 'yes' } }) }),
      ['body', 'source_config', 'build_on_push'],
      'bool_type',
    );
    assertIssue(
      await api('POST', '/v2/deployments', { body: dockerBody({ source_config: { resource_spec: { cpu: 'two' } } }) }),
      ['body', 'source_config', 'resource_spec', 'cpu'],
      'float_type',
    );
    const malformed = await api('POST', '/v2/deployments', { rawBody: '{"name": ' });
    assertIssue(malformed, ['body', malformed.body.detail[0].loc[1]], 'json_invalid');
  });

  test('create with an invalid name (underscore, leading digit, empty) is 422 at body.name', async () => {
    const { api } = ctx();
    for (const name of ['my_app', '1app', '', '-app']) {
      const res = await api('POST', '/v2/deployments', { body: dockerBody({ name }) });
      assertIssue(res, ['body', 'name']);
    }
  });

  test('create with an unknown source is 422 at body.source', async () => {
    const { api } = ctx();
    const res = await api('POST', '/v2/deployments', { body: dockerBody({ source: 'gitlab' }) });
    assertIssue(res, ['body', 'source'], 'enum');
  });

  test('a duplicate name in the workspace is 409 "already exists"; another workspace may use it', async () => {
    const { api } = ctx();
    const body = dockerBody();
    await createDeployment(api, body);
    const again = await api('POST', '/v2/deployments', { body: { ...body, secrets: [] } });
    assert.equal(again.status, 409, again.text);
    assert.equal(typeof again.body.detail, 'string');
    assert.match(again.body.detail, /already exists/);
    assert.equal((await api('GET', `/v2/deployments?name=${body.name}`)).body.resources.length, 1);

    const other = await freshWorkspace(ctx());
    const elsewhere = await createDeployment(other.api, { ...body, secrets: [] });
    assert.equal(elsewhere.name, body.name);
    assert.equal(elsewhere.tenant_id, other.workspaceId);
  });

  test('duplicate and reserved secret names are 400 and the detail never shows the value', async () => {
    const { api } = ctx();
    const value = secretValue();
    const duplicate = await api('POST', '/v2/deployments', {
      body: dockerBody({
        secrets: [
          { name: 'TOKEN', value },
          { name: 'TOKEN', value: `${value}-2` },
        ],
      }),
    });
    assert.equal(duplicate.status, 400, duplicate.text);
    assert.equal(typeof duplicate.body.detail, 'string');
    assert.match(duplicate.body.detail, /TOKEN/);
    assert.ok(!duplicate.text.includes(value), duplicate.text);

    for (const name of ['LANGCHAIN_API_KEY', 'POSTGRES_URI', 'LANGSMITH_TENANT_ID']) {
      const reserved = await api('POST', '/v2/deployments', { body: dockerBody({ secrets: [{ name, value }] }) });
      assert.equal(reserved.status, 400, reserved.text);
      assert.equal(typeof reserved.body.detail, 'string');
      assert.match(reserved.body.detail, new RegExp(name));
      assert.ok(!reserved.text.includes(value), reserved.text);
    }
  });

  test('422 answers never echo a secret value either', async () => {
    const { api } = ctx();
    const value = secretValue();
    const created = await createDeployment(api);
    const attempts: [string, () => ReturnType<Client>][] = [
      // FastAPI-style `input` of a missing top-level field is the whole body.
      [
        'POST without name',
        () => {
          const { name: _n, ...body } = dockerBody({ secrets: [{ name: 'TOKEN', value }] });
          return api('POST', '/v2/deployments', { body });
        },
      ],
      // `input` of a secret entry without a name is the entry, value included.
      ['POST secret without name', () => api('POST', '/v2/deployments', { body: dockerBody({ secrets: [{ value }] }) })],
      ['POST secret with an invalid name', () => api('POST', '/v2/deployments', { body: dockerBody({ secrets: [{ name: 'not valid', value }] }) })],
      ['POST name: 5 with secrets', () => api('POST', '/v2/deployments', { body: dockerBody({ name: 5, secrets: [{ name: 'TOKEN', value }] }) })],
      // `input` of an over-long value is the value itself.
      [
        'POST secret value over 65536 characters',
        () => api('POST', '/v2/deployments', { body: dockerBody({ secrets: [{ name: 'BIG', value: value.padEnd(70000, 'x') }] }) }),
      ],
      // `input` of an over-long list is the whole list.
      [
        'POST 201 secrets',
        () => api('POST', '/v2/deployments', { body: dockerBody({ secrets: Array.from({ length: 201 }, (_, i) => ({ name: `S${i}`, value })) }) }),
      ],
      ['PATCH secret without name', () => patch(api, created.id, { secrets: [{ value }] })],
      ['PATCH display_name "" with secrets', () => patch(api, created.id, { display_name: '', secrets: [{ name: 'TOKEN', value }] })],
    ];
    const leaks: string[] = [];
    for (const [label, attempt] of attempts) {
      const res = await attempt();
      assert.equal(res.status, 422, `${label}: ${res.text.slice(0, 500)}`);
      if (res.text.includes(value)) leaks.push(`${label}: ${res.text.slice(0, 400)}`);
    }
    assert.deepEqual(leaks, [], 'these 422 answers echo the secret value');
  });
});
