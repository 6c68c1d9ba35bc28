import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runBuilderCommand } from './commands.js';
import { type RegistryCredentials, registryOf } from './push-image.js';
import type { ResolvedBuilder } from './types.js';

/** The id of an image in the builder's store (the host's), or null when the store has no image of that name. */
export async function localImageId(builder: ResolvedBuilder, image: string, signal?: AbortSignal): Promise<string | null> {
  const args =
    builder.kind === 'buildah' ? ['inspect', '--type', 'image', '--format', '{{.FromImageID}}', image] : ['image', 'inspect', '--format', '{{.Id}}', image];
  const result = await runBuilderCommand(builder, args, { signal, timeoutMs: 30_000 });
  const id = result.stdout.trim().split('\n')[0]?.trim() ?? '';
  return result.code === 0 && id !== '' ? id : null;
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
    const result = await runBuilderCommand({ binary: 'skopeo', env }, [...args, `docker://${image}`], { signal: options.signal, timeoutMs: 30_000 });
    return result.code === 0;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
