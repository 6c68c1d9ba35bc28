import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runTool } from '../containers/commands.js';
import { explainBuildFailure } from './diagnose.js';
import { emptyFootprint, footprintOfDockerfile, footprintOfLine, listWorkingContainers, removeCreatedLayers, removeLeftoverContainers } from './leftovers.js';
import { runInProcessGroup } from './process-group.js';
import { BuildError, type BuildLog, type ResolvedBuilder } from './types.js';

export interface BuildImageOptions {
  /** The build context: the directory `ADD .` copies. */
  contextDir: string;
  /** The Dockerfile's text; it is written outside the context. */
  dockerfile: string;
  /** Name of the image to build, e.g. `localhost/berth/my-agent:3f2a1c`. */
  tag: string;
  log: BuildLog;
  signal?: AbortSignal;
  /** Added to the builder's environment (not the build's). */
  env?: Record<string, string>;
  /**
   * A host directory that keeps the contents of `RUN --mount=type=cache` mounts (such as
   * npm's cache in Berth's cached Dockerfile layout) from one build to the next (buildah and
   * podman; Docker keeps its own). Without it they start empty in every build. Share one
   * only between builds that trust each other: any build can write into it.
   */
  cacheDir?: string;
  /** Named contexts besides `contextDir` (`--build-context name=dir`; `COPY --from=name`), as the Dockerfile generator returns them. */
  additionalContexts?: ReadonlyMap<string, string>;
  /** Labels to set on the image. */
  labels?: Record<string, string>;
  /** Ignore cached layers (the layer cache is used by default). */
  noCache?: boolean;
  /**
   * After an abort, how long the builder may clean up (it gets SIGTERM) before its process
   * group is killed; leftovers of a killed build are removed afterwards. Default 10 s.
   */
  stopGraceMs?: number;
  /**
   * A directory `prepareScratch` already filled (the build sandbox prepares it before handing
   * it to the build user); without one, the build makes and removes its own.
   */
  scratchDir?: string;
  /** How each step is isolated (`buildah bud` flags); default `--isolation chroot`. */
  isolationArgs?: readonly string[];
  /** `cgroup.procs` files the builder joins before it starts (the build sandbox's limits). */
  cgroupProcs?: readonly string[];
}

export interface BuiltImage {
  /** The tag it was built as. */
  image: string;
  /** The image id (`sha256:…` for docker, hex for buildah and podman). */
  id: string;
}

/**
 * Builds `dockerfile` over `contextDir` into `tag`, streaming every output line to `log`.
 * Completed steps are cached as layers, so a rebuild repeats only the steps from the first
 * changed one on. Throws BuildError (kind `aborted` when `signal` stopped it) after
 * removing the working containers and intermediate images the unfinished build made.
 */
export async function buildImage(builder: ResolvedBuilder, options: BuildImageOptions): Promise<BuiltImage> {
  await assertDirectory(options.contextDir, 'build context');
  for (const [name, dir] of options.additionalContexts ?? []) await assertDirectory(dir, `build context "${name}"`);
  if (options.cacheDir) await assertDirectory(options.cacheDir, 'cache directory');
  if (!/^[a-z0-9][a-z0-9._\-/:@]*$/i.test(options.tag)) throw new BuildError(`"${options.tag}" is not a valid image name.`);
  if (options.signal?.aborted) throw stopped(options.tag, options.signal);

  const work = options.scratchDir ?? (await mkdtemp(path.join(os.tmpdir(), 'berth-build-')));
  try {
    if (!options.scratchDir) await prepareScratch(work, options.dockerfile, options.cacheDir);
    const { dockerfilePath, tmpDir: scratch } = scratchPaths(work);

    const footprint = emptyFootprint();
    footprintOfDockerfile(options.dockerfile, footprint);
    const before = new Set((await listWorkingContainers(builder)).map((container) => container.id));
    const log: BuildLog = (line) => {
      footprintOfLine(line, footprint);
      return options.log(line);
    };

    const result = await runInProcessGroup(builder, buildArgs(builder, options, dockerfilePath), {
      log,
      signal: options.signal,
      extraEnv: { TMPDIR: scratch, ...options.env },
      stopGraceMs: options.stopGraceMs,
      ...(options.cgroupProcs ? { cgroupProcs: options.cgroupProcs } : {}),
    });
    if (result.spawnError)
      throw new BuildError(`Could not start ${builder.binary} to build ${options.tag}: ${result.spawnError.code ?? result.spawnError.message}.`);
    const id = result.code === 0 && !result.aborted ? await builtImageId(builder, options.tag, result.tail) : '';
    if (id) return { image: options.tag, id };

    // A failed build leaves no half-built image behind: the layers of the steps it completed
    // go, and, when the build was stopped or killed, its working containers (a build that
    // fails on its own removes them, with --force-rm; podman stopped by SIGTERM does not),
    // but only while no other build runs: working containers cannot be told apart by
    // build, and one of another build must never go.
    const interrupted = result.aborted || result.code === null;
    const containers = interrupted && !(await otherBuildsRunning()) ? await removeLeftoverContainers(builder, before, footprint) : [];
    const layers = await removeCreatedLayers(builder, footprint);
    if (containers.length + layers > 0) {
      try {
        await options.log(`Removed what the unfinished build left: ${containers.length} working container(s), ${layers} intermediate image(s)`);
      } catch {
        // The failure being reported matters more than this line.
      }
    }
    if (result.aborted) throw stopped(options.tag, options.signal);
    if (result.code === 0) throw new BuildError(`The build of ${options.tag} finished but ${builder.kind} reported no image id.`);
    throw new BuildError(explainBuildFailure(result.tail, result.code));
  } finally {
    if (!options.scratchDir) await removeScratch(work);
  }
}

