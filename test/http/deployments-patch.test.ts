import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';

import {
  UUID,
  UNKNOWN_ID,
  DEFAULT_RESOURCE_SPEC,
  secretValue,
  type Body,
  dockerBody,
  createDeployment,
  revisionsOf,
  patch,
  assertIssue,
  describeDeployments,
} from '../support/deployments.js';

/** Changing deployments: which PATCHes make a revision and which change in place, what cannot change, concurrency. */
describeDeployments('changing deployments', (ctx, githubBody) => {
  test('PATCH image_uri makes a new revision, already named latest and listed first', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const res = await patch(api, created.id, { source_revision_config: { image_uri: 'registry.example.com/agent:v2' } });
    assert.equal(res.status, 200, res.text);
    assert.notEqual(res.body.latest_revision_id, created.latest_revision_id);
    assert.match(res.body.latest_revision_id, UUID);
    assert.equal(res.body.source_revision_config.image_uri, 'registry.example.com/agent:v2');
    assert.deepEqual(res.body.secrets, created.secrets, 'secrets carry over');
    assert.deepEqual(res.body.source_config.resource_spec, DEFAULT_RESOURCE_SPEC, 'resources carry over');

    const newest = await api('GET', `/v2/deployments/${created.id}/revisions?limit=1`);
    assert.equal(newest.status, 200);
    assert.equal(newest.body.resources.length, 1);
    assert.equal(newest.body.resources[0].id, res.body.latest_revision_id);
    assert.equal(newest.body.resources[0].source_revision_config.image_uri, 'registry.example.com/agent:v2');
    assert.deepEqual((await api('GET', `/v2/deployments/${created.id}`)).body, res.body);
  });

  test('PATCH of a code-host deployment (docs flow): repo_ref makes a revision, build_on_push changes in place', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const gh = await createDeployment(api, githubBody());
    const res = await patch(api, gh.id, {
      source_config: { build_on_push: true },
      source_revision_config: { repo_ref: 'release-2', langgraph_config_path: 'langgraph.json', image_uri: null },
    });
    assert.equal(res.status, 200, res.text);
    assert.notEqual(res.body.latest_revision_id, gh.latest_revision_id);
    assert.equal(res.body.source_config.build_on_push, true);
    assert.equal(res.body.source_revision_config.repo_ref, 'release-2');
    assert.equal(res.body.source_revision_config.langgraph_config_path, 'langgraph.json');
    assert.equal((await revisionsOf(api, gh.id)).length, 2);
    // The other deployment is untouched.
    assert.deepEqual((await api('GET', `/v2/deployments/${created.id}`)).body.latest_revision_id, created.latest_revision_id);
  });

  test('PATCH build_on_push / custom_url changes in place without a revision', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const res = await patch(api, created.id, { source_config: { build_on_push: true, custom_url: 'https://x' } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.latest_revision_id, created.latest_revision_id);
    assert.equal(res.body.source_config.build_on_push, true);
    assert.equal(res.body.source_config.custom_url, 'https://x');
    const got = await api('GET', `/v2/deployments/${created.id}`);
    assert.equal(got.body.source_config.build_on_push, true);
    assert.equal(got.body.source_config.custom_url, 'https://x');
    assert.equal((await revisionsOf(api, created.id)).length, 1);
  });

  test('PATCH display_name changes in place; an empty display_name is 422', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    assert.equal(created.display_name, null);
    const res = await patch(api, created.id, { display_name: 'x' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.display_name, 'x');
    assert.equal(res.body.latest_revision_id, created.latest_revision_id);
    assert.equal((await api('GET', `/v2/deployments/${created.id}`)).body.display_name, 'x');
    assertIssue(await patch(api, created.id, { display_name: '' }), ['body', 'display_name'], 'string_too_short');
    assert.equal((await revisionsOf(api, created.id)).length, 1);
  });

  test('PATCH secrets: [] and the same secrets make no revision; changed secrets do and replace them', async () => {
    const { api } = ctx();
    const secrets = [
      { name: 'A', value: secretValue() },
      { name: 'B', value: secretValue() },
    ];
    const created = await createDeployment(api, dockerBody({ secrets }));

    const empty = await patch(api, created.id, { secrets: [] });
    assert.equal(empty.status, 200, empty.text);
    assert.equal(empty.body.latest_revision_id, created.latest_revision_id);
    assert.deepEqual(empty.body.secrets, secrets, 'secrets: [] counts as omitted');

    const same = await patch(api, created.id, { secrets: [...secrets] });
    assert.equal(same.status, 200, same.text);
    assert.equal(same.body.latest_revision_id, created.latest_revision_id);
    const reordered = await patch(api, created.id, { secrets: [secrets[1], secrets[0]] });
    assert.equal(reordered.body.latest_revision_id, created.latest_revision_id, 'order does not matter');

    const changed = [{ name: 'A', value: secretValue() }];
    const res = await patch(api, created.id, { secrets: changed });
    assert.equal(res.status, 200, res.text);
    assert.notEqual(res.body.latest_revision_id, created.latest_revision_id);
    assert.deepEqual(res.body.secrets, changed);
    assert.deepEqual((await api('GET', `/v2/deployments/${created.id}`)).body.secrets, changed);
    assert.equal(res.body.source_revision_config.image_uri, created.source_revision_config.image_uri);
    assert.equal((await revisionsOf(api, created.id)).length, 2);

    const duplicate = await patch(api, created.id, {
      secrets: [
        { name: 'A', value: 'x' },
        { name: 'A', value: 'y' },
      ],
    });
    assert.equal(duplicate.status, 400, duplicate.text);
    const reserved = await patch(api, created.id, { secrets: [{ name: 'LANGCHAIN_API_KEY', value: 'x' }] });
    assert.equal(reserved.status, 400, reserved.text);
    assert.equal((await revisionsOf(api, created.id)).length, 2);
  });

  test('PATCH resource_spec equal to the current one (after defaults) makes no revision; a different one does', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    for (const resource_spec of [{}, { min_scale: 1 }, { ...DEFAULT_RESOURCE_SPEC }, { cpu: 1, memory_mb: 2048, labels: null }]) {
      const res = await patch(api, created.id, { source_config: { resource_spec } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.latest_revision_id, created.latest_revision_id, JSON.stringify(resource_spec));
    }
    const res = await patch(api, created.id, { source_config: { resource_spec: { max_scale: 4, cpu: 2 } } });
    assert.equal(res.status, 200, res.text);
    assert.notEqual(res.body.latest_revision_id, created.latest_revision_id);
    assert.deepEqual(res.body.source_config.resource_spec, { min_scale: 1, max_scale: 4, cpu: 2, memory_mb: 2048 });
    const [newest] = await revisionsOf(api, created.id);
    assert.deepEqual(newest!.resource_spec, { min_scale: 1, max_scale: 4, cpu: 2, memory_mb: 2048 });
    assert.equal(newest!.source_revision_config.image_uri, created.source_revision_config.image_uri);

    const inverted = await patch(api, created.id, { source_config: { resource_spec: { min_scale: 3, max_scale: 2 } } });
    assert.equal(inverted.status, 400, inverted.text);
  });

  test('PATCH cannot change name, source, integration_id, repo_url or deployment_type (400); resending them is fine', async () => {
    const { api } = ctx();
    const gh = await createDeployment(api, githubBody());
    const changes: Body[] = [
      { name: 'renamed' },
      { source: 'external_docker' },
      { revision_source: 'internal_docker' },
      { source_config: { integration_id: randomUUID() } },
      { source_config: { repo_url: 'https://github.com/acme/other' } },
      { source_config: { deployment_type: 'prod' } },
    ];
    for (const body of changes) {
      const res = await patch(api, gh.id, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(typeof res.body.detail, 'string');
    }
    const unchanged = await api('GET', `/v2/deployments/${gh.id}`);
    assert.deepEqual(unchanged.body.source_config, gh.source_config);
    assert.equal(unchanged.body.name, gh.name);

    const resend = await patch(api, gh.id, {
      name: gh.name,
      source: 'github',
      source_config: {
        integration_id: gh.source_config.integration_id,
        repo_url: gh.source_config.repo_url,
        deployment_type: 'dev',
        listener_id: null,
        listener_config: null,
      },
    });
    assert.equal(resend.status, 200, resend.text);
    assert.equal(resend.body.latest_revision_id, gh.latest_revision_id);
    assert.equal((await patch(api, gh.id, { source: 'codehost' })).status, 200, 'codehost is the same source as github');

    const docker = await createDeployment(api);
    assert.equal((await patch(api, docker.id, { source: 'github' })).status, 400);
    assert.equal((await patch(api, docker.id, { source: 'external_docker', name: docker.name })).status, 200);
    assert.equal((await patch(api, docker.id, { source_config: { deployment_type: 'dev' } })).status, 400);
  });

  test('PATCH with nulls everywhere leaves every value as it is', async () => {
    const { api } = ctx();
    const created = await createDeployment(api, dockerBody({ source_config: { build_on_push: true, custom_url: 'https://keep' } }));
    const res = await patch(api, created.id, {
      name: null,
      source: null,
      display_name: null,
      image_version: null,
      source_config: {
        integration_id: null,
        repo_url: null,
        deployment_type: null,
        build_on_push: null,
        custom_url: null,
        resource_spec: null,
        listener_id: null,
        listener_config: null,
        install_command: null,
        build_command: null,
      },
      source_revision_config: { repo_ref: null, graph_config_path: null, langgraph_config_path: null, image_uri: null },
      secrets: null,
      tracked_packages: null,
      revision_source: null,
    });
    assert.equal(res.status, 200, res.text);
    const { updated_at: _a, ...before } = created;
    const { updated_at: _b, ...after } = res.body;
    assert.deepEqual(after, before);
    const bare = await patch(api, created.id, { source_config: null, source_revision_config: null });
    assert.equal(bare.status, 200, bare.text);
    assert.equal(bare.body.latest_revision_id, created.latest_revision_id);
    const empty = await patch(api, created.id, {});
    assert.equal(empty.status, 200, empty.text);
    assert.equal((await revisionsOf(api, created.id)).length, 1);
  });

  test('PATCH tolerates unknown fields; wrong types are 422; unknown deployment is 404', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const extras = await patch(api, created.id, { env_vars: [], route_through_gateway: false, secret_references: [] });
    assert.equal(extras.status, 200, extras.text);
    assertIssue(await patch(api, created.id, { source_config: { build_on_push: 'yes' } }), ['body', 'source_config', 'build_on_push']);
    assertIssue(await patch(api, created.id, { secrets: 'x' }), ['body', 'secrets']);

    const unknown = await patch(api, UNKNOWN_ID, { display_name: 'x' });
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { detail: `Deployment ID ${UNKNOWN_ID} not found.`, code: 'deployment_not_found' });
    assertIssue(await patch(api, 'not-a-uuid', { display_name: 'x' }), ['path', 'deployment_id'], 'uuid_parsing');
  });

  test('PATCH with top-level tracked_packages and an image_uri shows them in the new revision', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const image = 'registry.example.com/agent@sha256:' + 'a'.repeat(64);
    const res = await patch(api, created.id, {
      revision_source: 'external_docker',
      source_revision_config: { image_uri: image },
      secrets: created.secrets,
      tracked_packages: ['langgraph:1.0.0', 'google-adk:>=0.5'],
    });
    assert.equal(res.status, 200, res.text);
    const revision = await api('GET', `/v2/deployments/${created.id}/revisions/${res.body.latest_revision_id}`);
    assert.equal(revision.status, 200, revision.text);
    assert.equal(revision.body.source_revision_config.image_uri, image);
    assert.deepEqual(revision.body.source_revision_config.tracked_packages, ['langgraph:1.0.0', 'google-adk:>=0.5']);
  });

  test('20 concurrent PATCHes: all 200, 21 revisions numbered 1..21, latest is number 21', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => patch(api, created.id, { source_revision_config: { image_uri: `registry.example.com/agent:c${i}` } })),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      Array.from({ length: 20 }, () => 200),
      results.map((r) => r.text).join('\n'),
    );
    const revisions = await revisionsOf(api, created.id);
    assert.equal(revisions.length, 21);
    assert.deepEqual(
      revisions.map((r) => r.revision_number),
      Array.from({ length: 21 }, (_, i) => 21 - i),
    );
    assert.equal(new Set(revisions.map((r) => r.id)).size, 21);
    assert.equal(new Set(revisions.map((r) => r.source_revision_config.image_uri)).size, 21);
    const latest = await api('GET', `/v2/deployments/${created.id}`);
    assert.equal(latest.body.latest_revision_id, revisions[0]!.id);
    assert.equal(revisions[0]!.revision_number, 21);
    assert.equal(latest.body.source_revision_config.image_uri, revisions[0]!.source_revision_config.image_uri);
    // Each PATCH answered the revision it made.
    assert.equal(new Set(results.map((r) => r.body.latest_revision_id)).size, 20);
  });
});
