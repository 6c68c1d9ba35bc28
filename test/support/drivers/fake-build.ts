import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { BuildDriver, BuildRequest, BuiltImage, IdentifiedBuild, StepContext } from '../../../src/engine/drivers/types.js';

/**
 * Pretends to build: names an image after the repository and ref, without fetching
 * anything. For tests and benchmarks of the engine's build path only; never the default.
 * Its inputs are the source's URL and ref (or the archive's path) and the build settings;
 * `builds` counts the builds it made, and an image in `gone` no longer exists.
 */
export class FakeBuildDriver implements BuildDriver {
  readonly name = 'fake';
  builds = 0;
  readonly gone = new Set<string>();
  /** langgraph.json's `env` every source pretends to have. */
  env: Record<string, string> = {};

  async identify(request: BuildRequest): Promise<IdentifiedBuild> {
    const commitSha = commitOf(request);
    const archive =
      request.source.kind === 'archive'
        ? createHash('sha256')
            .update(await readFile(request.source.path))
            .digest('hex')
        : '';
    return {
      inputs: {
        source: request.source.kind === 'git' ? `commit:${commitSha}` : `archive:sha256:${archive}`,
        commit_sha: request.source.kind === 'git' ? commitSha : null,
        graph_config_path: request.graphConfigPath,
        graph_config_sha256: createHash('sha256').update(request.graphConfigPath).digest('hex'),
        install_command: request.installCommand,
        build_command: request.buildCommand,
        base_image: 'berth.local/base:20',
        base_image_digest: 'sha256:fake',
        generator_version: 1,
      },
      env: { ...this.env },
    };
  }

  async imageExists(image: string): Promise<boolean> {
    return !this.gone.has(image);
  }

  async build(request: BuildRequest, context: StepContext): Promise<BuiltImage> {
    this.builds += 1;
    const what = request.source.kind === 'git' ? `${request.source.url}#${request.source.ref}` : request.source.path;
    const commitSha = commitOf(request);
    await context.log('INFO', `Building ${what} (${request.graphConfigPath})`);
    return { image: `berth.local/${request.deploymentId}:${request.revisionId.slice(0, 12)}`, commitSha, env: { ...this.env } };
  }
}

/** A ref that is already a commit (the engine pins the one it identified) stands for itself. */
function commitOf(request: BuildRequest): string {
  if (request.source.kind === 'git' && /^[0-9a-f]{40}$/.test(request.source.ref)) return request.source.ref;
  const what = request.source.kind === 'git' ? `${request.source.url}#${request.source.ref}` : request.source.path;
  return createHash('sha1').update(what).digest('hex');
}
