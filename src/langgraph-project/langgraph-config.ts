// langgraph.json: parsing and the rules the LangGraph CLI's `validate_config` and
// `validate_config_file` apply, with defaults applied the same way (a config with a `.ts`
// graph gets node_version "20", one with a Python graph python_version "3.11"). Messages
// name the file and the field, and say what to write instead.
import fs from 'node:fs/promises';
import path from 'node:path';
import { GraphConfigError } from './graph-config-error.js';
import { isNodeGraphSpec, splitOnce } from './graph-spec.js';
import { checkDocumentShape, type LangGraphConfigDocument } from './langgraph-config-schema.js';
import { JsonSyntaxError, type OrderedJson, type OrderedObject, isOrderedObject, parseOrderedJson, toPlain } from './ordered-json.js';

export { GraphConfigError } from './graph-config-error.js';
export { checkConfigAgainstCheckout } from './langgraph-config-paths.js';

export const MIN_NODE_VERSION = 20;
export const DEFAULT_NODE_VERSION = '20';
export const MIN_PYTHON_VERSION: readonly [number, number] = [3, 11];
export const DEFAULT_PYTHON_VERSION = '3.11';
export const DEFAULT_IMAGE_DISTRO = 'debian';
export const IMAGE_DISTROS = ['debian', 'wolfi', 'bookworm'] as const;
export const PIP_INSTALLERS = ['auto', 'pip', 'uv'] as const;
export const BUILD_TOOLS = ['pip', 'setuptools', 'wheel'] as const;

export type ImageDistro = (typeof IMAGE_DISTROS)[number];
export type PipInstaller = (typeof PIP_INSTALLERS)[number];
export type BuildTool = (typeof BUILD_TOOLS)[number];

export interface GraphEntry {
  readonly id: string;
  /** `./src/graph.py:graph`, `my_pkg.graph:graph` or `./src/graph.ts:graph` */
  readonly spec: string;
}

export interface LangGraphConfig {
  /** How messages name the file, e.g. `langgraph.json` or `apps/agent/langgraph.json`. */
  readonly name: string;
  /** The document as written (key order, number spelling), for values the Dockerfile serialises. */
  readonly document: OrderedObject;
  readonly graphs: readonly GraphEntry[];
  /** After defaults: set when a graph is JavaScript/TypeScript or the config says so. */
  readonly nodeVersion: string | null;
  /** After defaults: set when a graph is Python or the config says so. */
  readonly pythonVersion: string | null;
  readonly apiVersion: string | null;
  readonly baseImage: string | null;
  readonly imageDistro: ImageDistro;
  readonly pipConfigFile: string | null;
  readonly pipInstaller: PipInstaller;
  readonly dependencies: readonly string[];
  readonly dockerfileLines: readonly string[];
  /** A path to an env file, or variables by name (values as written), or null. */
  readonly env: string | OrderedObject | null;
  readonly keepPkgTools: boolean | readonly BuildTool[] | null;
  readonly internalDockerTag: string | null;
  /** Files the config names besides graphs: `auth.path`, `http.app`, `ui.<name>`, … */
  readonly references: readonly FileReference[];
  /** Top-level fields this version of Berth does not know; they are ignored. */
  readonly unknownFields: readonly string[];
}

export interface FileReference {
  /** e.g. `auth.path`, `ui.chat` */
  readonly field: string;
  /** as written, with any `:attribute` suffix */
  readonly value: string;
}

/** `node_version` set and no `python_version`: the CLI builds such a config on the JS image. */
export function isNodeConfig(config: LangGraphConfig): boolean {
  return Boolean(config.nodeVersion) && !config.pythonVersion;
}

const KNOWN_FIELDS = new Set([
  'python_version',
  'node_version',
  'api_version',
  'base_image',
  'image_distro',
  'pip_config_file',
  'pip_installer',
  'source',
  'dependencies',
  'dockerfile_lines',
  'graphs',
  'env',
  'store',
  'auth',
  'encryption',
  'http',
  'webhooks',
  'checkpointer',
  'ui',
  'ui_config',
  'keep_pkg_tools',
  '_INTERNAL_docker_tag',
]);

