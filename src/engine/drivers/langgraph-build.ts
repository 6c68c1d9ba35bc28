import { lstat, mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import { type BuildImageOptions, prepareScratch } from '../../image-builds/build-image.js';
import {
  buildImage,
  BuildError,
  type BuilderPreference,
  detectBuilder,
  pushImage,
  type RegistryCredentials,
  type ResolvedBuilder,
} from '../../image-builds/builder.js';
import { envFilePath } from '../../langgraph-project/config-env.js';
import { CLI_BASE_IMAGES, generateDockerfile } from '../../langgraph-project/dockerfile.js';
import { removeLocalImage } from '../../image-builds/forget-image.js';
import { localImageId, registryHasImage } from '../../image-builds/image-store.js';
import { checkDockerfileLines } from '../../langgraph-project/dockerfile-policy.js';
import { checkConfigAgainstCheckout, GraphConfigError, readLangGraphConfigFile } from '../../langgraph-project/langgraph-config.js';
import { ArchiveError, locateConfig, unpackSourceArchive } from '../../sources/source-archive.js';
import { CodehostError, MirrorCache } from '../../codehost/index.js';
import type { BuildSandboxSettings } from '../../config.js';
import { builtImageName } from '../../registry/image-names.js';
import { exportBuiltImage, forgetBuiltImage, provideBaseImage } from '../../sandbox/images.js';
import { BuildSandbox } from '../../sandbox/sandbox.js';
import { configEnvironment, diskReader, identifyBuild } from './langgraph-inputs.js';
import { type BuildDriver, type BuildRequest, type BuiltImage, DriverError, type IdentifiedBuild, type ImageToForget, type StepContext } from './types.js';

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
  /**
   * Where builds are confined (docs/security.md): its settings, or a sandbox already set up
   * (a build runner shares one among its jobs); without it they run as Berth's own user, unconfined.
   */
  sandbox?: BuildSandboxSettings | BuildSandbox;
  /** Tighter memory and CPU bounds for this driver's sandboxed builds than the sandbox's own (a runner's job carries them). */
  limits?: SandboxLimits;
}

/** A build's memory and CPU bounds in the sandbox, and what set them (for the message when the build passes them). */
export interface SandboxLimits {
  memoryMb: number;
  cpus: number;
  /** Such as `BERTH_BUILD_MEMORY_MB`. */
  memorySource: string;
}

/** Where one build happens: its directory, and the sandbox's side of it when confined. */
interface BuildPlace {
  work: string;
  sandbox: BuildSandbox | undefined;
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
  #sandbox: BuildSandbox | undefined;

  constructor(private readonly options: LangGraphBuildOptions) {
    this.#mirrors = new MirrorCache({ root: path.join(options.dataDir, 'git'), allowLocal: options.allowLocal, knownHostsFile: options.knownHostsFile });
  }

