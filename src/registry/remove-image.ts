import { parseImageReference } from './image-names.js';
import type { Registry } from './setup.js';

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const REQUEST_TIMEOUT_MS = 30_000;

export type RegistryRemoval = 'removed' | 'absent' | 'foreign';

/**
 * Deletes the manifest Berth pushed, by its digest: the registry deletes by digest, so a tag
 * of the name pushed again since, over another image, keeps that image (and any tag still
 * naming this digest goes with it: in a deployment's own repository, only this build's). The
 * layers stay until the operator runs the registry's garbage collection (docs/security.md). A
 * name outside Berth's registry is `foreign` and not touched.
 */
export async function removeRegistryImage(registry: Registry, reference: string, digest: string): Promise<RegistryRemoval> {
  const parsed = parseImageReference(reference);
  const { host, pathPrefix } = registry.settings.location;
  if (!parsed || parsed.domain?.toLowerCase() !== host.toLowerCase()) return 'foreign';
  if (pathPrefix !== '' && !parsed.path.startsWith(`${pathPrefix}/`)) return 'foreign';
  if (!DIGEST.test(digest)) throw new Error(`"${digest.slice(0, 100)}" is not a manifest digest`);
  const token = await registry.removalToken(parsed.path);
  const url = `${registry.settings.tlsVerify ? 'https' : 'http'}://${host}/v2/${parsed.path}/manifests/${digest}`;
  const deleted = await fetch(url, { method: 'DELETE', headers: { Authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  if (deleted.status === 404) return 'absent';
  if (!deleted.ok) {
    const why = (await deleted.text().catch(() => '')).slice(0, 300);
    throw new Error(
      `the registry refused to delete ${reference} (${deleted.status}${why ? `: ${why}` : ''}); deletes need storage.delete.enabled in its configuration`,
    );
  }
  return 'removed';
}