/** Parses and validates langgraph.json text. `name` is how messages refer to the file. */
export function parseLangGraphConfig(text: string, name = 'langgraph.json'): LangGraphConfig {
  const fail = (field: string, message: string): never => {
    throw new GraphConfigError(field === '' ? `${name}: ${message}` : `${name}: '${field}' ${message}`);
  };
  let document: OrderedJson;
  try {
    document = parseOrderedJson(text);
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw new GraphConfigError(`${name}: ${error.message}`);
    throw error;
  }
  if (!isOrderedObject(document)) return fail('', 'must be a JSON object, e.g. {"graphs": {"agent": "./src/graph.py:graph"}}');
  const raw = toPlain(document) as LangGraphConfigDocument & Record<string, unknown>;
  const issue = checkDocumentShape(raw);
  if (issue !== null) fail(issue.field, issue.message);

  // In the document's order (a plain object would put integer-like names first).
  const graphIds = [...((document.get('graphs') as OrderedObject | undefined)?.keys() ?? [])];
  const graphs = graphIds.map((id) => {
    // The schema's record pattern does not reach names with line breaks: check again here.
    const spec: unknown = raw.graphs?.[id];
    if (typeof spec === 'string') return { id, spec };
    if (typeof spec === 'object' && spec !== null && 'path' in spec && typeof spec.path === 'string') return { id, spec: spec.path };
    return fail(`graphs.${id}`, `must be a string like './src/graph.py:graph' or an object with a 'path'`);
  });
  if (graphs.length === 0) {
    fail('graphs', `must name at least one graph, e.g. "graphs": {"agent": "./src/agent/graph.py:graph"}`);
  }
  const someNode = graphs.some((graph) => isNodeGraphSpec(graph.spec));
  const somePython = graphs.some((graph) => !isNodeGraphSpec(graph.spec));
  const nodeVersion = raw.node_version ?? (someNode ? DEFAULT_NODE_VERSION : null);
  const pythonVersion = raw.python_version ?? (somePython ? DEFAULT_PYTHON_VERSION : null);
  const dependencies = raw.dependencies ?? [];

  if (raw.project_root !== undefined || raw.package !== undefined) {
    fail('project_root', 'and top-level `package` are no longer supported; use `source.root` and `source.package`');
  }
  if (raw.source !== undefined && raw.source !== null) {
    // The CLI's uv mode reads pyproject.toml and uv.lock instead of `dependencies`.
    fail('source', 'is not supported by Berth yet; list the packages in "dependencies" instead');
  }
  checkApiVersion(raw, fail);
  if (nodeVersion) checkNodeVersion(nodeVersion, 'node_version', fail);
  const pipInstaller = raw.pip_installer ?? 'auto';
  if (!isOneOf(PIP_INSTALLERS, pipInstaller)) return fail('pip_installer', `must be one of 'auto', 'pip', 'uv', not '${pipInstaller}'`);
  if (pythonVersion) {
    checkPythonVersion(pythonVersion, fail);
    if (dependencies.length === 0) {
      fail('dependencies', `must list what to install for the Python graphs, e.g. "dependencies": ["."]`);
    }
  }
  const imageDistro = raw.image_distro ?? DEFAULT_IMAGE_DISTRO;
  if (imageDistro === 'bullseye') fail('image_distro', `'bullseye' images were deprecated; use 'bookworm' or 'debian'`);
  if (!isOneOf(IMAGE_DISTROS, imageDistro)) return fail('image_distro', `must be one of 'debian', 'wolfi', 'bookworm', not '${imageDistro}'`);
  for (const [field, value] of [
    ['auth.path', raw.auth?.path],
    ['encryption.path', raw.encryption?.path],
    ['http.app', raw.http?.app],
  ] as const) {
    if (value && !value.includes(':')) fail(field, `must be written as './path/to/file.py:attribute', not '${value}'`);
  }
  for (const graph of graphs) {
    const [module, attribute] = splitOnce(graph.spec, ':');
    if (!isNodeGraphSpec(graph.spec) && (module === '' || attribute === '')) {
      fail(`graphs.${graph.id}`, `must be written as '<module or ./file.py>:<attribute>', not '${graph.spec}'`);
    }
  }
  const keepPkgTools = raw.keep_pkg_tools ?? null;
  if (Array.isArray(keepPkgTools)) {
    const unknown = keepPkgTools.find((tool) => !isOneOf(BUILD_TOOLS, tool));
    if (unknown !== undefined) fail('keep_pkg_tools', `may list only 'pip', 'setuptools', 'wheel', not '${unknown}'`);
  }

  return {
    name,
    document,
    graphs,
    nodeVersion,
    pythonVersion,
    apiVersion: raw.api_version || null,
    baseImage: raw.base_image || null,
    imageDistro,
    pipConfigFile: raw.pip_config_file || null,
    pipInstaller,
    dependencies,
    dockerfileLines: raw.dockerfile_lines ?? [],
    env: envOf(document.get('env')),
    keepPkgTools: keepPkgTools as LangGraphConfig['keepPkgTools'],
    internalDockerTag: raw._INTERNAL_docker_tag || null,
    references: referencesOf(raw),
    unknownFields: [...document.keys()].filter((field) => !KNOWN_FIELDS.has(field)),
  };
}

/**
 * Reads langgraph.json and, for configs with JavaScript, checks that a package.json beside it
 * pins `engines.node` to a major version the CLI accepts (as `validate_config_file` does).
 */
