import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type GitIntegrationFixture, gitIntegration, gitIntegrationOf } from '../support/codehost.js';
import { FakeBuildDriver } from '../support/drivers/fake-build.js';
import { InProcessRuntime } from '../support/drivers/in-process.js';
import { type Client, client } from '../support/http.js';
import { type DatabaseKind, postgresUnavailable, startTestServer, type TestServer } from '../support/server.js';

interface RevisionBody {
  id: string;
  status: string;
  status_message: string | null;
  source_revision_config: { repo_commit_sha: string | null };
  build_inputs: {
    key: string;
    source: string;
    commit_sha: string | null;
    base_image_digest: string;
    generator_version: number;
    reused_from_revision_id: string | null;
  } | null;
}

/**
 * Issue 21, item 1 against the engine on both databases, with the fake builder (which
 * counts builds) and the in-process runtime (which keeps what each container was given):
 * a revision builds only when its build's inputs change, and never takes another
 * workspace's image. Real git, buildah and podman: test/engine/codehost-build.test.ts.
 */
for (const kind of ['sqlite', 'postgres'] as DatabaseKind[]) {
  describe(`builds only when the inputs change [${kind}]`, async () => {
    const skip = kind === 'postgres' ? await postgresUnavailable() : null;
    if (skip) {
      process.stdout.write(`# SKIP builds only when the inputs change [postgres]: ${skip}\n`);
      return;
    }
    let server: TestServer;
    let api: Client;
    let integration: GitIntegrationFixture;
    const builder = new FakeBuildDriver();
    const runtime = new InProcessRuntime();

    before(async () => {
      server = await startTestServer(kind, { overrides: { runtime, builder } });
      api = client(server.url, { key: server.adminKey });
      integration = await gitIntegration(api);
    });
    after(async () => {
      await server.close();
      await integration.remove();
    });

    async function finished(deploymentId: string, revisionId: string): Promise<RevisionBody> {
      const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}?wait_for_terminal=60`);
      assert.equal(res.status, 200, res.text);
      return res.body as RevisionBody;
    }

    async function statuses(deploymentId: string, revisionId: string): Promise<string[]> {
      const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/timeline`);
      assert.equal(res.status, 200, res.text);
      return (res.body.resources as { status: string }[]).map((event) => event.status);
    }

    async function buildLog(deploymentId: string, revisionId: string): Promise<string> {
      const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=build&limit=1000`);
      return (res.body.logs as { message: string }[]).map((line) => line.message).join('\n');
    }

    const imageOf = (revisionId: string) => runtime.started.find((request) => request.revisionId === revisionId)?.image;

    async function deployed(name: string, secrets: { name: string; value: string }[] = []) {
      const created = await api('POST', '/v2/deployments', {
        body: {
          name,
          source: 'codehost',
          source_config: { integration_id: integration.integrationId, repo_url: integration.repoUrl },
          source_revision_config: { repo_ref: 'main' },
          secrets,
        },
      });
      assert.equal(created.status, 201, created.text);
      const first = await finished(created.body.id, created.body.latest_revision_id);
      assert.equal(first.status, 'DEPLOYED', first.status_message ?? '');
      return { id: created.body.id as string, tenantId: created.body.tenant_id as string, first };
    }

    test('a secret-only, resource_spec-only or display_name-only change builds nothing and deploys the same image', async () => {
      const before = builder.builds;
      const { id, first } = await deployed(`reuse-${kind}`, [{ name: 'TOKEN', value: 'one' }]);
      assert.equal(builder.builds, before + 1);
      assert.ok(first.build_inputs, 'the built revision shows its build inputs');
      assert.equal(first.build_inputs.reused_from_revision_id, null);
      assert.match(first.build_inputs.key, /^[0-9a-f]{64}$/);
      assert.equal(first.build_inputs.source, `commit:${first.build_inputs.commit_sha}`);
      assert.deepEqual(await statuses(id, first.id), ['QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED']);

      const bySecret = await api('PATCH', `/v2/deployments/${id}`, { body: { secrets: [{ name: 'TOKEN', value: 'two' }] } });
      assert.equal(bySecret.status, 200, bySecret.text);
      const second = await finished(id, bySecret.body.latest_revision_id);
      assert.equal(second.status, 'DEPLOYED', second.status_message ?? '');
      assert.deepEqual(await statuses(id, second.id), ['QUEUED', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'], 'no BUILDING');
      assert.equal(imageOf(second.id), imageOf(first.id), 'the same image is deployed');
      assert.equal(runtime.started.find((r) => r.revisionId === second.id)?.env.TOKEN, 'two', 'the new secret reaches the container');
      assert.equal(second.build_inputs?.key, first.build_inputs.key);
      assert.equal(second.build_inputs?.reused_from_revision_id, first.id, 'the revision says whose image it runs');
      assert.equal(second.source_revision_config.repo_commit_sha, first.source_revision_config.repo_commit_sha);
      const log = await buildLog(id, second.id);
      assert.match(log, new RegExp(`Reusing image ${imageOf(first.id)?.replace(/[.:/]/g, '\\$&')}, built by revision 1 \\(${first.id}\\)`));
      assert.match(log, /Build inputs: commit:[0-9a-f]{40}/);
      const steps = await server.berth.db.selectFrom('engine_step_runs').select('step').where('revision_id', '=', second.id).execute();
      assert.deepEqual(
        steps.map((s) => s.step),
        ['deploy'],
        'no build step ran',
      );

      const byResources = await api('PATCH', `/v2/deployments/${id}`, { body: { source_config: { resource_spec: { cpu: 2, memory_mb: 1024 } } } });
      assert.equal(byResources.status, 200, byResources.text);
      const third = await finished(id, byResources.body.latest_revision_id);
      assert.equal(third.status, 'DEPLOYED', third.status_message ?? '');
      assert.ok(!(await statuses(id, third.id)).includes('BUILDING'));
      assert.equal(imageOf(third.id), imageOf(first.id));

      const byName = await api('PATCH', `/v2/deployments/${id}`, { body: { display_name: 'Renamed' } });
      assert.equal(byName.status, 200, byName.text);
      assert.equal(byName.body.latest_revision_id, third.id, 'a display_name change makes no revision at all');
      assert.equal(builder.builds, before + 1, 'one build in all');
    });

    test('a change of commit builds, and so does a revision whose earlier image is gone', async () => {
      await integration.repository.commit('feature', { 'README.md': 'another branch' }, 'a branch of its own');
      const { id, first } = await deployed(`commit-${kind}`);
      const before = builder.builds;
      const moved = await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { repo_ref: 'feature' } } });
      assert.equal(moved.status, 200, moved.text);
      const second = await finished(id, moved.body.latest_revision_id);
      assert.equal(second.status, 'DEPLOYED', second.status_message ?? '');
      assert.ok((await statuses(id, second.id)).includes('BUILDING'), 'another commit builds');
      assert.equal(builder.builds, before + 1);
      assert.notEqual(second.build_inputs?.source, first.build_inputs?.source);
      assert.notEqual(second.build_inputs?.key, first.build_inputs?.key);
      assert.equal(second.build_inputs?.reused_from_revision_id, null);

      const image = imageOf(second.id);
      assert.ok(image);
      builder.gone.add(image);
      const bySecret = await api('PATCH', `/v2/deployments/${id}`, { body: { secrets: [{ name: 'NEW', value: 'x' }] } });
      const third = await finished(id, bySecret.body.latest_revision_id);
      assert.equal(third.status, 'DEPLOYED', third.status_message ?? '');
      assert.ok((await statuses(id, third.id)).includes('BUILDING'), 'an image gone from the store is built again');
      assert.equal(builder.builds, before + 2);
      assert.match(await buildLog(id, third.id), /Building: the image built from them by revision 2 is gone from the image store/);
      assert.notEqual(imageOf(third.id), image);
    });

    test('an upload with the same bytes as one built before builds nothing, and its archive is let go', async () => {
      const created = await api('POST', '/v2/deployments', {
        body: { name: `upload-${kind}`, source: 'internal_source', source_config: { deployment_type: 'dev' }, source_revision_config: {}, secrets: [] },
      });
      assert.equal(created.status, 201, created.text);
      const id = created.body.id as string;
      const bytes = Buffer.concat([Buffer.from([0x1f, 0x8b]), randomBytes(2000)]);
      const upload = async () => {
        const url = await api('POST', `/v2/deployments/${id}/upload-url`);
        assert.equal(url.status, 200, url.text);
        const put = await fetch(url.body.upload_url, { method: 'PUT', headers: { 'content-type': 'application/gzip' }, body: bytes });
        assert.equal(put.status, 200, await put.text());
        const patched = await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { source_tarball_path: url.body.object_path } } });
        assert.equal(patched.status, 200, patched.text);
        return { revision: await finished(id, patched.body.latest_revision_id), objectPath: url.body.object_path as string };
      };
      const before = builder.builds;
      const first = await upload();
      assert.equal(first.revision.status, 'DEPLOYED', first.revision.status_message ?? '');
      assert.equal(builder.builds, before + 1);
      assert.match(first.revision.build_inputs?.source ?? '', /^archive:sha256:[0-9a-f]{64}$/);
      const again = await upload();
      assert.equal(again.revision.status, 'DEPLOYED', again.revision.status_message ?? '');
      assert.equal(builder.builds, before + 1, 'the same archive again builds nothing');
      assert.equal(again.revision.build_inputs?.reused_from_revision_id, first.revision.id);
      assert.ok(!(await statuses(id, again.revision.id)).includes('BUILDING'));
      assert.equal(existsSync(path.join(server.dataDir, 'uploads', id, path.basename(again.objectPath))), false, 'the archive is let go as a built one is');
    });

    test("another workspace with the same repository and commit builds its own image, never workspace A's", async () => {
      const a = await deployed(`ws-a-${kind}`);
      const workspace = await api('POST', '/v1/workspaces', { body: { name: `hostile-${kind}-${Date.now()}` } });
      assert.equal(workspace.status, 201, workspace.text);
      const key = await api('POST', '/v1/api-keys', { body: { name: 'hostile', workspace_id: workspace.body.id } });
      const hostile = client(server.url, { key: key.body.key });
      // Integrations are an admin's to register; the operator registers the same repository for workspace B.
      const theirs = await gitIntegrationOf(client(server.url, { key: server.adminKey, tenant: workspace.body.id }), integration.repository.bare);
      const before = builder.builds;
      const created = await hostile('POST', '/v2/deployments', {
        body: {
          name: `ws-b-${kind}`,
          source: 'codehost',
          source_config: { integration_id: theirs.id, repo_url: theirs.repoUrl },
          source_revision_config: { repo_ref: 'main' },
          secrets: [],
        },
      });
      assert.equal(created.status, 201, created.text);
      const res = await hostile('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}?wait_for_terminal=60`);
      const b = res.body as RevisionBody;
      assert.equal(b.status, 'DEPLOYED', b.status_message ?? '');
      assert.equal(builder.builds, before + 1, 'workspace B built its own image');
      assert.equal(b.build_inputs?.source, a.first.build_inputs?.source, 'the same commit');
      assert.notEqual(b.build_inputs?.key, a.first.build_inputs?.key, 'keys are per workspace');
      assert.equal(b.build_inputs?.reused_from_revision_id, null);
      assert.notEqual(imageOf(b.id), imageOf(a.first.id));
      // Nor can workspace B read A's revision to learn its key.
      assert.equal((await hostile('GET', `/v2/deployments/${a.id}/revisions/${a.first.id}`)).status, 404);
    });

    test("langgraph.json's env reaches the container under the deployment's secrets, also after a reuse and a redeploy", async () => {
      builder.env = { MY_PREFIX: 'from-config', CLASH: 'from-config' };
      try {
        await integration.repository.commit('env', { 'env.txt': 'a commit of its own' }, 'env branch');
        const created = await api('POST', '/v2/deployments', {
          body: {
            name: `env-${kind}`,
            source: 'codehost',
            source_config: { integration_id: integration.integrationId, repo_url: integration.repoUrl },
            source_revision_config: { repo_ref: 'env' },
            secrets: [{ name: 'CLASH', value: 'from-secret' }],
          },
        });
        assert.equal(created.status, 201, created.text);
        const id = created.body.id as string;
        const first = await finished(id, created.body.latest_revision_id);
        assert.equal(first.status, 'DEPLOYED', first.status_message ?? '');
        const envOf = (revisionId: string) => runtime.started.find((r) => r.revisionId === revisionId)?.env ?? {};
        assert.equal(envOf(first.id).MY_PREFIX, 'from-config');
        assert.equal(envOf(first.id).CLASH, 'from-secret', "the deployment's secrets win");
        assert.equal(envOf(first.id).LANGSMITH_HOST_REVISION_ID, first.id, "Berth's own variables stay Berth's");
        const stored = await server.berth.db.selectFrom('revisions').select('config_env_encrypted').where('id', '=', first.id).executeTakeFirstOrThrow();
        assert.ok(stored.config_env_encrypted && !stored.config_env_encrypted.includes('from-config'), 'kept encrypted');

        const patched = await api('PATCH', `/v2/deployments/${id}`, { body: { secrets: [{ name: 'OTHER', value: 'x' }] } });
        const second = await finished(id, patched.body.latest_revision_id);
        assert.equal(second.build_inputs?.reused_from_revision_id, first.id);
        assert.equal(envOf(second.id).MY_PREFIX, 'from-config', 'a reused image still gets the env');
        assert.equal(envOf(second.id).CLASH, 'from-config', 'no secret of that name any more: the file applies');

        builder.env = {};
        const redeployed = await api('POST', `/v2/deployments/${id}/revisions/${first.id}/redeploy`);
        assert.equal(redeployed.status, 200, redeployed.text);
        const third = await finished(id, redeployed.body.latest_revision_id);
        assert.equal(third.status, 'DEPLOYED', third.status_message ?? '');
        assert.equal(envOf(third.id).MY_PREFIX, 'from-config', 'a redeploy carries the env of the revision it redeploys');
        assert.equal(third.build_inputs?.reused_from_revision_id, first.id);
      } finally {
        builder.env = {};
      }
    });
  });
}
