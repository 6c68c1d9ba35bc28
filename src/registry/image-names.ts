import { isRepositoryName, type RegistryLocation, RegistryLocationError } from '../domain/registry-location.js';

/**
 * The one naming rule for every repository Berth manages, so that the owning workspace is
 * evident from an image's name:
 *
 * - in Berth's registry (`BERTH_REGISTRY` = host + prefix): `<prefix>/<workspace id>/<deployment id>`
 *   holds the images Berth builds for the deployment, and `<prefix>/<workspace id>/<deployment id>/<name>`
 *   those the LangGraph CLI pushes with the deployment's push token;
 * - on this machine (no registry): `localhost/berth/<workspace id>/<deployment id>:<revision id>`.
 *
 * Names Berth wrote before this rule stay readable (`legacy` claims below): they are resolved to
 * their workspace through the deployment or revision they name. Pure functions: no database.
 */

/** Where images built without a registry are kept: the local store's `localhost/berth/…`. */
export const LOCAL_IMAGE_HOST = 'localhost';
export const LOCAL_NAMESPACE = 'berth';
// The path below a registry prefix where Berth's builder pushed before this rule (`berth/<deployment name>`).
const LEGACY_BUILD_SEGMENT = 'berth';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The repository path (without host) of a deployment in Berth's registry: `<prefix>/<workspace id>/<deployment id>`. */
export function deploymentRepository(location: Pick<RegistryLocation, 'pathPrefix'>, workspaceId: string, deploymentId: string): string {
  const path = [location.pathPrefix, workspaceId, deploymentId].filter(Boolean).join('/');
  if (!UUID.test(workspaceId) || !UUID.test(deploymentId) || !isRepositoryName(path)) {
    throw new RegistryLocationError(`workspace "${workspaceId}" and deployment "${deploymentId}" cannot name a repository`);
  }
  return path;
}

export interface BuiltImageName {
  /** The full reference the builder tags and the engine runs. */
  image: string;
  /** Its repository path below the host: what the builder's push credential covers. */
  repository: string;
}

/**
 * The name of an image Berth builds for a revision: in the deployment's own repository of the
 * registry when one is configured, else in the local namespace. The tag is the revision id, so
 * every build has a name of its own.
 */
export function builtImageName(
  registry: Pick<RegistryLocation, 'host' | 'pathPrefix'> | undefined,
  ids: { workspaceId: string; deploymentId: string; revisionId: string },
): BuiltImageName {
  if (!UUID.test(ids.revisionId)) throw new RegistryLocationError(`revision "${ids.revisionId}" cannot be an image tag`);
  const repository = deploymentRepository({ pathPrefix: registry ? registry.pathPrefix : LOCAL_NAMESPACE }, ids.workspaceId, ids.deploymentId);
  return { image: `${registry?.host ?? LOCAL_IMAGE_HOST}/${repository}:${ids.revisionId}`, repository };
}

export interface ImageReference {
  /** `host[:port]` as written, or null when the reference names none (a short name). */
  domain: string | null;
  /** The repository path below the domain. */
  path: string;
  tag: string | null;
  digest: string | null;
}

const DOMAIN = /^(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])(?:\.(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]))*(?::[0-9]+)?$/;
const TAG = /^\w[\w.-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;

/**
 * Reads an image reference as docker and podman do (`[domain/]path[:tag][@digest]`); the first
 * component is a domain when it holds a `.` or `:`, is `localhost`, or has capitals. Null when
 * the text is not a reference.
 */
export function parseImageReference(text: string): ImageReference | null {
  let rest = text;
  let digest: string | null = null;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return null;
  }
  let tag: string | null = null;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) return null;
  }
  const slash = rest.indexOf('/');
  const first = slash < 0 ? '' : rest.slice(0, slash);
  const hasDomain = slash >= 0 && (/[.:]/.test(first) || first === LOCAL_IMAGE_HOST || first !== first.toLowerCase());
  const domain = hasDomain ? first : null;
  const path = hasDomain ? rest.slice(slash + 1) : rest;
  if ((domain !== null && !DOMAIN.test(domain)) || !isRepositoryName(path)) return null;
  return { domain, path, tag, digest };
}

/** Who an image name says it belongs to; one name may be read more than one way (see classifyImage). */
export type ImageClaim =
  | { layout: 'workspace'; workspaceId: string; deploymentId: string }
  /** `<prefix>/<deployment id>/<name>`: pushed with a push token issued before the workspace rule. */
  | { layout: 'legacy-push'; deploymentId: string }
  /** `<prefix>/berth/<deployment name>:<revision id>` or `localhost/berth/<deployment name>:<revision id>`: built before the rule. */
  | { layout: 'legacy-build'; deploymentName: string; revisionId: string | null };

