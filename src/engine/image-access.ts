import { type ImageVerdict, judgeImage } from '../registry/image-ownership.js';
import { imageOwners } from '../store/repositories/image-owners.js';
import type { DeploymentRecord } from '../store/repositories/deployments.js';
import type { RevisionRecord } from '../store/repositories/revisions.js';
import type { WorkContext } from './context.js';
import type { RunRequest } from './drivers/types.js';

/** The image a revision runs: what it was built into, else the image it names. */
export function imageOf(revision: RevisionRecord): string {
  return revision.image_ref ?? revision.source_revision_config.image_uri ?? '';
}

/**
 * Whether the revision's workspace may run the image (registry/image-ownership.ts). The API
 * refuses such an `image_uri` already; this catches rows stored before the rule, before any
 * credential for the image is minted or the runtime looks for it in its local store.
 */
export function judgeRevisionImage(ctx: WorkContext, deployment: DeploymentRecord, revision: RevisionRecord, image: string): Promise<ImageVerdict> {
  const builtByBerth = revision.image_ref !== null && revision.image_ref === image;
  return judgeImage(imageOwners(ctx.db), ctx.registry?.settings.location, {
    workspaceId: deployment.workspace_id,
    image,
    ...(builtByBerth ? { builtFor: { deploymentName: deployment.name } } : {}),
  });
}

/** A pull credential for one repository of Berth's registry (one the workspace owns), and for nothing else. */
export async function pullCredentials(ctx: WorkContext, revision: RevisionRecord, repository: string | null): Promise<Pick<RunRequest, 'pull'>> {
  const registry = ctx.registry;
  if (!registry || repository === null) return {};
  const password = await registry.pullCredential(`revision:${revision.id}`, repository);
  return { pull: { username: 'oauth2accesstoken', password, tlsVerify: registry.settings.tlsVerify } };
}