export async function readLangGraphConfigFile(configPath: string, name = path.basename(configPath)): Promise<LangGraphConfig> {
  let text: string;
  try {
    text = await fs.readFile(configPath, 'utf8');
  } catch (error) {
    throw new GraphConfigError(`${name}: cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const config = parseLangGraphConfig(text, name);
  if (config.nodeVersion) await checkPackageJsonEngines(path.join(path.dirname(configPath), 'package.json'), name);
  return config;
}

async function checkPackageJsonEngines(packageJsonPath: string, configName: string): Promise<void> {
  const name = path.join(path.dirname(configName), 'package.json');
  let text: string;
  try {
    if (!(await fs.stat(packageJsonPath)).isFile()) return;
    text = await fs.readFile(packageJsonPath, 'utf8');
  } catch {
    return;
  }
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch {
    throw new GraphConfigError(`${name}: is not valid JSON (it sits beside ${configName}, which names JavaScript graphs)`);
  }
  if (typeof manifest !== 'object' || manifest === null || !('engines' in manifest)) return;
  const engines = manifest.engines;
  if (typeof engines !== 'object' || engines === null || Array.isArray(engines)) {
    throw new GraphConfigError(`${name}: 'engines' must be an object like {"node": "20"}`);
  }
  const others = Object.keys(engines).filter((engine) => engine !== 'node');
  if (others.length > 0) {
    throw new GraphConfigError(`${name}: 'engines' may name only 'node', found ${others.map((engine) => `'${engine}'`).join(', ')}`);
  }
  const node: unknown = (engines as Record<string, unknown>).node;
  if (node === undefined) return;
  checkNodeVersion(typeof node === 'string' ? node : JSON.stringify(node), 'engines.node', (field, message) => {
    throw new GraphConfigError(`${name}: '${field}' ${message}`);
  });
}

type Fail = (field: string, message: string) => never;

function checkNodeVersion(version: string, field: string, fail: Fail): void {
  // Ranges like ">=20" or "20.x" would float to new majors without a rebuild of the base image.
  if (!/^\d+$/.test(version)) fail(field, `must be a major version only, like "${MIN_NODE_VERSION}", not '${version}'`);
  if (Number(version) < MIN_NODE_VERSION) fail(field, `must be at least ${MIN_NODE_VERSION}, not '${version}'`);
}

function checkPythonVersion(version: string, fail: Fail): void {
  const parts = (version.split('-')[0] ?? '').split('.');
  if (parts.length !== 2 || version.split('.').length !== 2 || !parts.every((part) => /^\d+$/.test(part))) {
    const fix = parts.length >= 2 ? `${parts[0]}.${parts[1]}` : DEFAULT_PYTHON_VERSION;
    fail('python_version', `must be 'major.minor' without a patch version, e.g. "${fix}", not '${version}'`);
  }
  const [major, minor] = parts.map(Number) as [number, number];
  const [minMajor, minMinor] = MIN_PYTHON_VERSION;
  if (major < minMajor || (major === minMajor && minor < minMinor)) {
    fail('python_version', `must be at least ${minMajor}.${minMinor}, not '${version}'`);
  }
  if (version.includes('bullseye')) fail('python_version', `'bullseye' images were deprecated; use 'bookworm' or 'debian'`);
}

const API_VERSION = /^\d+(?:\.\d+)?(?:\.\d+)?(?:\.?[A-Za-z][0-9A-Za-z]*)?$/;
export const API_VERSION_RANGE = /^(~=|>~=)\s*(.+)$/;

function checkApiVersion(raw: LangGraphConfigDocument & Record<string, unknown>, fail: Fail): void {
  const version = raw.api_version;
  if (raw._INTERNAL_docker_tag && version) fail('api_version', 'cannot be combined with _INTERNAL_docker_tag');
  if (!version) return;
  const floor = API_VERSION_RANGE.exec(version)?.[2]?.trim() ?? version;
  if (!API_VERSION.test(floor.split('-')[0] ?? '')) {
    fail('api_version', `must be a version like "0.8" (major, major.minor or major.minor.patch), not '${version}'`);
  }
}

function envOf(value: OrderedJson | undefined): LangGraphConfig['env'] {
  if (typeof value === 'string' || isOrderedObject(value)) return value;
  return null;
}

function referencesOf(raw: LangGraphConfigDocument): FileReference[] {
  const references: FileReference[] = [];
  const add = (field: string, value: unknown) => {
    if (typeof value === 'string' && value !== '') references.push({ field, value });
  };
  add('auth.path', raw.auth?.path);
  add('encryption.path', raw.encryption?.path);
  add('checkpointer.path', raw.checkpointer?.path);
  add('http.app', raw.http?.app);
  for (const [ui, file] of Object.entries(raw.ui ?? {})) add(`ui.${ui}`, file);
  add('pip_config_file', raw.pip_config_file);
  return references;
}

function isOneOf<T extends string>(values: readonly T[], value: unknown): value is T {
  return (values as readonly unknown[]).includes(value);
}