/**
 * Writes the Dockerfile and the builder's scratch directory into `dir`: buildah's per-RUN
 * scratch directories go under its `tmp/` (so a killed build leaves none behind), and cache
 * mounts under `tmp/buildah-cache`, which is where `cacheDir` is linked.
 */
export async function prepareScratch(dir: string, dockerfile: string, cacheDir?: string): Promise<void> {
  const { dockerfilePath, tmpDir } = scratchPaths(dir);
  await writeFile(dockerfilePath, dockerfile, { mode: 0o600 });
  await mkdir(tmpDir);
  if (cacheDir) await symlink(path.resolve(cacheDir), path.join(tmpDir, 'buildah-cache'));
}

function scratchPaths(dir: string): { dockerfilePath: string; tmpDir: string } {
  return { dockerfilePath: path.join(dir, 'Dockerfile'), tmpDir: path.join(dir, 'tmp') };
}

/**
 * Removes the build's scratch directory unless something is still mounted inside it (a
 * recursive delete would then reach into the mounted file system); that would be a
 * builder bug, so the directory is left for a person to look at.
 */
async function removeScratch(work: string): Promise<void> {
  const mounts = await readFile('/proc/self/mounts', 'utf8').catch(() => '');
  const inside = mounts.split('\n').some((line) => (line.split(' ')[1] ?? '').startsWith(`${work}/`));
  if (!inside) await rm(work, { recursive: true, force: true });
}

// No --iidfile: with it buildah stops printing which steps came from the cache.
function buildArgs(builder: ResolvedBuilder, options: BuildImageOptions, dockerfilePath: string): string[] {
  const labels = Object.entries(options.labels ?? {}).flatMap(([key, value]) => ['--label', `${key}=${value}`]);
  const contexts = [...(options.additionalContexts ?? new Map<string, string>())].flatMap(([name, dir]) => ['--build-context', `${name}=${dir}`]);
  const common = ['-f', dockerfilePath, '-t', options.tag, ...contexts, ...labels, ...(options.noCache ? ['--no-cache'] : [])];
  if (builder.kind === 'docker') return ['build', '--progress=plain', ...common, options.contextDir];
  // Unconfined, chroot isolation keeps every RUN process inside the builder's process group
  // (so an abort reaches them) and works without a network namespace of its own; the
  // sandbox gives each step namespaces of its own instead and kills by control group.
  const isolation = options.isolationArgs ?? ['--isolation', 'chroot'];
  return [builder.kind === 'buildah' ? 'bud' : 'build', '--layers', '--force-rm', ...isolation, ...common, options.contextDir];
}

/** buildah and podman end with the full image id on a line of its own; else ask. */
async function builtImageId(builder: ResolvedBuilder, tag: string, tail: string[]): Promise<string> {
  const printed = tail.at(-1);
  if (printed && /^[0-9a-f]{64}$/.test(printed)) return printed;
  const args =
    builder.kind === 'buildah' ? ['inspect', '--type', 'image', '--format', '{{.FromImageID}}', tag] : ['image', 'inspect', '--format', '{{.Id}}', tag];
  const inspected = await runTool(builder, args);
  return inspected.code === 0 ? inspected.stdout.trim() : '';
}

function stopped(tag: string, signal: AbortSignal | undefined): BuildError {
  const reason = signal?.reason instanceof Error ? signal.reason.message : signal?.reason ? String(signal.reason) : 'no reason given';
  return new BuildError(`The build of ${tag} was stopped (${reason}).`, 'aborted', { cause: signal?.reason });
}

async function assertDirectory(dir: string, what: string): Promise<void> {
  const info = await stat(dir).catch(() => null);
  if (!info?.isDirectory()) throw new BuildError(`The ${what} ${dir} is not a directory.`);
}

/** Whether any buildah or podman build runs on this machine (this build's own processes are gone by now). */
async function otherBuildsRunning(): Promise<boolean> {
  const processes = await readdir('/proc').catch(() => [] as string[]);
  for (const pid of processes) {
    if (!/^\d+$/.test(pid)) continue;
    const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    const program = path.basename(argv[0] ?? '');
    if ((program === 'buildah' && ['bud', 'build'].includes(argv[1] ?? '')) || (program === 'podman' && argv.includes('build'))) return true;
  }
  return false;
}
