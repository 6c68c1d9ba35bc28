import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { containersEnv, run } from '../build/helpers.js';
import { pushImage } from '../../src/image-builds/push-image.js';
import type { ResolvedBuilder } from '../../src/image-builds/types.js';
import { LocalContainerRuntime } from '../../src/containers/runtime/index.js';
import type { ImageToForget } from '../../src/engine/drivers/types.js';
import { parseImageReference } from '../../src/registry/image-names.js';
import type { Registry } from '../../src/registry/setup.js';
import { type GitIntegrationFixture, gitIntegration } from '../support/codehost.js';
import { CommittingBuildDriver } from '../support/drivers/committing-build.js';
import { InProcessRuntime } from '../support/drivers/in-process.js';
import { type Client, client } from '../support/http.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import { freePort } from '../support/process.js';
import { startTokenRegistry, TOKEN_PATH, type TokenRegistry } from '../support/registry.js';
import { eventually } from '../support/runtimes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { describeEachDatabase } from '../support/database.js';

/**
 * Issue 20, item 4: built images leave with their deployment and beyond the revision
 * retention, from the host's image store and from Berth's registry, and only where their
 * name still names what was built. Real buildah, podman and docker-registry; the one image
 * built (a busybox layer) is the base every revision's image is committed from.
 */
const BASE = 'localhost/berth-test/image-removal-base:1';
const buildah: ResolvedBuilder = { kind: 'buildah', binary: 'buildah', env: containersEnv() };

/** Runs revisions in process, but removes images from the host's store as Berth's podman runtime does. */
class HostStoreRuntime extends InProcessRuntime {
  readonly #podman = new LocalContainerRuntime({ runtime: 'podman', env: containersEnv() });
  forgetImage(image: ImageToForget): Promise<void> {
    return this.#podman.forgetImage(image);
  }
}

async function hostImageId(reference: string): Promise<string | null> {
  const result = await run('podman', ['image', 'inspect', '--format', '{{.Id}}', reference]);
  return result.code === 0 ? result.stdout.trim() : null;
}

/** The digest a tag (or digest) of Berth's registry names, or null when the registry has no such tag. */
async function registryDigest(registry: Registry, reference: string): Promise<string | null> {
  const parsed = parseImageReference(reference);
  const tagOrDigest = parsed?.digest ?? parsed?.tag;
  assert.ok(parsed && tagOrDigest);
  const token = await registry.removalToken(parsed.path);
  const response = await fetch(`http://${parsed.domain}/v2/${parsed.path}/manifests/${tagOrDigest}`, {
    method: 'HEAD',
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' },
  });
  if (response.status === 404) return null;
  assert.equal(response.status, 200, `HEAD ${reference}`);
  return response.headers.get('docker-content-digest');
}

