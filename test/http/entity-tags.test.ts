import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { type Client, client } from '../support/http.js';
import { describeOnEachDatabase, otherTenants } from '../support/suite.js';
import { deploymentTag } from '../../src/services/deployments.js';

const imageBody = () => ({
  name: `etag-${randomUUID().slice(0, 8)}`,
  source: 'external_docker',
  source_config: { resource_spec: {} },
  source_revision_config: { image_uri: 'registry.example.com/agent:v1' },
  secrets: [{ name: 'OPENAI_API_KEY', value: `S3CR3T-${randomUUID()}` }],
});

// The engine is off: nothing but the test changes a deployment between its read and its write.
describeOnEachDatabase('ETag and conditional requests', { engine: false }, (ctx) => {
  const api: Client = (method, route, options) => ctx().api(method, route, options);

  const newDeployment = async () => {
    const created = await api('POST', '/v2/deployments', { body: imageBody() });
    assert.equal(created.status, 201, created.text);
    return created.body.id as string;
  };
  const read = async (id: string) => {
    const answer = await api('GET', `/v2/deployments/${id}`);
    assert.equal(answer.status, 200, answer.text);
    const tag = answer.headers.get('etag');
    assert.match(tag ?? '', /^"[\w-]{32}"$/);
    return { body: answer.body, tag: tag as string };
  };

  test('GET answers an ETag; If-None-Match answers 304 while it is current, 200 once the deployment changed', async () => {
    const id = await newDeployment();
    const { tag } = await read(id);
    assert.equal((await read(id)).tag, tag, 'the same deployment, the same tag');
    for (const header of [tag, `W/${tag}`, `"other", ${tag}`, '*']) {
      const unchanged = await api('GET', `/v2/deployments/${id}`, { headers: { 'If-None-Match': header } });
      assert.equal(unchanged.status, 304, header);
      assert.equal(unchanged.text, '');
      assert.equal(unchanged.headers.get('etag'), tag);
    }
    const patched = await api('PATCH', `/v2/deployments/${id}`, { body: { display_name: 'renamed' } });
    assert.equal(patched.status, 200, patched.text);
    const changed = await api('GET', `/v2/deployments/${id}`, { headers: { 'If-None-Match': tag } });
    assert.equal(changed.status, 200);
    assert.notEqual(changed.headers.get('etag'), tag);
    assert.equal(patched.headers.get('etag'), changed.headers.get('etag'), 'the PATCH answer carries the new tag');
  });

  test('If-Match on PATCH: the current tag writes, a stale one answers 412 resource_changed and writes nothing', async () => {
    const id = await newDeployment();
    const { tag } = await read(id);
    const first = await api('PATCH', `/v2/deployments/${id}`, { body: { display_name: 'first' }, headers: { 'If-Match': tag } });
    assert.equal(first.status, 200, first.text);
    const stale = await api('PATCH', `/v2/deployments/${id}`, { body: { display_name: 'second' }, headers: { 'If-Match': tag } });
    assert.equal(stale.status, 412, stale.text);
    assert.equal(stale.body.code, 'resource_changed');
    assert.equal(typeof stale.body.detail, 'string');
    assert.equal((await read(id)).body.display_name, 'first');
    // A weak tag never matches If-Match (strong comparison); `*` matches whatever is there.
    const weak = await api('PATCH', `/v2/deployments/${id}`, { body: { display_name: 'weak' }, headers: { 'If-Match': `W/${(await read(id)).tag}` } });
    assert.equal(weak.status, 412);
    const any = await api('PATCH', `/v2/deployments/${id}`, { body: { display_name: 'any' }, headers: { 'If-Match': '*' } });
    assert.equal(any.status, 200, any.text);
  });

  test('concurrent PATCHes with one If-Match: exactly one writes', async () => {
    const id = await newDeployment();
    const { tag } = await read(id);
    const answers = await Promise.all(
      ['a', 'b', 'c', 'd'].map((name) =>
        api('PATCH', `/v2/deployments/${id}`, { body: { secrets: [{ name: 'OPENAI_API_KEY', value: name }] }, headers: { 'If-Match': tag } }),
      ),
    );
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 412, 412, 412], answers.map((a) => a.text).join('\n'));
    const revisions = await api('GET', `/v2/deployments/${id}/revisions`);
    assert.equal(revisions.body.resources.length, 2, 'one revision more, from the one PATCH that wrote');
  });

  test('If-Match on DELETE: stale answers 412 and the deployment stays; current deletes', async () => {
    const id = await newDeployment();
    const { tag } = await read(id);
    await api('PATCH', `/v2/deployments/${id}`, { body: { display_name: 'moved on' } });
    const stale = await api('DELETE', `/v2/deployments/${id}`, { headers: { 'If-Match': tag } });
    assert.equal(stale.status, 412, stale.text);
    assert.equal(stale.body.code, 'resource_changed');
    assert.equal((await read(id)).body.status !== 'AWAITING_DELETE', true);
    const current = await api('DELETE', `/v2/deployments/${id}`, { headers: { 'If-Match': (await read(id)).tag } });
    assert.equal(current.status, 204, current.text);
    assert.equal((await read(id)).body.status, 'AWAITING_DELETE');
  });

  test('the tag is no digest of secret values: a value alone does not change it (a new revision does)', async () => {
    const id = await newDeployment();
    const { body, tag } = await read(id);
    const sameButValue = { ...body, secrets: body.secrets.map((secret: { name: string }) => ({ ...secret, value: 'guessed' })) };
    assert.equal(deploymentTag(sameButValue), tag);
    assert.notEqual(deploymentTag({ ...sameButValue, latest_revision_id: randomUUID() }), tag);
  });

  /** The other tagged resources: how to make one, its path, a change a PATCH makes (if it has PATCH) and whether it has DELETE. */
  const resources: { name: string; create: () => Promise<string>; patch?: Record<string, unknown>; remove: boolean }[] = [
    {
      name: 'listener',
      create: async () => {
        const created = await api('POST', '/v2/listeners', { body: { compute_type: 'k8s', compute_id: `c-${randomUUID()}`, compute_config: {} } });
        assert.equal(created.status, 201, created.text);
        return `/v2/listeners/${created.body.id}`;
      },
      patch: { version: '2.0.0' },
      remove: true,
    },
    {
      name: 'OAuth provider',
      create: async () => {
        const providerId = `p-${randomUUID().slice(0, 8)}`;
        const created = await api('POST', '/v2/auth/providers', {
          body: {
            provider_id: providerId,
            name: 'GitHub',
            client_id: 'client-123',
            client_secret: `S3CR3T-${randomUUID()}`,
            auth_url: 'https://github.com/login/oauth/authorize',
            token_url: 'https://github.com/login/oauth/access_token',
          },
        });
        assert.equal(created.status, 200, created.text);
        return `/v2/auth/providers/${providerId}`;
      },
      patch: { name: 'GitHub Enterprise' },
      remove: true,
    },
    {
      name: 'integration',
      create: async () => {
        const created = await api('POST', '/v1/integrations/codehost', {
          body: { provider: 'git', name: `git-${randomUUID()}`, git: { repositories: ['https://git.example.com/acme/agent.git'] } },
        });
        assert.equal(created.status, 201, created.text);
        return `/v1/integrations/codehost/${created.body.id}`;
      },
      remove: true,
    },
    {
      name: 'revision',
      create: async () => {
        const id = await newDeployment();
        const { body } = await read(id);
        return `/v2/deployments/${id}/revisions/${body.latest_revision_id}`;
      },
      remove: false,
    },
  ];

  for (const resource of resources) {
    test(`${resource.name}: ETag and 304${resource.patch || resource.remove ? ', 412 on a stale If-Match' : ''}`, async () => {
      const path = await resource.create();
      const first = await api('GET', path);
      assert.equal(first.status, 200, first.text);
      const tag = first.headers.get('etag') as string;
      assert.match(tag, /^"[\w-]{32}"$/);
      const unchanged = await api('GET', path, { headers: { 'If-None-Match': tag } });
      assert.equal(unchanged.status, 304);
      assert.equal(unchanged.text, '');
      if (resource.patch) {
        const written = await api('PATCH', path, { body: resource.patch, headers: { 'If-Match': tag } });
        assert.equal(written.status, 200, written.text);
        assert.notEqual(written.headers.get('etag'), tag);
        const stale = await api('PATCH', path, { body: resource.patch, headers: { 'If-Match': tag } });
        assert.equal(stale.status, 412, stale.text);
        assert.equal(stale.body.code, 'resource_changed');
        const changed = await api('GET', path, { headers: { 'If-None-Match': tag } });
        assert.equal(changed.status, 200);
        assert.equal(changed.headers.get('etag'), written.headers.get('etag'));
      }
      if (resource.remove) {
        const stale = await api('DELETE', path, { headers: { 'If-Match': '"stale"' } });
        assert.equal(stale.status, 412, stale.text);
        assert.equal(stale.body.code, 'resource_changed');
        assert.equal((await api('GET', path)).status, 200);
        const current = (await api('GET', path)).headers.get('etag') as string;
        const removed = await api('DELETE', path, { headers: { 'If-Match': current } });
        assert.ok(removed.status === 200 || removed.status === 204, removed.text);
        assert.equal((await api('GET', path)).status, 404);
      }
    });
  }

  test('another workspace learns nothing through conditional requests', async () => {
    const id = await newDeployment();
    const { tag } = await read(id);
    const { otherWorkspaceKey, otherOrganizationKey } = await otherTenants(ctx());
    for (const hostileKey of [otherWorkspaceKey, otherOrganizationKey]) {
      const hostile = client(ctx().server.url, { key: hostileKey });
      const peek = await hostile('GET', `/v2/deployments/${id}`, { headers: { 'If-None-Match': tag } });
      assert.equal(peek.status, 404, peek.text);
      assert.equal(peek.headers.get('etag'), null);
      for (const ifMatch of [tag, '*']) {
        const patch = await hostile('PATCH', `/v2/deployments/${id}`, { body: { display_name: 'hostile' }, headers: { 'If-Match': ifMatch } });
        assert.equal(patch.status, 404, patch.text);
        const remove = await hostile('DELETE', `/v2/deployments/${id}`, { headers: { 'If-Match': ifMatch } });
        assert.equal(remove.status, 404, remove.text);
      }
    }
    assert.equal((await read(id)).tag, tag);
    const listenerPath = await resources[0]!.create();
    const listenerTag = (await api('GET', listenerPath)).headers.get('etag') as string;
    const hostile = client(ctx().server.url, { key: otherWorkspaceKey });
    assert.equal((await hostile('GET', listenerPath, { headers: { 'If-None-Match': listenerTag } })).status, 404);
    assert.equal((await hostile('DELETE', listenerPath, { headers: { 'If-Match': listenerTag } })).status, 404);
    assert.equal((await api('GET', listenerPath)).status, 200);
  });
});
