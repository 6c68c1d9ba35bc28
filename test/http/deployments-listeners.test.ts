import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';

import {
  UNKNOWN_ID,
  secretValue,
  uniqueName,
  dockerBody,
  createDeployment,
  patch,
  freshWorkspace,
  assertSourceConfigError,
  describeDeployments,
} from '../support/deployments.js';

/** Deployments placed on a listener: placement at create, what PATCH may not move. */
describeDeployments('deployments placed on listeners', (ctx) => {
  test('listener placement of external_docker deployments', async () => {
    const { api } = await freshWorkspace(ctx());
    const listenerRes = await api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: 'c1', compute_config: { k8s_namespaces: ['agents'] } },
    });
    assert.equal(listenerRes.status, 201, listenerRes.text);
    const listener = listenerRes.body;

    const missing = await api('POST', '/v2/deployments', { body: dockerBody() });
    assertSourceConfigError(missing);
    assert.ok(missing.body.detail.includes("'source_config.listener_id' is required"), missing.text);
    assert.ok(missing.body.detail.includes(listener.id), missing.text);

    const placed = await createDeployment(
      api,
      dockerBody({ source_config: { listener_id: listener.id, listener_config: { k8s_namespace: 'agents' }, resource_spec: {} } }),
    );
    assert.equal(placed.source_config.listener_id, listener.id);
    assert.deepEqual(placed.source_config.listener_config, { k8s_namespace: 'agents' });

    const wrongNamespace = await api('POST', '/v2/deployments', {
      body: dockerBody({ source_config: { listener_id: listener.id, listener_config: { k8s_namespace: 'elsewhere' } } }),
    });
    assertSourceConfigError(wrongNamespace, /elsewhere/);

    const unknownListener = await api('POST', '/v2/deployments', {
      body: dockerBody({ source_config: { listener_id: UNKNOWN_ID, listener_config: { k8s_namespace: 'agents' } } }),
    });
    assertSourceConfigError(unknownListener, new RegExp(UNKNOWN_ID));

    const implied = await createDeployment(api, dockerBody({ source_config: { listener_id: listener.id } }));
    assert.equal(implied.source_config.listener_id, listener.id);
    assert.deepEqual(implied.source_config.listener_config, { k8s_namespace: 'agents' }, 'the only namespace is filled in');

    // The GHA self-hosted body, explicit nulls included.
    const gha = await createDeployment(api, {
      name: uniqueName('gha'),
      source: 'external_docker',
      source_config: {
        integration_id: null,
        repo_url: null,
        deployment_type: 'dev_free',
        build_on_push: null,
        custom_url: null,
        listener_id: listener.id,
        listener_config: { k8s_namespace: 'agents' },
        resource_spec: { min_scale: 1, max_scale: 1, cpu: 1, memory_mb: 1024 },
      },
      source_revision_config: { repo_ref: null, langgraph_config_path: null, image_uri: 'docker.io/acme/agent:1' },
      secrets: [{ name: 'OPENAI_API_KEY', value: secretValue() }],
      env_vars: [],
    });
    assert.equal(gha.source_config.listener_id, listener.id);
    assert.deepEqual(gha.source_config.resource_spec, { min_scale: 1, max_scale: 1, cpu: 1, memory_mb: 1024 });

    // A listener of another workspace is unknown here.
    const elsewhere = await freshWorkspace(ctx());
    const foreign = await elsewhere.api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: `foreign-${randomUUID().slice(0, 8)}`, compute_config: { k8s_namespaces: ['agents'] } },
    });
    assert.equal(foreign.status, 201, foreign.text);
    const foreignPlacement = await api('POST', '/v2/deployments', { body: dockerBody({ source_config: { listener_id: foreign.body.id } }) });
    assertSourceConfigError(foreignPlacement);

    // A listener with several namespaces needs one named.
    const multi = await api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: 'c2', compute_config: { k8s_namespaces: ['a', 'b'] } },
    });
    assert.equal(multi.status, 201, multi.text);
    assertSourceConfigError(await api('POST', '/v2/deployments', { body: dockerBody({ source_config: { listener_id: multi.body.id } }) }));
    const onB = await createDeployment(api, dockerBody({ source_config: { listener_id: multi.body.id, listener_config: { k8s_namespace: 'b' } } }));
    assert.deepEqual(onB.source_config.listener_config, { k8s_namespace: 'b' });
  });

  test('PATCH cannot move a deployment to another listener or namespace (400); resending the placement is fine', async () => {
    const { api } = await freshWorkspace(ctx());
    const l1 = await api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: 'one', compute_config: { k8s_namespaces: ['agents', 'other'] } },
    });
    const l2 = await api('POST', '/v2/listeners', { body: { compute_type: 'k8s', compute_id: 'two', compute_config: { k8s_namespaces: ['agents'] } } });
    assert.equal(l1.status, 201, l1.text);
    assert.equal(l2.status, 201, l2.text);
    const placed = await createDeployment(api, dockerBody({ source_config: { listener_id: l1.body.id, listener_config: { k8s_namespace: 'agents' } } }));
    const move = await patch(api, placed.id, { source_config: { listener_id: l2.body.id } });
    assert.equal(move.status, 400, move.text);
    const ns = await patch(api, placed.id, { source_config: { listener_config: { k8s_namespace: 'other' } } });
    assert.equal(ns.status, 400, ns.text);

    // SH-K8S resends the create body; only real changes count.
    const resend = await patch(api, placed.id, {
      source_config: { listener_id: l1.body.id, listener_config: { k8s_namespace: 'agents' }, resource_spec: {} },
      source_revision_config: { repo_ref: null, langgraph_config_path: null, image_uri: 'registry.example.com/agent:v9' },
      secrets: placed.secrets,
    });
    assert.equal(resend.status, 200, resend.text);
    assert.equal(resend.body.source_config.listener_id, l1.body.id);
    assert.deepEqual(resend.body.source_config.listener_config, { k8s_namespace: 'agents' });
    assert.equal(resend.body.source_revision_config.image_uri, 'registry.example.com/agent:v9');
  });

  test('a listener id given in upper case places the deployment on that listener (stored in canonical form)', async () => {
    const { api } = await freshWorkspace(ctx());
    const listener = await api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: 'upper', compute_config: { k8s_namespaces: ['agents'] } },
    });
    assert.equal(listener.status, 201, listener.text);
    const placed = await createDeployment(api, dockerBody({ source_config: { listener_id: listener.body.id.toUpperCase() } }));
    assert.equal(placed.source_config.listener_id, listener.body.id);
    // The listener now has a deployment on it, so it cannot be deleted.
    const del = await api('DELETE', `/v2/listeners/${listener.body.id}`);
    assert.equal(del.status, 409, del.text);
  });
});