describe('built images removed with their revisions', () => {
  holdMachineTurnForSuite({ before, after });
  before(async () => {
    if ((await hostImageId(BASE)) !== null) return;
    const container = (await run('buildah', ['from', 'scratch'])).stdout.trim();
    assert.ok(container, 'buildah from scratch');
    try {
      assert.equal((await run('buildah', ['copy', container, '/bin/busybox', '/busybox'])).code, 0);
      assert.equal((await run('buildah', ['config', '--entrypoint', '["/busybox"]', container])).code, 0);
      assert.equal((await run('buildah', ['commit', '--quiet', container, BASE])).code, 0);
    } finally {
      await run('buildah', ['rm', container]);
    }
  });
  after(async () => {
    await run('podman', ['rmi', BASE]);
  });

  describeEachDatabase('', (kind) => {
    let server: TestServer;
    let registry: TokenRegistry;
    let api: Client;
    let integration: GitIntegrationFixture;
    const made: string[] = [];

    before(async () => {
      const berthPort = await freePort();
      const registryPort = await freePort();
      // The builder pushes with the server's registry, which exists once the server does.
      const late: { registry?: Registry } = {};
      server = await startTestServer(kind, {
        revisionsKept: 2,
        env: { PORT: String(berthPort), BERTH_REGISTRY: `127.0.0.1:${registryPort}`, BERTH_REGISTRY_TLS_VERIFY: 'off' },
        overrides: { runtime: new HostStoreRuntime(), builder: new CommittingBuildDriver(buildah, BASE, () => late.registry) },
      });
      const berthRegistry = server.berth.registry;
      assert.ok(berthRegistry);
      late.registry = berthRegistry;
      registry = await startTokenRegistry({
        port: registryPort,
        realm: `http://127.0.0.1:${berthPort}${TOKEN_PATH}`,
        service: berthRegistry.settings.service,
        issuer: berthRegistry.settings.issuer,
        rootCertBundle: berthRegistry.bundleFile,
      });
      api = client(server.url, { key: server.adminKey });
      integration = await gitIntegration(api);
    });
    after(async () => {
      await server?.close();
      await registry?.stop();
      await integration?.remove();
      const leftovers = [];
      for (const image of made) if ((await hostImageId(image)) !== null) leftovers.push(image);
      if (leftovers.length > 0) await run('podman', ['rmi', '-f', ...leftovers]);
    });

    const reg = () => server.berth.registry as Registry;

    async function deployBuilt(as: Client, name: string, fixture: GitIntegrationFixture): Promise<{ deploymentId: string; revisionId: string; image: string }> {
      const created = await as('POST', '/v2/deployments', {
        body: {
          name,
          source: 'codehost',
          source_config: { integration_id: fixture.integrationId, repo_url: fixture.repoUrl },
          source_revision_config: { repo_ref: 'main' },
          secrets: [],
        },
      });
      assert.equal(created.status, 201, created.text);
      return { deploymentId: created.body.id, ...(await deployed(as, created.body.id, created.body.latest_revision_id)) };
    }

    async function deployed(as: Client, deploymentId: string, revisionId: string): Promise<{ revisionId: string; image: string }> {
      const revision = await eventually(
        async () => {
          const res = await as('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}`);
          assert.ok(!/FAILED/.test(res.body.status), `${res.body.status}: ${res.body.status_message}`);
          return res.body.status === 'DEPLOYED' ? res.body : undefined;
        },
        `revision ${revisionId} to be DEPLOYED`,
        60_000,
      );
      const row = await server.berth.db
        .selectFrom('revisions')
        .select(['image_ref', 'image_id', 'image_digest'])
        .where('id', '=', revision.id)
        .executeTakeFirstOrThrow();
      assert.ok(row.image_ref && row.image_id && row.image_digest, 'a built revision records its image, its id and its digest');
      made.push(row.image_ref, row.image_id);
      return { revisionId: revision.id, image: row.image_ref };
    }

    /** Waits until the removals of these images are done; a failed one (tried again later) fails the test. */
    async function removalsDone(...images: string[]): Promise<void> {
      await eventually(
        async () => {
          const rows = await server.berth.db.selectFrom('image_removals').select(['image_ref', 'last_error']).where('image_ref', 'in', images).execute();
          assert.deepEqual(
            rows.filter((row) => row.last_error !== null),
            [],
            'no removal failed',
          );
          return rows.length === 0;
        },
        'the queued image removals to be done',
        60_000,
      );
    }

    test('deleting a deployment removes its built image from the host store and the registry', async () => {
      const { deploymentId, image } = await deployBuilt(api, `gone-${kind}`, integration);
      assert.ok(await hostImageId(image));
      assert.ok(await registryDigest(reg(), image));

      assert.equal((await api('DELETE', `/v2/deployments/${deploymentId}`)).status, 204);
      await eventually(async () => (await api('GET', `/v2/deployments/${deploymentId}`)).status === 404, 'the deployment to be gone');
      await removalsDone(image);
      assert.equal(await hostImageId(image), null, 'gone from the host store');
      assert.equal(await registryDigest(reg(), image), null, 'gone from the registry');
      assert.ok(await hostImageId(BASE), 'the base it was built on stays');
    });

    test('retention removes an old revision’s image and keeps the active one’s and the one a redeploy reuses', async () => {
      const first = await deployBuilt(api, `kept-${kind}`, integration);
      const rebuild = async () => {
        const res = await api('POST', `/v2/deployments/${first.deploymentId}/revisions`, { body: {} });
        assert.equal(res.status, 201, res.text);
        return deployed(api, first.deploymentId, res.body.id);
      };
      const second = await rebuild();
      // The third revision's PATCH drops the first beyond the two kept: its image goes.
      const third = await rebuild();
      await removalsDone(first.image);
      assert.equal(await hostImageId(first.image), null, 'the dropped revision’s image is gone');
      assert.equal(await registryDigest(reg(), first.image), null);
      for (const kept of [second, third]) {
        assert.ok(await hostImageId(kept.image), 'a kept revision’s image stays');
        assert.ok(await registryDigest(reg(), kept.image));
      }
      // A redeploy of the second reuses its image; when the second is dropped, the image stays for the redeploy.
      const redeploy = await api('POST', `/v2/deployments/${first.deploymentId}/revisions/${second.revisionId}/redeploy`);
      assert.equal(redeploy.status, 200, redeploy.text);
      await eventually(async () => {
        const res = await api('GET', `/v2/deployments/${first.deploymentId}/revisions/${redeploy.body.latest_revision_id}`);
        return res.body.status === 'DEPLOYED';
      }, 'the redeploy to be DEPLOYED');
      const dropped = await server.berth.db.selectFrom('revisions').select('id').where('id', '=', second.revisionId).executeTakeFirst();
      assert.equal(dropped, undefined, 'the second revision was dropped');
      await server.berth.db
        .updateTable('image_removals')
        .set({ next_attempt_at: new Date(0).toISOString() })
        .execute();
      server.berth.bus.publish({ topic: 'work', deploymentId: first.deploymentId });
      const active = (await api('GET', `/v2/deployments/${first.deploymentId}`)).body.active_revision_id;
      assert.equal(active, redeploy.body.latest_revision_id);
      await eventually(async () => {
        const row = await server.berth.db.selectFrom('image_removals').select('next_attempt_at').where('image_ref', '=', second.image).executeTakeFirst();
        return row !== undefined && row.next_attempt_at > new Date().toISOString();
      }, 'the reaper to look at the reused image');
      assert.ok(await hostImageId(second.image), 'the image the active redeploy runs stays');
      assert.ok(await registryDigest(reg(), second.image));
    });

    test('a removal that fails leaves the delete done, and is tried again until it succeeds', async () => {
      const { deploymentId, image } = await deployBuilt(api, `retried-${kind}`, integration);
      // A container of the image (not Berth's) keeps podman from removing it.
      const holder = (await run('podman', ['create', '--name', `berth-test-holder-${kind}-${Date.now()}`, image])).stdout.trim();
      assert.ok(holder, 'podman create');
      try {
        assert.equal((await api('DELETE', `/v2/deployments/${deploymentId}`)).status, 204);
        await eventually(async () => (await api('GET', `/v2/deployments/${deploymentId}`)).status === 404, 'the deployment to be gone');
        const failed = await eventually(
          async () => server.berth.db.selectFrom('image_removals').selectAll().where('image_ref', '=', image).where('attempts', '>', 0).executeTakeFirst(),
          'the removal to fail once',
          60_000,
        );
        assert.match(failed.last_error ?? '', /could not remove/);
        assert.ok(failed.next_attempt_at > new Date().toISOString(), 'tried again later');
        assert.ok(await hostImageId(image));
      } finally {
        await run('podman', ['rm', '-f', holder]);
      }
      await server.berth.db
        .updateTable('image_removals')
        .set({ next_attempt_at: new Date(0).toISOString(), last_error: null })
        .where('image_ref', '=', image)
        .execute();
      server.berth.bus.publish({ topic: 'work', deploymentId });
      await removalsDone(image);
      assert.equal(await hostImageId(image), null);
    });

    test("a hostile workspace's image under a moved tag survives another workspace's delete", async () => {
      const workspace = await api('POST', '/v1/workspaces', { body: { name: `hostile-${kind}-${Date.now()}` } });
      const key = await api('POST', '/v1/api-keys', { body: { name: 'hostile', workspace_id: workspace.body.id } });
      const hostile = client(server.url, { key: key.body.key });
      // Integrations are an admin's to register; the member's key does the rest.
      const hostileIntegration = await gitIntegration(client(server.url, { key: server.adminKey, tenant: workspace.body.id }));
      try {
        const theirs = await deployBuilt(hostile, `theirs-${kind}`, hostileIntegration);
        const ours = await deployBuilt(api, `ours-${kind}`, integration);
        const theirId = await hostImageId(theirs.image);
        const theirDigest = await registryDigest(reg(), theirs.image);
        const ourId = await hostImageId(ours.image);
        const ourDigest = await registryDigest(reg(), ours.image);
        assert.ok(ourId && ourDigest && ourId !== theirId);
        // Our tag now names their image, in the host's store and in the registry.
        assert.equal((await run('podman', ['tag', theirs.image, ours.image])).code, 0);
        const ourRepository = parseImageReference(ours.image)?.path as string;
        const password = await reg().pushCredential('test', ourRepository);
        await pushImage(buildah, theirs.image, { destination: ours.image, tlsVerify: false, credentials: { username: 'x', password } }, () => {});
        assert.equal(await registryDigest(reg(), ours.image), theirDigest);

        assert.equal((await api('DELETE', `/v2/deployments/${ours.deploymentId}`)).status, 204);
        await eventually(async () => (await api('GET', `/v2/deployments/${ours.deploymentId}`)).status === 404, 'our deployment to be gone');
        await removalsDone(ours.image);
        assert.equal(await hostImageId(theirs.image), theirId, 'their image keeps its name');
        assert.equal(await hostImageId(ours.image), theirId, 'the moved tag is not ours to remove');
        assert.equal(await registryDigest(reg(), theirs.image), theirDigest, 'their manifest stays in the registry');
        assert.equal(await registryDigest(reg(), ours.image), theirDigest);
        // What we built goes all the same, found by its id and digest rather than by the name.
        assert.equal(await hostImageId(ourId), null, 'our image, which nothing names any more, is gone');
        assert.equal(await registryDigest(reg(), `${ours.image.replace(/:[^:/]+$/, '')}@${ourDigest}`), null, 'our manifest is gone');
        const still = await hostile('GET', `/v2/deployments/${theirs.deploymentId}`);
        assert.equal(still.body.status, 'READY');
        assert.equal(still.body.active_revision_id, theirs.revisionId);
      } finally {
        await hostileIntegration.remove();
      }
    });
  });
});
