import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runTool } from '../containers/commands.js';
import { type RegistryCredentials, registryOf } from './push-image.js';
import type { ResolvedBuilder } from './types.js';

/** A program that reads and writes one local image store: buildah, podman or docker. */
export type ImageStoreTool = Pick<ResolvedBuilder, 'kind' | 'binary' | 'env' | 'globalArgs' | 'runAs'>;

/** The id of the image a name points at in the store, without docker's `sha256:`; null when the store has no image of that name. */
export async function localImageId(tool: ImageStoreTool, image: string, signal?: AbortSignal): Promise<string | null> {
  const args =
    tool.kind === 'buildah' ? ['inspect', '--type', 'image', '--format', '{{.FromImageID}}', image] : ['image', 'inspect', '--format', '{{.Id}}', image];
  const result = await runTool(tool, args, { signal, timeoutMs: 30_000 });
  const id = bareId(result.stdout.trim().split('\n')[0]?.trim() ?? '');
  return result.code === 0 && id !== '' ? id : null;
}

export function bareId(id: string): string {
  return id.replace(/^sha256:/, '');
}

/**
 * Whether a registry still has the image, asked with skopeo (a manifest read, no layers).
 * The credentials go to a private auth file, never to argv. False on any failure: the
 * caller then builds, which is always safe.
 */
export async function registryHasImage(
  env: NodeJS.ProcessEnv,
  image: string,
  options: { tlsVerify: boolean; credentials?: RegistryCredentials; signal?: AbortSignal },
): Promise<boolean> {
  const work = await mkdtemp(path.join(os.tmpdir(), 'berth-inspect-'));
  try {
    const args = ['inspect', '--raw', `--tls-verify=${options.tlsVerify}`];
    if (options.credentials) {
      const file = path.join(work, 'auth.json');
      const auth = Buffer.from(`${options.credentials.username}:${options.credentials.password}`).toString('base64');
      await writeFile(file, JSON.stringify({ auths: { [registryOf(image, 'buildah')]: { auth } } }), { mode: 0o600 });
      args.push('--authfile', file);
    }
    const result = await runTool({ binary: 'skopeo', env }, [...args, `docker://${image}`], { signal: options.signal, timeoutMs: 30_000 });
    return result.code === 0;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
