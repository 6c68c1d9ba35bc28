import { pushImage } from '../../../src/image-builds/push-image.js';
import { runTool } from '../../../src/containers/commands.js';
import type { ResolvedBuilder } from '../../../src/image-builds/types.js';
import type { BuildDriver, BuildRequest, BuiltImage, StepContext } from '../../../src/engine/drivers/types.js';
import { builtImageName } from '../../../src/registry/image-names.js';
import type { Registry } from '../../../src/registry/setup.js';

/**
 * "Builds" a revision into an image of its own in the host's store without a Dockerfile: a
 * commit of one small base image with the revision's label (as Berth's builds label theirs),
 * so each revision gets a distinct image id in seconds; pushed, as Berth's builder pushes,
 * when the server has a registry. For tests of what happens to built images afterwards.
 */
export class CommittingBuildDriver implements BuildDriver {
  readonly name = 'committing';

  constructor(
    private readonly buildah: ResolvedBuilder,
    private readonly base: string,
    private readonly registry: () => Registry | undefined,
  ) {}

  async build(request: BuildRequest, context: StepContext): Promise<BuiltImage> {
    const registry = this.registry();
    const location = registry?.settings.location;
    const { image, repository } = builtImageName(location, request);
    const container = (await this.#buildah(['from', '--pull=false', this.base])).trim();
    try {
      await this.#buildah(['config', '--label', `berth.revision-id=${request.revisionId}`, container]);
      const id = (await this.#buildah(['commit', '--quiet', container, image])).trim();
      await context.log('INFO', `Committed ${image} (${id})`);
      if (!registry) return { image, commitSha: null, id };
      const password = await registry.pushCredential('berth-builder', repository);
      const pushed = await pushImage(this.buildah, image, { tlsVerify: false, credentials: { username: 'oauth2accesstoken', password } }, () => {});
      return { image, commitSha: null, id, digest: pushed.digest ?? null };
    } finally {
      await runTool(this.buildah, ['rm', container]);
    }
  }

  async #buildah(args: string[]): Promise<string> {
    const result = await runTool(this.buildah, args);
    if (result.code !== 0) throw new Error(`buildah ${args[0]} failed: ${result.stderr}`);
    return result.stdout;
  }
}
