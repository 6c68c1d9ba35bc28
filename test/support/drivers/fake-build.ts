import { createHash } from 'node:crypto';
import type { BuildDriver, BuildRequest, BuiltImage, StepContext } from '../../../src/engine/drivers/types.js';

/**
 * Pretends to build: names an image after the repository and ref, without fetching
 * anything. For tests and benchmarks of the engine's build path only; never the default.
 */
export class FakeBuildDriver implements BuildDriver {
  readonly name = 'fake';

  async build(request: BuildRequest, context: StepContext): Promise<BuiltImage> {
    const what = request.source.kind === 'git' ? `${request.source.url}#${request.source.ref}` : request.source.path;
    const commitSha = createHash('sha1').update(what).digest('hex');
    await context.log('INFO', `Building ${what} (${request.graphConfigPath})`);
    return { image: `berth.local/${request.deploymentId}:${commitSha.slice(0, 12)}`, commitSha };
  }
}
