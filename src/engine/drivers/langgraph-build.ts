import { lstat, mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  buildImage,
  BuildError,
  type BuilderPreference,
  detectBuilder,
  pushImage,
  type RegistryCredentials,
  type ResolvedBuilder,
} from '../../build/builder.js';
import { generateDockerfile } from '../../build/dockerfile.js';
import { builtImageName } from '../../registry/image-names.js';
import { checkConfigAgainstCheckout, GraphConfigError, readLangGraphConfigFile } from '../../build/langgraph-config.js';
import { ArchiveError, locateConfig, unpackSourceArchive } from '../../build/source-archive.js';
import { CodehostError, MirrorCache } from '../../codehost/index.js';
import { type BuildDriver, type BuildRequest, type BuiltImage, DriverError, type StepContext } from './types.js';

export interface ImageRegistry {
  /** `host[:port]` of the registry Berth pushes built images to (BERTH_REGISTRY). */
  host: string;
  /** Repository path prefix under the host, without slashes at either end (may be empty). */
  pathPrefix: string;
  /** Whether the registry's TLS certificate is checked (off for plain-HTTP registries on loopback). */
  tlsVerify: boolean;
  /** Credentials to push one repository with, minted per build. */
  pushCredentials(repository: string): Promise<RegistryCredentials | undefined>;
}

export interface LangGraphBuildOptions {
  /** Berth's data directory: mirrors under git/, checkouts under builds/, the build cache under build-cache/. */
  dataDir: string;
  builder: BuilderPreference;
  /** Images to use instead of the CLI's defaults (BERTH_BASE_IMAGE_NODE / _PYTHON), tagged as the CLI tags them. */
  baseImages: { node?: string; python?: string };
  /** Where built images are pushed; without one they stay on this machine as `localhost/berth/…`. */
  registry?: ImageRegistry;
  /** Whether repositories on the Berth host itself may be fetched. */
  allowLocal: boolean;
  knownHostsFile: string;
  /** Environment for finding and running the builder. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Builds a revision of a LangGraph project into an image: fetches the source (a commit of
 * a repository through Berth's mirror of it, or an uploaded archive), checks its
 * langgraph.json, writes the Dockerfile the LangGraph CLI would write (in Berth's cached
 * layout: dependencies installed before the source is added, so a source-only change
 * rebuilds in seconds), builds it with buildah, podman or docker, and pushes it when a
 * registry is configured. Every line of git's and the builder's output is a build log
 * line. Whatever a build leaves (checkout, working containers, partial images) is removed
 * when it ends, however it ends.
 */
export class LangGraphBuildDriver implements BuildDriver {
  readonly name = 'langgraph';
  readonly #mirrors: MirrorCache;
  #builder: ResolvedBuilder | undefined;

  constructor(private readonly options: LangGraphBuildOptions) {
    this.#mirrors = new MirrorCache({ root: path.join(options.dataDir, 'git'), allowLocal: options.allowLocal, knownHostsFile: options.knownHostsFile });
  }

