import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { containersEnv, run } from '../build/helpers.js';
import { runTool } from '../../src/containers/commands.js';
import { localImageId } from '../../src/image-builds/image-store.js';
import type { BuildSandboxSettings } from '../../src/config.js';
import { LangGraphBuildDriver } from '../../src/engine/drivers/langgraph-build.js';
import { exportBuiltImage } from '../../src/sandbox/images.js';
import { BuildSandbox } from '../../src/sandbox/sandbox.js';
import { buildSandboxUnavailable, type TestBuildDir, tempBuildDir } from '../support/build-sandbox.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';

/**
 * The sandbox's side of removing a built image: its name in the workspace's build store, the
 * deployment's reference in the workspace's export layout, and its copy in the host's store,
 * through the build driver a revision was built with. The image is a busybox layer committed
 * by the build user in the workspace's store, as a build would leave it.
 */
describe('a sandboxed build image removed', async () => {
  const unavailable = await buildSandboxUnavailable();
  if (unavailable) {
    process.stdout.write(`# SKIP a sandboxed build image removed: ${unavailable}\n`);
    return;
  }
  holdMachineTurnForSuite({ before, after });
  let dir: TestBuildDir;
  let settings: BuildSandboxSettings;
  const workspaceId = randomUUID();
  const deploymentId = randomUUID();
  const image = `localhost/berth/${workspaceId}/${deploymentId}:${randomUUID()}`;

  before(async () => {
    dir = await tempBuildDir();
    settings = { user: process.env.BERTH_BUILD_USER ?? 'berth-build', dir: dir.path, memoryMb: 512, cpus: 1, pids: 256, diskMb: 0, denyNetworks: [] };
  });
  after(async () => {
    await run('podman', ['rmi', image]);
    await dir?.remove();
  });

  test('leaves the workspace store, the export layout and the host store', async () => {
    const sandbox = await BuildSandbox.prepare(settings);
    assert.ok(sandbox instanceof BuildSandbox, String(sandbox));
    const store = await sandbox.builderFor(workspaceId);
    const busybox = path.join(sandbox.settings.dir, 'contexts', 'busybox');
    await run('install', ['-m', '0755', '/bin/busybox', busybox]);
    const from = await runTool(store, ['from', 'scratch']);
    assert.equal(from.code, 0, from.stderr);
    const container = from.stdout.trim();
    for (const args of [
      ['copy', container, busybox, '/busybox'],
      ['commit', '--quiet', container, image],
      ['rm', container],
    ]) {
      const done = await runTool(store, args);
      assert.equal(done.code, 0, `buildah ${args[0]}: ${done.stderr}`);
    }
    await exportBuiltImage(sandbox, workspaceId, deploymentId, image, image);
    const host = { kind: 'buildah' as const, binary: 'buildah', env: containersEnv() };
    const id = await localImageId(host, image);
    assert.ok(id, 'in the host store');
    const layoutIndex = path.join(await sandbox.exportDir(workspaceId), 'index.json');
    const named = async () =>
      ((JSON.parse(await readFile(layoutIndex, 'utf8')) as { manifests?: { annotations?: Record<string, string> }[] }).manifests ?? []).filter(
        (entry) => entry.annotations?.['org.opencontainers.image.ref.name'] === deploymentId,
      ).length;
    assert.equal(await named(), 1, 'in the export layout');

    const driver = new LangGraphBuildDriver({
      dataDir: path.join(dir.path, 'data'),
      builder: 'buildah',
      baseImages: {},
      allowLocal: false,
      knownHostsFile: path.join(os.tmpdir(), 'none'),
      env: containersEnv(),
      sandbox: settings,
    });
    await driver.forgetImage({ workspaceId, deploymentId, image, id });
    assert.equal(await localImageId(host, image), null, 'gone from the host store');
    assert.equal(await localImageId(store, image), null, 'gone from the workspace store');
    assert.equal(await named(), 0, 'gone from the export layout');
    // Removing again finds nothing and is no error (a retried removal).
    await driver.forgetImage({ workspaceId, deploymentId, image, id });
  });
});
