import { fail } from '../domain/errors.js';
import { judgeImage } from '../registry/image-ownership.js';
import type { RegistryLocation } from '../domain/registry-location.js';
import type { Executor } from '../store/database.js';
import { imageOwners } from '../store/repositories/image-owners.js';

/** For create and PATCH: an `image_uri` the workspace may not use answers 403 `image_not_in_workspace`. */
export async function assertImageInWorkspace(db: Executor, registry: RegistryLocation | undefined, workspaceId: string, image: string): Promise<void> {
  const verdict = await judgeImage(imageOwners(db), registry, { workspaceId, image });
  if (!verdict.allowed) throw fail('image_not_in_workspace', verdict.reason);
}
