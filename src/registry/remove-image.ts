import { parseImageReference } from './image-names.js';
import type { Registry } from './setup.js';

// Every manifest shape Berth's builders push, so the registry answers the tag's own digest.
const MANIFEST_TYPES = [
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
].join(', ');

const REQUEST_TIMEOUT_MS = 30_000;

export type RegistryRemoval = 'removed' | 'absent' | 'moved' | 'foreign';

/**
 * Deletes the manifest a tag of Berth's registry names, if, and only if, the tag still names
 * `digest`: the registry deletes by digest (every tag of it goes), so a tag pushed again
 * since, over another image, keeps that image. The layers stay until the operator runs the
 * registry's garbage collection (docs/security.md). A name outside Berth's registry is
 * `foreign` and not touched.
 */
export async function removeRegistryImage(registry: Registry, reference: string, digest: string): Promise<RegistryRemoval> {
  const parsed = parseImageReference(reference);
  const { host, pathPrefix } = registry.settings.location;
  if (!parsed?.tag || parsed.domain?.toLowerCase() !== host.toLowerCase()) return 'foreign';
  if (pathPrefix !== '' && !parsed.path.startsWith(`${pathPrefix}/`)) return 'foreign';
  const token = await registry.removalToken(parsed.path);
  const base = `${registry.settings.tlsVerify ? 'https' : 'http'}://${host}/v2/${parsed.path}/manifests/`;
  const headers = { Authorization: `Bearer ${token}`, Accept: MANIFEST_TYPES };
  const tagged = await fetch(`${base}${encodeURIComponent(parsed.tag)}`, { method: 'HEAD', headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  if (tagged.status === 404) return 'absent';
  if (!tagged.ok) throw new Error(`the registry answered ${tagged.status} for ${reference}`);
  if (tagged.headers.get('docker-content-digest') !== digest) return 'moved';
  const deleted = await fetch(`${base}${digest}`, { method: 'DELETE', headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  if (deleted.status === 404) return 'absent';
  if (!deleted.ok) {
    const why = (await deleted.text().catch(() => '')).slice(0, 300);
    throw new Error(`the registry refused to delete ${reference} (${deleted.status}${why ? `: ${why}` : ''}); deletes need storage.delete.enabled in its configuration`);
  }
  return 'removed';
}
