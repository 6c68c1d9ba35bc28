import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, mkdir, mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { envFilePath, envFromFile, envFromObject, MAX_ENV_FILE_BYTES } from '../../langgraph-project/config-env.js';
import { chooseBaseImage, DOCKERFILE_GENERATOR_VERSION, dockerTag } from '../../langgraph-project/dockerfile.js';
import { localImageId } from '../../image-builds/image-store.js';
import { type LangGraphConfig, parseLangGraphConfig } from '../../langgraph-project/langgraph-config.js';
import type { ResolvedBuilder } from '../../image-builds/builder.js';
import { locateConfig, unpackSourceArchive } from '../../sources/source-archive.js';
import type { MirrorCache } from '../../codehost/index.js';
import { type BuildRequest, DriverError, type IdentifiedBuild, type StepContext } from './types.js';

/** langgraph.json is read whole to tell whether it changed; a bigger one is not a configuration. */
const MAX_CONFIG_BYTES = 1024 * 1024;

/** Reads a file of the source by its path relative to the project root; null when there is no such regular file. */
export type SourceReader = (relative: string) => Promise<string | null>;

interface ReadSource {
  source: string;
  commitSha: string | null;
  /** langgraph.json's path relative to the root, with `/`. */
  configPath: string;
  configText: string;
  read: SourceReader;
  dispose(): Promise<void>;
}

export interface InputsContext {
  mirrors: MirrorCache;
  host: ResolvedBuilder;
  baseImages: { node?: string; python?: string };
  /** Where an uploaded archive is unpacked to read its langgraph.json. */
  scratchRoot: string;
}

/**
 * Works out a build's inputs without building: for a repository, the commit its ref names
 * now and langgraph.json of that commit, read from Berth's mirror (no checkout); for an
 * upload, the archive's SHA-256 and langgraph.json from it. The base image's id is read
 * from the host's store; a base image that is not there yet (one the build would pull)
 * cannot be identified, so such revisions always build.
 */
export async function identifyBuild(ctx: InputsContext, request: BuildRequest, step: StepContext): Promise<IdentifiedBuild> {
  const read = request.source.kind === 'git' ? await readFromMirror(ctx, request, step) : await readFromArchive(ctx, request, step);
  try {
    const config = parseLangGraphConfig(read.configText, path.posix.basename(read.configPath));
    const baseImage = dockerTag(config, chooseBaseImage(config, { defaultBaseImages: ctx.baseImages }));
    const digest = await localImageId(ctx.host, baseImage, step.signal);
    if (!digest) throw new DriverError(`the base image ${baseImage} is not in this host's image store before the build`);
    return {
      inputs: {
        source: read.source,
        commit_sha: read.commitSha,
        graph_config_path: read.configPath,
        graph_config_sha256: createHash('sha256').update(read.configText).digest('hex'),
        install_command: request.installCommand,
        build_command: request.buildCommand,
        base_image: baseImage,
        base_image_digest: digest,
        generator_version: DOCKERFILE_GENERATOR_VERSION,
      },
      env: await configEnvironment(config, read.configPath, read.read, step),
    };
  } finally {
    await read.dispose();
  }
}

/**
 * langgraph.json's `env` as variables: the object's, or the env file's (read from the
 * source, as the CLI reads it beside langgraph.json). Names are logged, values never.
 */
export async function configEnvironment(config: LangGraphConfig, configPath: string, read: SourceReader, step: StepContext): Promise<Record<string, string>> {
  if (config.env === null) return {};
  if (typeof config.env !== 'string') {
    const env = envFromObject(config.env);
    if (env.skipped.length > 0) await step.log('WARNING', `langgraph.json env: left out ${env.skipped.join(', ')} (not a variable name, or holding NUL).`);
    return env.variables;
  }
  const file = envFilePath(config, configPath);
  if (!file) {
    await step.log('WARNING', `langgraph.json env '${config.env}' is not a path inside the project; no variables are taken from it.`);
    return {};
  }
  const text = await read(file);
  if (text === null) {
    await step.log('WARNING', `langgraph.json env file '${file}' is not in the source; no variables are taken from it.`);
    return {};
  }
  const env = envFromFile(text);
  if (env.skipped.length > 0) await step.log('WARNING', `env file '${file}': left out ${env.skipped.join(', ')} (not a variable name, or holding NUL).`);
  await step.log('INFO', `langgraph.json env: ${Object.keys(env.variables).length} variable(s) from '${file}', applied at run time (not in the image).`);
  return env.variables;
}

/** A reader of files under `root` on disk that never leaves it (through `..` or a symbolic link). */
export function diskReader(root: string, maxBytes = MAX_ENV_FILE_BYTES): SourceReader {
  return async (relative) => {
    const realRoot = await realpath(root);
    const resolved = await realpath(path.join(realRoot, relative)).catch(() => null);
    if (resolved === null || !resolved.startsWith(`${realRoot}${path.sep}`)) return null;
    const info = await lstat(resolved);
    if (!info.isFile() || info.size > maxBytes) return null;
    return readFile(resolved, 'utf8');
  };
}

async function readFromMirror(ctx: InputsContext, request: BuildRequest, step: StepContext): Promise<ReadSource> {
  const source = request.source;
  if (source.kind !== 'git') throw new Error('readFromMirror needs a repository source');
  const { commitSha } = await ctx.mirrors.resolve({
    url: source.url,
    ref: source.ref,
    auth: source.auth,
    log: (line) => step.log('INFO', line),
    signal: step.signal,
  });
  const readAt = (file: string, maxBytes: number) =>
    ctx.mirrors.readFile({ url: source.url, ...(source.auth ? { auth: source.auth } : {}), commitSha, file, maxBytes, signal: step.signal });
  const configPath = path.posix.normalize(request.graphConfigPath);
  const configText = await readAt(configPath, MAX_CONFIG_BYTES);
  if (configText === null) throw new DriverError(`${configPath} is not a file of ${commitSha}`);
  return {
    source: `commit:${commitSha}`,
    commitSha,
    configPath,
    configText,
    read: (file) => readAt(file, MAX_ENV_FILE_BYTES),
    dispose: async () => {},
  };
}

async function readFromArchive(ctx: InputsContext, request: BuildRequest, step: StepContext): Promise<ReadSource> {
  const source = request.source;
  if (source.kind !== 'archive') throw new Error('readFromArchive needs an archive source');
  const hash = createHash('sha256');
  await pipeline(createReadStream(source.path), hash);
  await mkdir(ctx.scratchRoot, { recursive: true, mode: 0o700 });
  const work = await mkdtemp(path.join(ctx.scratchRoot, `${request.revisionId}-inputs-`));
  try {
    const root = path.join(work, 'project');
    await unpackSourceArchive(source.path, root, { signal: step.signal });
    const located = await locateConfig(root, request.graphConfigPath);
    const read = diskReader(root);
    const configText = await diskReader(root, MAX_CONFIG_BYTES)(located.configPath);
    if (configText === null) throw new DriverError(`${located.configPath} is not a file of the uploaded archive`);
    return {
      source: `archive:sha256:${hash.digest('hex')}`,
      commitSha: null,
      configPath: located.configPath,
      configText,
      read,
      dispose: () => rm(work, { recursive: true, force: true }),
    };
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    throw error;
  }
}