  async unavailableReason(): Promise<string | null> {
    try {
      await this.#resolveSandbox(await this.#resolveBuilder());
      return null;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  async identify(request: BuildRequest, step: StepContext): Promise<IdentifiedBuild> {
    const host = await this.#resolveBuilder();
    try {
      return await identifyBuild(
        { mirrors: this.#mirrors, host, baseImages: this.options.baseImages, scratchRoot: path.join(this.options.dataDir, 'builds') },
        request,
        step,
      );
    } catch (error) {
      throw asDriverError(error);
    }
  }

  async imageExists(image: string, signal: AbortSignal): Promise<boolean> {
    const host = await this.#resolveBuilder();
    if (await localImageId(host, image, signal)) return true;
    const registry = this.options.registry;
    if (!registry || !image.startsWith(`${registry.host}/`)) return false;
    const repository = image.slice(registry.host.length + 1).replace(/[:@].*$/, '');
    const credentials = await registry.pushCredentials(repository);
    return registryHasImage(host.env, image, { tlsVerify: registry.tlsVerify, signal, ...(credentials ? { credentials } : {}) });
  }

  async build(request: BuildRequest, step: StepContext): Promise<BuiltImage> {
    const host = await this.#resolveBuilder();
    const sandbox = await this.#resolveSandbox(host);
    const place: BuildPlace = { work: await this.#newWorkDir(sandbox, request.revisionId), sandbox };
    try {
      await mkdir(path.join(place.work, 'src'), { mode: 0o700 });
      const fetched = await this.#fetch(request, path.join(place.work, 'src'), step);
      const configPath = await configInside(fetched.root, fetched.configPath, fetched.describe);
      const config = await readLangGraphConfigFile(configPath);
      await checkConfigAgainstCheckout(config, { root: fetched.root, configDir: path.dirname(configPath) });
      checkDockerfileLines(config.dockerfileLines);
      const env = await configEnvironment(config, fetched.configPath, diskReader(fetched.root), step);
      // The env file's variables reach the container at run time; the image must not hold them.
      const envFile = envFilePath(config, fetched.configPath);
      if (envFile) await removeInside(fetched.root, envFile);
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
      const build = {
        contextDir: path.dirname(configPath),
        dockerfile: generated.dockerfile,
        tag: image,
        additionalContexts: generated.additionalContexts,
        labels: { 'berth.deployment-id': request.deploymentId, 'berth.revision-id': request.revisionId },
        log: (line: string) => step.log('INFO', line),
        signal: step.signal,
      };
      let id: string | null;
      if (sandbox) {
        if (!config.baseImage || this.#configuredBases().some((base) => config.baseImage === base)) {
          await provideBaseImage(sandbox, host, generated.image, (line) => step.log('INFO', line));
        }
        await this.#buildInSandbox(sandbox, place, request, build, step);
        id = await localImageId(host, image);
      } else {
        await step.log('INFO', `Building ${image} with ${host.kind}`);
        id = (await buildImage(host, { ...build, cacheDir: await this.#cacheDir() })).id;
      }
      let digest: string | null = null;
      if (registry) {
        await step.log('INFO', `Pushing ${image}`);
        const credentials = await registry.pushCredentials(repository);
        const pushed = await pushImage(
          host,
          image,
          { tlsVerify: registry.tlsVerify, ...(credentials ? { credentials } : {}) },
          (line) => step.log('INFO', line),
          step.signal,
        );
        digest = pushed.digest ?? null;
      }
      return { image, commitSha: fetched.commitSha, id, digest, env };
    } catch (error) {
      throw asDriverError(error);
    } finally {
      if (sandbox) await sandbox.removeWorkDir({ path: place.work });
      else await rm(place.work, { recursive: true, force: true });
    }
  }

  /** Removes a built image from the host's store (while the name still points at it) and from the sandbox's stores. */
  async forgetImage(image: ImageToForget): Promise<void> {
    const host = await this.#resolveBuilder();
    if (image.id !== null) await removeLocalImage(host, image.image, image.id);
    const sandbox = await this.#resolveSandbox(host);
    if (sandbox) await forgetBuiltImage(sandbox, image.workspaceId, image.deploymentId, image.image, image.id);
  }

  /**
   * Builds as the build user in the workspace's own store, under the build's control group,
   * then copies the image into the host's store under the same name. Everything the build
   * started is killed when it ends, however it ends.
   */
  async #buildInSandbox(
    sandbox: BuildSandbox,
    place: BuildPlace,
    request: BuildRequest,
    build: Omit<BuildImageOptions, 'cacheDir'>,
    step: StepContext,
  ): Promise<void> {
    const scratch = path.join(place.work, 'scratch');
    await mkdir(scratch, { mode: 0o700 });
    await prepareScratch(scratch, build.dockerfile, await sandbox.cacheDirFor(request.workspaceId));
    await sandbox.handOver({ path: place.work });
    const builder = await sandbox.builderFor(request.workspaceId);
    const { memoryMb, cpus, memorySource } = this.options.limits ?? { ...sandbox.settings, memorySource: 'BERTH_BUILD_MEMORY_MB' };
    const { pids } = sandbox.settings;
    const cgroup = await sandbox.cgroupFor(path.basename(place.work), { memoryMb, cpus });
    await step.log('INFO', `Building ${build.tag} with buildah as the build user (${memoryMb} MB, ${cpus} CPU, ${pids} processes at most)`);
    let outOfSpace = false;
    const log = (line: string) => {
      if (/no space left on device/i.test(line)) outOfSpace = true;
      return build.log(line);
    };
    try {
      await buildImage(builder, { ...build, log, scratchDir: scratch, isolationArgs: sandbox.buildFlags, cgroupProcs: cgroup.procsFiles });
    } catch (error) {
      if (await cgroup.outOfMemory()) {
        throw new DriverError(`The build needed more than its ${memoryMb} MB of memory (${memorySource}) and was stopped.`);
      }
      if (await cgroup.hitProcessLimit()) {
        throw new DriverError(`The build tried to run more than ${pids} processes at once (BERTH_BUILD_PIDS) and failed.`);
      }
      if (outOfSpace && sandbox.settings.diskMb > 0) {
        throw new DriverError(
          `The build filled this workspace's ${sandbox.settings.diskMb} MB of build disk (BERTH_BUILD_DISK_MB): the image store, caches and the build's own files share it.`,
        );
      }
      throw error;
    } finally {
      await cgroup.destroy();
    }
    await step.log('INFO', `Copying ${build.tag} into this host's image store`);
    const exportStarted = performance.now();
    await exportBuiltImage(sandbox, request.workspaceId, request.deploymentId, build.tag, build.tag);
    await step.log('INFO', `Copied ${build.tag} out of the sandbox in ${((performance.now() - exportStarted) / 1000).toFixed(1)} s`);
  }

  async #newWorkDir(sandbox: BuildSandbox | undefined, revisionId: string): Promise<string> {
    if (sandbox) return (await sandbox.newWorkDir(revisionId)).path;
    const builds = path.join(this.options.dataDir, 'builds');
    await mkdir(builds, { recursive: true, mode: 0o700 });
    return mkdtemp(path.join(builds, `${revisionId}-`));
  }

  /** The sandbox, set up on first use; a host that cannot provide it fails every build with what to fix. */
  async #resolveSandbox(host: ResolvedBuilder): Promise<BuildSandbox | undefined> {
    const settings = this.options.sandbox;
    if (!settings) return undefined;
    this.#sandbox ??= settings instanceof BuildSandbox ? settings : await prepareBuildSandbox(host, settings);
    return this.#sandbox;
  }

  /** The base images Berth itself chooses: configured ones, else the CLI's defaults. */
  #configuredBases(): string[] {
    const { node, python } = this.options.baseImages;
    return [node ?? CLI_BASE_IMAGES.node, python ?? CLI_BASE_IMAGES.python, CLI_BASE_IMAGES.pythonDistributed];
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

/** Sets the build sandbox up for builds with this builder, or throws a DriverError saying what the host lacks (`builderVariable` chose the builder). */
export async function prepareBuildSandbox(host: ResolvedBuilder, settings: BuildSandboxSettings, builderVariable = 'BERTH_BUILDER'): Promise<BuildSandbox> {
  if (host.kind !== 'buildah') {
    throw new DriverError(
      `The build sandbox (BERTH_BUILD_SANDBOX=on) builds with buildah, but the builder found is ${host.kind}: install buildah (scripts/setup-containers.sh), set ${builderVariable}=buildah, or turn the sandbox off for a single trusted user.`,
    );
  }
  const prepared = await BuildSandbox.prepare(settings);
  if (typeof prepared === 'string') throw new DriverError(prepared);
  return prepared;
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

/**
 * Removes a file of the checkout without following a link out of it: the directory is
 * resolved and must be inside the root, and the last component is unlinked, not followed.
 */
async function removeInside(root: string, relative: string): Promise<void> {
  const realRoot = await realpath(root);
  const parent = await realpath(path.dirname(path.join(realRoot, relative))).catch(() => null);
  if (parent === null || (parent !== realRoot && !parent.startsWith(`${realRoot}${path.sep}`))) return;
  await rm(path.join(parent, path.basename(relative)), { force: true }).catch(() => {});
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
