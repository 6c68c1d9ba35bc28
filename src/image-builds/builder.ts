/**
 * Building images from a Dockerfile and a context directory with whichever builder the
 * machine has (buildah, else `podman build`, else `docker build`), pushing them, and
 * removing them. Knows nothing of deployments, revisions or the database.
 */
import { lastOutputLine, runTool } from '../containers/commands.js';
import { BuildError, type ResolvedBuilder } from './types.js';

export { buildImage } from './build-image.js';
export { detectBuilder } from '../containers/detect.js';
export { pushImage, type RegistryCredentials } from './push-image.js';
export { BuildError, type BuilderPreference, type ResolvedBuilder } from './types.js';

/** Removes an image by name; true when it was removed, false when there was none. */
export async function removeImage(builder: ResolvedBuilder, image: string, signal?: AbortSignal): Promise<boolean> {
  const result = await runTool(builder, ['rmi', image], { signal });
  if (result.code === 0) return true;
  if (/image not known|no such image|image not found|not found in local storage|No such image/i.test(result.stderr)) return false;
  throw new BuildError(`Could not remove the image ${image}: ${lastOutputLine(result)}.`);
}
