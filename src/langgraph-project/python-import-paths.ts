// Rewrites the file paths a Python config names (graphs, auth.path, encryption.path,
// checkpointer.path, http.app) to where those files land under /deps in the image, as the
// LangGraph CLI does before serialising them into ENV lines. Graphs and http.app are
// resolved through symbolic links and looked up in real packages first; auth, encryption
// and checkpointer paths are joined lexically and looked up in faux packages first. The
// difference is the CLI's, and shows in the output, so it is kept.
import fs from 'node:fs/promises';
import path from 'node:path';
import { GraphConfigError } from './graph-config-error.js';
import { looksLikeFilePath, splitOnce } from './graph-spec.js';
import type { LangGraphConfig } from './langgraph-config.js';
import { type OrderedObject, isOrderedObject } from './ordered-json.js';
import { pureIsRelativeTo, pureJoin, pureRelativeTo } from './pure-path.js';
import type { LocalDeps } from './python-local-deps.js';

/** Rewrites `document` (a copy of the config's) in place. */
export async function rewriteImportPaths(document: OrderedObject, configDir: string, config: LangGraphConfig, deps: LocalDeps): Promise<void> {
  const fail = (field: string, problem: string): never => {
    throw new GraphConfigError(`${config.name}: ${field}: ${problem}`);
  };
  const graphs = document.get('graphs') as OrderedObject;
  for (const [id, spec] of graphs) {
    const field = `graphs.${id}`;
    const written = isOrderedObject(spec) ? spec.get('path') : spec;
    if (typeof written !== 'string') return fail(field, `must be a string or an object with a 'path'`);
    const rewritten = await rewriteResolved(written, field, configDir, deps, fail);
    if (isOrderedObject(spec)) spec.set('path', rewritten);
    else graphs.set(id, rewritten);
  }
  for (const section of ['auth', 'encryption', 'checkpointer'] as const) {
    const value = document.get(section);
    const written = isOrderedObject(value) ? value.get('path') : undefined;
    if (!isOrderedObject(value) || typeof written !== 'string' || written === '') continue;
    value.set('path', await rewriteLexical(written, `${section}.path`, configDir, deps, fail));
  }
  const http = document.get('http');
  const app = isOrderedObject(http) ? http.get('app') : undefined;
  if (isOrderedObject(http) && typeof app === 'string' && app !== '') {
    http.set('app', await rewriteResolved(app, 'http.app', configDir, deps, fail));
  }
}

type Fail = (field: string, problem: string) => never;

/** Graphs and http.app: `<module>:<attribute>`; a module with a `/` is a file, resolved fully. */
async function rewriteResolved(written: string, field: string, configDir: string, deps: LocalDeps, fail: Fail): Promise<string> {
  const [module, attribute] = splitOnce(written, ':');
  if (module === '' || attribute === '') return fail(field, `'${written}' must be written as '<module>:<attribute>'`);
  if (!looksLikeFilePath(module)) return written;
  let resolved: string;
  try {
    // Not path.join: it would fold `link/..` before the link is followed; realpath(3) follows it.
    resolved = await fs.realpath(`${configDir}/${module}`);
  } catch {
    return fail(field, `file '${module}' does not exist`);
  }
  if (!(await isFile(resolved))) return fail(field, `'${module}' must be a file`);
  for (const packageDir of deps.realPackages.keys()) {
    if (pureIsRelativeTo(resolved, packageDir)) {
      return `/deps/${path.basename(packageDir)}/${pureRelativeTo(resolved, packageDir)}:${attribute}`;
    }
  }
  for (const [packageDir, { destination }] of deps.fauxPackages) {
    if (pureIsRelativeTo(resolved, packageDir)) return `${destination}/${pureRelativeTo(resolved, packageDir)}:${attribute}`;
  }
  return fail(field, `'${module}' is not inside any local package in 'dependencies'; add its directory (e.g. ".") to 'dependencies'`);
}

/** auth, encryption, checkpointer: only `./…:attribute` is rewritten, and the path is not resolved. */
async function rewriteLexical(written: string, field: string, configDir: string, deps: LocalDeps, fail: Fail): Promise<string> {
  const [module, attribute] = splitOnce(written, ':');
  if (!written.includes(':') || !module.startsWith('.')) return written;
  const joined = pureJoin(configDir, module);
  if (!(await exists(joined))) return fail(field, `file '${module}' does not exist`);
  if (!(await isFile(joined))) return fail(field, `'${module}' must be a file`);
  for (const [packageDir, { destination }] of deps.fauxPackages) {
    if (pureIsRelativeTo(joined, packageDir)) return `${destination}/${pureRelativeTo(joined, packageDir)}:${attribute}`;
  }
  for (const packageDir of deps.realPackages.keys()) {
    if (pureIsRelativeTo(joined, packageDir)) {
      return `/deps/${path.basename(packageDir)}/${pureRelativeTo(joined, packageDir)}:${attribute}`;
    }
  }
  return fail(field, `'${module}' is not inside any local package in 'dependencies'; add its directory (e.g. ".") to 'dependencies'`);
}

async function exists(target: string): Promise<boolean> {
  try {
    await fs.stat(target);
    return true;
  } catch {
    return false;
  }
}

async function isFile(target: string): Promise<boolean> {
  try {
    return (await fs.stat(target)).isFile();
  } catch {
    return false;
  }
}
