// Checks a langgraph.json against the repository checkout it came from, before anything is
// built: every file and directory it names must exist, and none may lie outside the
// checkout, whether by an absolute path, by `..`, or through a symbolic link. A build reads
// these paths on the build host, so an escape would copy host files into an image.
import fs from 'node:fs/promises';
import path from 'node:path';
import { GraphConfigError } from './graph-config-error.js';
import { isNodeGraphSpec, looksLikeFilePath, splitOnce } from './graph-spec.js';
import type { LangGraphConfig } from './langgraph-config.js';

export interface CheckoutLocation {
  /** The repository checkout; nothing the config names may lie outside it. */
  readonly root: string;
  /** The directory that holds langgraph.json, inside `root`. */
  readonly configDir: string;
}

type Expect = 'file' | 'directory' | 'file if present';

interface PathUse {
  readonly field: string;
  readonly written: string;
  readonly expect: Expect;
}

/** Resolves when every path is inside the checkout and present; throws GraphConfigError otherwise. */
export async function checkConfigAgainstCheckout(config: LangGraphConfig, location: CheckoutLocation): Promise<void> {
  const root = path.resolve(location.root);
  const configDir = path.resolve(location.configDir);
  const realRoot = await fs.realpath(root);
  if (!isInside(root, configDir) || !isInside(realRoot, await fs.realpath(configDir))) {
    throw new GraphConfigError(`${config.name}: lies outside the repository`);
  }
  for (const use of pathUses(config)) {
    await checkPath(config.name, use, { root, realRoot, configDir });
  }
}

function pathUses(config: LangGraphConfig): PathUse[] {
  const uses: PathUse[] = [];
  for (const graph of config.graphs) {
    const [module] = splitOnce(graph.spec, ':');
    // A Python graph may name a module of an installed package instead of a file.
    if (isNodeGraphSpec(graph.spec) || looksLikeFilePath(module)) {
      uses.push({ field: `graphs.${graph.id}`, written: module, expect: 'file' });
    }
  }
  for (const reference of config.references) {
    const isModuleReference = reference.field !== 'pip_config_file' && !reference.field.startsWith('ui.');
    const written = isModuleReference ? splitOnce(reference.value, ':')[0] : reference.value;
    if (!isModuleReference || looksLikeFilePath(written)) uses.push({ field: reference.field, written, expect: 'file' });
  }
  config.dependencies.forEach((dependency, index) => {
    if (dependency.startsWith('.')) uses.push({ field: `dependencies[${index}]`, written: dependency, expect: 'directory' });
  });
  // An env file is usually left out of the repository (.gitignore); it only must not escape.
  if (typeof config.env === 'string') uses.push({ field: 'env', written: config.env, expect: 'file if present' });
  return uses;
}

async function checkPath(configName: string, use: PathUse, where: { root: string; realRoot: string; configDir: string }): Promise<void> {
  const refuse = (problem: string): never => {
    throw new GraphConfigError(`${configName}: ${use.field}: ${problem}`);
  };
  const kind = use.expect === 'directory' ? 'directory' : 'file';
  if (path.isAbsolute(use.written)) refuse(`'${use.written}' must be a path relative to ${path.basename(configName)}, inside the repository`);
  const lexical = path.resolve(where.configDir, use.written);
  if (!isInside(where.root, lexical)) refuse(`'${use.written}' points outside the repository`);
  let real: string;
  try {
    real = await fs.realpath(lexical);
  } catch {
    if (use.expect === 'file if present') return;
    return refuse(`${kind} '${use.written}' does not exist in the repository`);
  }
  if (!isInside(where.realRoot, real)) refuse(`'${use.written}' leads through a symbolic link to outside the repository`);
  const stats = await fs.stat(real);
  if (kind === 'directory' && !stats.isDirectory()) refuse(`'${use.written}' must be a directory`);
  if (kind === 'file' && !stats.isFile()) refuse(`'${use.written}' must be a file`);
}

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative));
}
