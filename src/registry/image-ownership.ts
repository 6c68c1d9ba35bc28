import { classifyImage, type ImageClaim, LOCAL_IMAGE_HOST, LOCAL_NAMESPACE } from './image-names.js';
import type { RegistryLocation } from '../domain/registry-location.js';

/**
 * Whether a workspace may run an image: images of Berth's registry and of Berth's local
 * namespace belong to the workspace their name says (registry/image-names.ts) and to no other;
 * every other image is the workspace's own business. The API refuses an `image_uri` that fails
 * this; the engine fails a revision whose image fails it (a row stored before the rule) before
 * any registry credential is minted for it. The lookups by id come from the store
 * (store/repositories/image-owners.ts), so the rule itself holds no SQL.
 */

export interface ImageOwnerLookups {
  /** The workspace of a deployment, or undefined when there is no such deployment (any more). */
  workspaceOfDeployment(deploymentId: string): Promise<string | undefined>;
  /** The workspace and deployment name of a revision, or undefined when there is no such revision (any more). */
  ownerOfRevision(revisionId: string): Promise<{ workspaceId: string; deploymentName: string } | undefined>;
}

export interface ImageQuery {
  workspaceId: string;
  image: string;
  /**
   * The deployment, when the image is one Berth's builder named for it (a revision's
   * `image_ref`, never client input). Names built before the rule carry the deployment's name
   * and a revision id as tag, and that revision may have been pruned since.
   */
  builtFor?: { deploymentName: string };
}

export type ImageVerdict =
  /** `registryRepository`: the repository of Berth's registry to pull it from with Berth's credential, if it is there. */
  { allowed: true; registryRepository: string | null } | { allowed: false; reason: string };

export async function judgeImage(owners: ImageOwnerLookups, registry: RegistryLocation | undefined, query: ImageQuery): Promise<ImageVerdict> {
  const found = classifyImage(query.image, registry);
  if (found.kind === 'foreign') return { allowed: true, registryRepository: null };
  const shown = quoted(query.image);
  if (found.kind === 'local-id') {
    return {
      allowed: false,
      reason: `Image ${shown} reads as the id of an image stored on Berth's machine, which may be another workspace's; name the image by its full reference (registry/repository:tag or @digest).`,
    };
  }
  for (const claim of found.claims) {
    if (await claimHolds(owners, claim, query)) return { allowed: true, registryRepository: found.place === 'registry' ? found.repository : null };
  }
  // The same answer whether the repository is another workspace's or nobody's: no way to probe ids.
  if (found.place === 'local') {
    return {
      allowed: false,
      reason: `Image ${shown} is in Berth's local image namespace (${LOCAL_IMAGE_HOST}/${LOCAL_NAMESPACE}/…) but is not an image built for a deployment of this workspace.`,
    };
  }
  const root = [registry?.host, registry?.pathPrefix].filter(Boolean).join('/');
  return {
    allowed: false,
    reason:
      `Image ${shown} is in Berth's registry but not in a repository of a deployment of this workspace ` +
      `(${root}/<workspace id>/<deployment id>/…); push it with a push token of one of this workspace's deployments (POST /v2/deployments/{id}/push-token).`,
  };
}

async function claimHolds(owners: ImageOwnerLookups, claim: ImageClaim, query: ImageQuery): Promise<boolean> {
  switch (claim.layout) {
    case 'workspace':
      return claim.workspaceId === query.workspaceId && (await owners.workspaceOfDeployment(claim.deploymentId)) === query.workspaceId;
    case 'legacy-push':
      return (await owners.workspaceOfDeployment(claim.deploymentId)) === query.workspaceId;
    case 'legacy-build': {
      if (query.builtFor && query.builtFor.deploymentName.toLowerCase() === claim.deploymentName) return true;
      if (!claim.revisionId) return false;
      const owner = await owners.ownerOfRevision(claim.revisionId);
      return owner?.workspaceId === query.workspaceId && owner.deploymentName.toLowerCase() === claim.deploymentName;
    }
  }
}

function quoted(image: string): string {
  return `'${image.length > 200 ? `${image.slice(0, 200)}…` : image}'`;
}
