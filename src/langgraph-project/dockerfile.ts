// Generates the Dockerfile of a LangGraph project. The default (`cli`) layout is byte for
// byte what the LangGraph CLI's `langgraph dockerfile` writes for the same configuration, so
// an image built by Berth is the image a user would build themselves. The `cached` layout
// (Berth's own builds) makes the same image with an install layer that survives source
// changes; see dockerfile-node.ts.
import fs from 'node:fs/promises';
import { cachedNodeDockerfile, nodeDockerfile, planCachedInstall } from './dockerfile-node.js';
import { pythonDockerfile } from './dockerfile-python.js';
import { GraphConfigError } from './graph-config-error.js';
import { API_VERSION_RANGE, DEFAULT_IMAGE_DISTRO, type LangGraphConfig, isNodeConfig } from './langgraph-config.js';
import { type OrderedObject, pythonJsonDumps } from './ordered-json.js';

export type DockerfileLayout = 'cli' | 'cached';

/**
 * Part of every build's inputs (domain/build-inputs.ts): raise it with any change to what
 * the generator writes for the same project, or revisions keep running images built from
 * the old Dockerfile.
 */
export const DOCKERFILE_GENERATOR_VERSION = 1;
export type EngineRuntimeMode = 'combined_queue_worker' | 'distributed';

export const CLI_BASE_IMAGES = {
  node: 'langchain/langgraphjs-api',
  python: 'langchain/langgraph-api',
  pythonDistributed: 'langchain/langgraph-executor',
} as const;

