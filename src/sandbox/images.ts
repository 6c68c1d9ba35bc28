import { access, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { lastOutputLine, runTool } from '../containers/commands.js';
import { localImageId } from '../image-builds/image-store.js';
import { BuildError, type ResolvedBuilder } from '../image-builds/types.js';
import { withDirectoryLock } from '../locks/directory-lock.js';
import { runHostProgram, SYSTEM_PATH } from './host.js';
import type { BuildSandbox } from './sandbox.js';

/**
 * Moving images across the sandbox's boundary. The build user's stores hold layers owned by
 * its subordinate ids, which the host's store (root's, which runs containers) cannot read as
 * they are; images cross as OCI layouts with uncompressed layers, which both sides read and
 * in which a layer already present is not written again, so after a workspace's first build
 * only the layers a build changed are copied.
 */

/** Where the host's image store is read by skopeo (root, default store). */
const HOST_STORE = 'containers-storage:';
const UNCOMPRESSED = '--dest-oci-accept-uncompressed-layers';

/**
 * Makes a configured base image available to every workspace's builds, from the bases
 * store: copied from the host's store when it has it (built by scripts/build-base-images.sh,
 * or pulled by the operator), else pulled by the build user from its registry. Nothing
 * happens when the bases store already holds the same image.
 */
export async function provideBaseImage(sandbox: BuildSandbox, host: ResolvedBuilder, image: string, log: (line: string) => Promise<void>): Promise<void> {
  const bases = sandbox.basesBuilder;
  const hostId = await imageId(host, image);
  if (hostId && hostId === (await imageId(bases, image))) return;
  // Builds that start at once on a base the store lacks would each copy it into the same store
  // and layout, and fail on each other's half-written files: one copies, the others wait for
  // it (in this process and any other sharing the build directory), then find it there.
  await withDirectoryLock(path.join(sandbox.settings.dir, 'bases'), {}, () => provideLocked(sandbox, hostId, image, log));
}

async function provideLocked(sandbox: BuildSandbox, hostId: string | null, image: string, log: (line: string) => Promise<void>): Promise<void> {
  const bases = sandbox.basesBuilder;
  const basesId = await imageId(bases, image);
  if (hostId && hostId === basesId) return;
  if (!hostId) {
    if (basesId) return;
    await log(`Pulling the base image ${image} for this host's builds`);
    const pulled = await runTool(bases, ['pull', '--quiet', image], { timeoutMs: 15 * 60_000 });
    if (pulled.code !== 0) throw new BuildError(`Could not pull the base image ${image}: ${lastOutputLine(pulled)}.`);
    return;
  }
  await log(`Making the base image ${image} available to builds`);
  // Root writes the base out into a directory of its own, then hands it to the build user, who
  // reads it into the bases store and into the bases layout (which exports link their blobs from).
  const transfer = await sandbox.newWorkDir('base');
  try {
    const from = `oci:${path.join(transfer.path, 'layout')}:base`;
    await copy(sandbox.skopeo(false, transfer.path), [UNCOMPRESSED, `${HOST_STORE}${image}`, from], `copy the base image ${image} out of the host's store`);
    await sandbox.handOver(transfer);
    const asUser = sandbox.skopeo(true, transfer.path);
    await copy(asUser, [from, `${sandbox.basesReference}${image}`], `copy the base image ${image} into the builds' store`);
    await copy(asUser, [UNCOMPRESSED, from, `oci:${sandbox.basesLayout}:${layoutReference(image)}`], `keep the base image ${image}'s layers for exports`);
  } finally {
    await sandbox.removeWorkDir(transfer);
  }
}

/**
 * Copies a built image from the workspace's store into the host's, as `hostName`, through the
 * workspace's export layout: its blobs stay between builds (and the base images' are linked
 * in), so only the layers a build changed are written. One export at a time per workspace.
 */
export async function exportBuiltImage(sandbox: BuildSandbox, workspaceId: string, deploymentId: string, built: string, hostName: string): Promise<void> {
  const layoutDir = await sandbox.exportDir(workspaceId);
  const scratch = path.join(await sandbox.workspaceDir(workspaceId), 'tmp');
  const layout = `oci:${layoutDir}:${deploymentId}`;
  await withDirectoryLock(layoutDir, {}, async () => {
    await linkBaseBlobs(sandbox, layoutDir);
    await copy(sandbox.skopeo(true, scratch), [UNCOMPRESSED, `${await sandbox.storeReference(workspaceId)}${built}`, layout], 'export the built image');
    await copy(sandbox.skopeo(false, scratch), [layout, `${HOST_STORE}${hostName}`], "copy the built image into the host's store");
    await pruneLayout(sandbox, layoutDir).catch(() => {});
  });
}

/**
 * Removes a built image from the sandbox's side: its name from the workspace's store (the
 * layers its later builds share stay, as the store's cache), and the deployment's reference
 * from the workspace's export layout while it still names this image (its config digest is
 * the image id), with the blobs nothing else refers to. Only Berth's builds name images in a
 * workspace's store and a build cannot write a name there, so the name is the revision's own.
 * Nothing is made for a workspace that has no store (none built, or its disk was removed).
 */
export async function forgetBuiltImage(sandbox: BuildSandbox, workspaceId: string, deploymentId: string, image: string, id: string | null): Promise<void> {
  // The workspace's directory is made by its first build; its disk may be unmounted since (a restart), and builderFor mounts it.
  if (await exists(path.join(sandbox.settings.dir, 'workspaces', workspaceId))) {
    const builder = await sandbox.builderFor(workspaceId);
    if ((await localImageId(builder, image)) !== null) {
      const removed = await runTool(builder, ['rmi', image]);
      if (removed.code !== 0 && (await localImageId(builder, image)) !== null) {
        throw new Error(`could not remove ${image} from the build store of workspace ${workspaceId}: ${lastOutputLine(removed)}`);
      }
    }
  }
  const layoutDir = path.join(sandbox.settings.dir, 'exports', workspaceId);
  if (id === null || !(await exists(path.join(layoutDir, 'index.json')))) return;
  await withDirectoryLock(layoutDir, {}, async () => {
    const index = JSON.parse(await readFile(path.join(layoutDir, 'index.json'), 'utf8')) as {
      manifests?: (Descriptor & { annotations?: Record<string, string> })[];
    };
    const manifests = index.manifests ?? [];
    const kept = [];
    for (const entry of manifests) {
      const named = entry.annotations?.['org.opencontainers.image.ref.name'] === deploymentId;
      if (named && (await configDigest(layoutDir, entry.digest)) === `sha256:${id.replace(/^sha256:/, '')}`) continue;
      kept.push(entry);
    }
    if (kept.length === manifests.length) return;
    // The build user owns the layout: it writes the new index beside the old and renames it over.
    const next = path.join(layoutDir, 'index.json.next');
    await runTool({ binary: 'tee', env: { PATH: SYSTEM_PATH }, runAs: { uid: sandbox.user.uid, gid: sandbox.user.gid } }, [next], {
      input: JSON.stringify({ ...index, manifests: kept }),
    });
    await runHostProgram('mv', ['-f', '--', next, path.join(layoutDir, 'index.json')], sandbox.user);
    await pruneLayout(sandbox, layoutDir);
  });
}

async function configDigest(layoutDir: string, manifestDigest: string): Promise<string | undefined> {
  const manifest = JSON.parse(await readFile(blobPath(layoutDir, manifestDigest), 'utf8')) as { config?: Descriptor };
  return manifest.config?.digest;
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/** Hard links of the base images' layer blobs into an export layout, made by the build user, who owns both. */
async function linkBaseBlobs(sandbox: BuildSandbox, layoutDir: string): Promise<void> {
  const from = path.join(sandbox.basesLayout, 'blobs', 'sha256');
  const names = (await readdir(from).catch(() => [] as string[])).filter((name) => /^[0-9a-f]{64}$/.test(name));
  if (names.length === 0) return;
  const to = path.join(layoutDir, 'blobs', 'sha256');
  await runHostProgram('mkdir', ['-p', to], sandbox.user);
  await runHostProgram('ln', ['-f', '-t', to, ...names.map((name) => path.join(from, name))], sandbox.user);
}

/** A layout reference from an image name (references may not hold `/` or `:`). */
function layoutReference(image: string): string {
  return image.replace(/[^A-Za-z0-9._-]/g, '_');
}

async function copy(skopeo: ResolvedBuilder, args: string[], what: string): Promise<void> {
  const result = await runTool(skopeo, ['copy', '--quiet', ...args], { timeoutMs: 30 * 60_000 });
  if (result.code !== 0) throw new BuildError(`Could not ${what}: ${lastOutputLine(result)}.`);
}

async function imageId(builder: ResolvedBuilder, image: string): Promise<string | null> {
  const result = await runTool(builder, ['inspect', '--type', 'image', '--format', '{{.FromImageID}}', image]);
  return result.code === 0 ? result.stdout.trim() || null : null;
}

interface Descriptor {
  digest: string;
  mediaType?: string;
}

/**
 * Keeps only the blobs the layout's index refers to (its one image, `latest`): the export is
 * a cache of the newest build's layers, not an archive. The build user owns the layout, so
 * it is only read here, and the blobs go by the build user's hand.
 */
async function pruneLayout(sandbox: BuildSandbox, layoutDir: string): Promise<void> {
  const index = JSON.parse(await readFile(path.join(layoutDir, 'index.json'), 'utf8')) as { manifests?: Descriptor[] };
  const keep = new Set<string>();
  for (const entry of index.manifests ?? []) {
    keep.add(entry.digest);
    const manifest = JSON.parse(await readFile(blobPath(layoutDir, entry.digest), 'utf8')) as { config?: Descriptor; layers?: Descriptor[] };
    if (manifest.config?.digest) keep.add(manifest.config.digest);
    for (const layer of manifest.layers ?? []) keep.add(layer.digest);
  }
  const dir = path.join(layoutDir, 'blobs', 'sha256');
  const stale = (await readdir(dir)).filter((name) => /^[0-9a-f]{64}$/.test(name) && !keep.has(`sha256:${name}`)).map((name) => path.join(dir, name));
  if (stale.length > 0) await runHostProgram('rm', ['-f', '--', ...stale], sandbox.user);
}

function blobPath(layoutDir: string, digest: string): string {
  const hex = /^sha256:([0-9a-f]{64})$/.exec(digest)?.[1];
  if (!hex) throw new Error(`unexpected digest ${digest}`);
  return path.join(layoutDir, 'blobs', 'sha256', hex);
}