export type ImageClass =
  /** Not Berth's: another registry, or a path of the registry host outside Berth's prefix. */
  | { kind: 'foreign' }
  /** Text a local image store would read as an image id (or id prefix), which names no repository at all. */
  | { kind: 'local-id' }
  /** In Berth's registry or local namespace; it belongs to a workspace only through one of its claims. */
  | { kind: 'managed'; place: 'registry' | 'local'; repository: string; claims: ImageClaim[] };

// podman reads a bare hex string (even a few characters) as an image id prefix, and `sha256:<hex>` as an id.
const LOCAL_ID = /^(?:sha256:)?[0-9a-f]+$/;

/**
 * Sorts an image reference into Berth's registry, Berth's local namespace, or neither. A short
 * name `berth/…` counts as local, since podman looks short names up as `localhost/…` first; the
 * registry host is compared without regard to case, as DNS does.
 */
export function classifyImage(text: string, registry: RegistryLocation | undefined): ImageClass {
  if (LOCAL_ID.test(text)) return { kind: 'local-id' };
  const reference = parseImageReference(text);
  if (!reference) return { kind: 'foreign' };
  const domain = reference.domain?.toLowerCase() ?? null;
  if ((domain === null || domain === LOCAL_IMAGE_HOST) && reference.path.startsWith(`${LOCAL_NAMESPACE}/`)) {
    const rest = reference.path.slice(LOCAL_NAMESPACE.length + 1).split('/');
    return { kind: 'managed', place: 'local', repository: reference.path, claims: localClaims(rest, reference.tag) };
  }
  if (registry && domain === registry.host.toLowerCase()) {
    const prefix = registry.pathPrefix;
    if (prefix !== '' && !reference.path.startsWith(`${prefix}/`)) return { kind: 'foreign' };
    const rest = (prefix === '' ? reference.path : reference.path.slice(prefix.length + 1)).split('/');
    return { kind: 'managed', place: 'registry', repository: reference.path, claims: registryClaims(rest, reference.tag) };
  }
  return { kind: 'foreign' };
}

function localClaims(segments: string[], tag: string | null): ImageClaim[] {
  const [first, second] = segments;
  if (segments.length === 2 && UUID.test(first ?? '') && UUID.test(second ?? '')) {
    return [{ layout: 'workspace', workspaceId: first as string, deploymentId: second as string }];
  }
  if (segments.length === 1 && first) return [{ layout: 'legacy-build', deploymentName: first, revisionId: revisionTag(tag) }];
  return [];
}

function registryClaims(segments: string[], tag: string | null): ImageClaim[] {
  const [first, second] = segments;
  const claims: ImageClaim[] = [];
  if (segments.length >= 2 && UUID.test(first ?? '') && UUID.test(second ?? '')) {
    claims.push({ layout: 'workspace', workspaceId: first as string, deploymentId: second as string });
  }
  // The old push tokens covered `<deployment id>/*`: a name of the CLI's choosing one level down.
  if (segments.length >= 2 && UUID.test(first ?? '')) claims.push({ layout: 'legacy-push', deploymentId: first as string });
  if (segments.length === 2 && first === LEGACY_BUILD_SEGMENT && second) {
    claims.push({ layout: 'legacy-build', deploymentName: second, revisionId: revisionTag(tag) });
  }
  return claims;
}

function revisionTag(tag: string | null): string | null {
  return tag !== null && UUID.test(tag) ? tag : null;
}

export interface DeploymentPushTarget {
  /** The push-token answer's `registry_url`: the CLI pushes `<registry_url>/<name>:<tag>`. */
  registryUrl: string;
  /** The repository grant for the deployment's push credential: every repository below its path. */
  repositoryGrant: string;
  /** The repository path (without host) below which the deployment's images live. */
  repositoryPath: string;
}

/**
 * Where `langgraph deploy` pushes: below the deployment's repository. The CLI appends an image
 * name of its own choosing, so the credential covers every repository below that path (not the
 * path itself, where Berth's builder pushes), and never another deployment's or workspace's.
 */
export function deploymentPushTarget(location: RegistryLocation, workspaceId: string, deploymentId: string): DeploymentPushTarget {
  const repositoryPath = deploymentRepository(location, workspaceId, deploymentId);
  return { registryUrl: `${location.host}/${repositoryPath}`, repositoryGrant: `${repositoryPath}/*`, repositoryPath };
}