/** Characters the CLI refuses in install and build commands (they would chain shell commands). */
const DISALLOWED_COMMAND = /["`\\\n\r\0\t|;$<>]|(?<!&)&(?:&&)*(?!&)/;

export interface DockerfileOptions {
  /** Like the CLI's `--base-image`: wins over the config's `base_image`. Untagged: the tag is added. */
  readonly baseImage?: string;
  /**
   * Images to use instead of the CLI's defaults (langchain/langgraphjs-api, langchain/langgraph-api)
   * when neither `baseImage` nor the config's `base_image` is set; tagged as the defaults are
   * (`:20`, `:3.11`, `-wolfi`, `<api_version>-node20`, …).
   */
  readonly defaultBaseImages?: { readonly node?: string; readonly python?: string };
  /** Like the CLI's `--api-version`: wins over the config's `api_version`. */
  readonly apiVersion?: string;
  /** Like the CLI's `--engine-runtime-mode`: `distributed` picks the executor image for Python. */
  readonly engineRuntimeMode?: EngineRuntimeMode;
  /** JavaScript only: replaces the detected install command (as `langgraph build --install-command`). */
  readonly installCommand?: string;
  /** JavaScript only, with `buildContext`: replaces the prebuild step (as `langgraph build --build-command`). */
  readonly buildCommand?: string;
  /** JavaScript only: a monorepo root holding the project; it becomes the build context. */
  readonly buildContext?: string;
  /** `cli` (default) or `cached`. */
  readonly layout?: DockerfileLayout;
}

export interface GeneratedDockerfile {
  /** Without a final newline, as the CLI writes it. */
  readonly dockerfile: string;
  /** Build contexts besides the project directory (`--build-context name=path`), in order. */
  readonly additionalContexts: ReadonlyMap<string, string>;
  /** The image in FROM. */
  readonly image: string;
  /** The layout written: `cached` falls back to `cli` when it cannot give the same image. */
  readonly layout: DockerfileLayout;
  /** Why the requested `cached` layout was not used. */
  readonly layoutNote?: string;
}

/**
 * Writes the Dockerfile for `config`, found in `projectDir` (the directory of langgraph.json,
 * which is the build context). Reads the project's lock files and local dependencies.
 * Throws GraphConfigError for problems the user must fix.
 */
export async function generateDockerfile(config: LangGraphConfig, projectDir: string, options: DockerfileOptions = {}): Promise<GeneratedDockerfile> {
  for (const [flag, command] of [
    ['install command', options.installCommand],
    ['build command', options.buildCommand],
  ] as const) {
    if (command && DISALLOWED_COMMAND.test(command)) {
      throw new GraphConfigError(`the ${flag} may not contain quotes, backslashes, ; | $ < > or a single &: '${command}'`);
    }
  }
  const realProjectDir = await fs.realpath(projectDir);
  const baseImage = chooseBaseImage(config, options);
  const image = dockerTag(config, baseImage, options.apiVersion);

  if (!isNodeConfig(config)) {
    const python = await pythonDockerfile({
      config,
      projectDir: realProjectDir,
      baseImage,
      image,
      runtimeEnvLines: runtimeEnvLines,
    });
    const layoutNote = options.layout === 'cached' ? 'Python projects already install their dependencies before their code' : undefined;
    return { ...python, image, layout: 'cli', ...(layoutNote !== undefined && { layoutNote }) };
  }

  const node = {
    projectDir: realProjectDir,
    image,
    dockerfileLines: config.dockerfileLines,
    envLines: runtimeEnvLines(config.document),
    ...(options.installCommand !== undefined && { installCommand: options.installCommand }),
    ...(options.buildCommand !== undefined && { buildCommand: options.buildCommand }),
    ...(options.buildContext !== undefined && { buildContext: options.buildContext }),
  };
  const none = new Map<string, string>();
  if (options.layout === 'cached') {
    const plan =
      options.buildContext !== undefined
        ? { reason: 'a monorepo build context installs from its root' }
        : await planCachedInstall(realProjectDir, options.installCommand);
    if (!('reason' in plan)) {
      return { dockerfile: cachedNodeDockerfile({ ...node, ...plan }), additionalContexts: none, image, layout: 'cached' };
    }
    return { dockerfile: await nodeDockerfile(node), additionalContexts: none, image, layout: 'cli', layoutNote: plan.reason };
  }
  return { dockerfile: await nodeDockerfile(node), additionalContexts: none, image, layout: 'cli' };
}

/** `--base-image`, else the config's `base_image`, else the CLI's default (or its replacement). */
export function chooseBaseImage(config: LangGraphConfig, options: DockerfileOptions = {}): string {
  if (options.baseImage) return options.baseImage;
  if (config.baseImage) return config.baseImage;
  if (isNodeConfig(config)) return options.defaultBaseImages?.node || CLI_BASE_IMAGES.node;
  if (options.engineRuntimeMode === 'distributed') return CLI_BASE_IMAGES.pythonDistributed;
  return options.defaultBaseImages?.python || CLI_BASE_IMAGES.python;
}

/**
 * The image reference in FROM, as the CLI's `docker_tag`: `<base>:<version>[-<distro>]`, or
 * `<base>:<api_version>-<py|node><version>[-<distro>]` with an API version.
 */
export function dockerTag(config: LangGraphConfig, baseImage: string, apiVersionOption?: string): string {
  const apiVersion = apiVersionOption || config.apiVersion;
  const distroTag = config.imageDistro === DEFAULT_IMAGE_DISTRO ? '' : `-${config.imageDistro}`;
  if (config.internalDockerTag) return `${baseImage}:${config.internalDockerTag}`;
  const [language, version] = isNodeConfig(config) ? ['node', config.nodeVersion] : ['py', config.pythonVersion];
  const versionTag = `${version}${distroTag}`;
  if (apiVersion) {
    if (API_VERSION_RANGE.test(apiVersion)) {
      // The CLI resolves ranges against PyPI's release list, which Berth does not reach.
      throw new GraphConfigError(`api_version '${apiVersion}' is a range; pin a version instead, e.g. "0.4"`);
    }
    return `${baseImage}:${apiVersion}-${language}${versionTag}`;
  }
  if (baseImage.includes('/langgraph-server') && !baseImage.includes(versionTag)) return `${baseImage}-${language}${versionTag}`;
  return `${baseImage}:${versionTag}`;
}

const RUNTIME_ENV: ReadonlyArray<readonly [string, string]> = [
  ['store', 'LANGGRAPH_STORE'],
  ['auth', 'LANGGRAPH_AUTH'],
  ['encryption', 'LANGGRAPH_ENCRYPTION'],
  ['http', 'LANGGRAPH_HTTP'],
  ['webhooks', 'LANGGRAPH_WEBHOOKS'],
  ['checkpointer', 'LANGGRAPH_CHECKPOINTER'],
  ['ui', 'LANGGRAPH_UI'],
  ['ui_config', 'LANGGRAPH_UI_CONFIG'],
];

/** The server reads its configuration from these variables, JSON as Python's json.dumps writes it. */
function runtimeEnvLines(document: OrderedObject): string[] {
  const lines: string[] = [];
  for (const [field, variable] of RUNTIME_ENV) {
    const value = document.get(field);
    if (value !== undefined && value !== null) lines.push(`ENV ${variable}='${pythonJsonDumps(value)}'`);
  }
  lines.push(`ENV LANGSERVE_GRAPHS='${pythonJsonDumps(document.get('graphs') ?? new Map())}'`);
  return lines;
}