  async build(request: BuildRequest, step: StepContext): Promise<BuiltImage> {
    const builder = await this.#resolveBuilder();
    const builds = path.join(this.options.dataDir, 'builds');
    await mkdir(builds, { recursive: true });
    const work = await mkdtemp(path.join(builds, `${request.revisionId}-`));
    try {
      const fetched = await this.#fetch(request, work, step);
      const configPath = await configInside(fetched.root, fetched.configPath, fetched.describe);
      const config = await readLangGraphConfigFile(configPath);
      await checkConfigAgainstCheckout(config, { root: fetched.root, configDir: path.dirname(configPath) });
      const generated = await generateDockerfile(config, path.dirname(configPath), {
        layout: 'cached',
        defaultBaseImages: this.options.baseImages,
        ...(request.installCommand ? { installCommand: request.installCommand } : {}),
        ...(request.buildCommand ? { buildCommand: request.buildCommand } : {}),
      });
      await step.log('INFO', `Dockerfile (generated from ${request.graphConfigPath}${generated.layoutNote ? `; ${generated.layoutNote}` : ''}):`);
      for (const line of generated.dockerfile.split('\n')) await step.log('INFO', `  ${line}`);

      const registry = this.options.registry;
      const { image, repository } = builtImageName(registry, request);
      await step.log('INFO', `Building ${image} with ${builder.kind}`);
      await buildImage(builder, {
        contextDir: path.dirname(configPath),
        dockerfile: generated.dockerfile,
        tag: image,
        additionalContexts: generated.additionalContexts,
        cacheDir: await this.#cacheDir(),
        labels: { 'berth.deployment-id': request.deploymentId, 'berth.revision-id': request.revisionId },
        log: (line) => step.log('INFO', line),
        signal: step.signal,
      });
      if (registry) {
        await step.log('INFO', `Pushing ${image}`);
        const credentials = await registry.pushCredentials(repository);
        await pushImage(
          builder,
          image,
          { tlsVerify: registry.tlsVerify, ...(credentials ? { credentials } : {}) },
          (line) => step.log('INFO', line),
          step.signal,
        );
      }
      return { image, commitSha: fetched.commitSha };
    } catch (error) {
      throw asDriverError(error);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  async #resolveBuilder(): Promise<ResolvedBuilder> {
    if (this.#builder) return this.#builder;
    const found = await detectBuilder(this.options.builder, this.options.env ?? process.env);
    if (typeof found === 'string') throw new DriverError(found);
    this.#builder = found;
    return found;
  }

  async #cacheDir(): Promise<string> {
    const dir = path.join(this.options.dataDir, 'build-cache');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  /** The project's files under `work`, named after the repository (the CLI's Dockerfile puts them in /deps/<that name>). */
  async #fetch(
    request: BuildRequest,
    work: string,
    step: StepContext,
  ): Promise<{ root: string; configPath: string; commitSha: string | null; describe: string }> {
    const source = request.source;
    if (source.kind === 'archive') {
      const root = path.join(work, 'project');
      await step.log('INFO', 'Unpacking the uploaded project');
      const unpacked = await unpackSourceArchive(source.path, root, { signal: step.signal });
      await step.log('INFO', `Unpacked ${unpacked.files} files (${unpacked.bytes} bytes)`);
      // The CLI's archive may hold the project one directory down: start from where langgraph.json is.
      const located = await locateConfig(root, request.graphConfigPath);
      return { root, configPath: located.configPath, commitSha: null, describe: 'the uploaded archive' };
    }
    const root = path.join(work, repositoryName(source.url));
    await step.log('INFO', `Fetching ${source.url} at ${source.ref}`);
    const { commitSha } = await this.#mirrors.checkout({
      url: source.url,
      ref: source.ref,
      auth: source.auth,
      dest: root,
      log: (line) => step.log('INFO', line),
      signal: step.signal,
    });
    await step.log('INFO', `Checked out ${commitSha}`);
    return { root, configPath: request.graphConfigPath, commitSha, describe: 'the repository' };
  }
}

/** The configuration file, which must be a file inside the checkout (no `..`, no absolute path, no link out). */
async function configInside(root: string, configPath: string, where: string): Promise<string> {
  const escapes = path.isAbsolute(configPath) || configPath.split(/[\\/]/).includes('..');
  if (escapes) throw new DriverError(`graph_config_path '${configPath}' must be a path inside ${where}, without '..' and not absolute.`);
  const realRoot = await realpath(root);
  const resolved = await realpath(path.join(realRoot, configPath)).catch(() => null);
  if (resolved === null)
    throw new DriverError(
      `graph_config_path '${configPath}' does not exist in ${where}; set source_revision_config.graph_config_path to the path of langgraph.json.`,
    );
  if (resolved !== realRoot && !resolved.startsWith(`${realRoot}${path.sep}`)) {
    throw new DriverError(`graph_config_path '${configPath}' leads outside ${where} (through a symbolic link).`);
  }
  if (!(await lstat(resolved)).isFile()) throw new DriverError(`graph_config_path '${configPath}' is not a file in ${where}.`);
  return resolved;
}

function repositoryName(url: string): string {
  const last =
    url
      .replace(/[/\\]+$/, '')
      .split(/[/\\:]/)
      .at(-1) ?? 'project';
  return last.replace(/\.git$/, '').replace(/[^A-Za-z0-9._-]/g, '-') || 'project';
}

/** Failures the user can act on become DriverErrors with their message; a stop stays a stop. */
function asDriverError(error: unknown): unknown {
  if (error instanceof DriverError) return error;
  if (error instanceof BuildError) return error.kind === 'aborted' ? error : new DriverError(error.message);
  if (error instanceof CodehostError || error instanceof GraphConfigError || error instanceof ArchiveError) return new DriverError(error.message);
  return error;
}
