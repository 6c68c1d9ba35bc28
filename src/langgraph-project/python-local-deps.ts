// Local Python dependencies ("." or "./pkg" in `dependencies`) as the LangGraph CLI lays them
// out under /deps: a directory with pyproject.toml or setup.py is a real package at
// /deps/<name>; any other directory becomes a generated "faux" package at /deps/outer-<name>
// (flat layout when it has __init__.py, else src layout). A dependency outside the config's
// directory becomes an extra build context. Insertion order matters (it is the Dockerfile's
// order), so the tables are Maps keyed by resolved path, as the CLI's dicts are.
import fs from 'node:fs/promises';
import path from 'node:path';
import { GraphConfigError } from './graph-config-error.js';
import type { LangGraphConfig } from './langgraph-config.js';
import { pureIsRelativeTo } from './pure-path.js';

export interface LocalPackage {
  /** the dependency as written, e.g. `./graphs/` */
  readonly written: string;
  /** real packages: folder name under /deps; faux packages: the package path in the image */
  readonly destination: string;
}

export interface LocalDeps {
  /** requirements.txt of faux packages: host file → path in the image */
  readonly requirements: ReadonlyArray<{ readonly file: string; readonly destination: string }>;
  readonly realPackages: ReadonlyMap<string, LocalPackage>;
  readonly fauxPackages: ReadonlyMap<string, LocalPackage>;
  /** where "." lands in the image, when "." is a dependency */
  readonly workingDir: string | null;
  /** resolved dependency directories outside the config's directory */
  readonly outsideDirs: readonly string[];
}

/** Names a faux package's code may not take: they would shadow the server's own packages. */
const RESERVED_NAMES = [
  'src',
  'langgraph-api',
  'langgraph_api',
  'langgraph',
  'langchain-core',
  'langchain_core',
  'pydantic',
  'orjson',
  'fastapi',
  'uvicorn',
  'psycopg',
  'httpx',
  'langsmith',
];

export async function assembleLocalDeps(configDir: string, config: LangGraphConfig): Promise<LocalDeps> {
  // Package name → the dependency that provides it (null: the server's own).
  const owners = new Map<string, string | null>(RESERVED_NAMES.map((name) => [name, null]));
  const claim = (name: string, written: string) => {
    const owner = owners.get(name);
    if (owner === null) {
      throw new GraphConfigError(
        `${config.name}: dependency '${written}' holds a package named '${name}', a name reserved for the server's own packages; rename the directory`,
      );
    }
    if (owner !== undefined) {
      throw new GraphConfigError(
        `${config.name}: dependencies '${owner}' and '${written}' both hold a package named '${name}'; list only one of them, or rename one`,
      );
    }
    owners.set(name, written);
  };
  const nameCounts = new Map<string, number>();
  const requirements: { file: string; destination: string }[] = [];
  const realPackages = new Map<string, LocalPackage>();
  const fauxPackages = new Map<string, LocalPackage>();
  const outsideDirs: string[] = [];
  let workingDir: string | null = null;

  for (const written of config.dependencies) {
    if (!written.startsWith('.')) continue;
    const resolved = await resolveDirectory(configDir, written, config.name);
    if (resolved !== configDir && !pureIsRelativeTo(resolved, configDir)) outsideDirs.push(resolved);
    const files = await fs.readdir(resolved);
    const name = path.basename(resolved);
    if (files.includes('pyproject.toml') || files.includes('setup.py')) {
      // The CLI counts the suffixed name, not the base name: a third "pkg" is "pkg_1" again.
      let folder = name;
      const seen = nameCounts.get(folder) ?? 0;
      if (seen > 0) folder += `_${seen}`;
      nameCounts.set(folder, (nameCounts.get(folder) ?? 0) + 1);
      realPackages.set(resolved, { written, destination: folder });
      if (written === '.') workingDir = `/deps/${folder}`;
      continue;
    }
    let destination: string;
    if (files.includes('__init__.py')) {
      if (name.includes('-')) {
        throw new GraphConfigError(`${config.name}: dependency '${written}': package directory '${name}' contains a hyphen; rename it to use it as a package`);
      }
      claim(name, written);
      destination = `/deps/outer-${name}/${name}`;
    } else {
      destination = `/deps/outer-${name}/src`;
      for (const file of files) {
        if (file === '__pycache__' || file.startsWith('.') || !(await isDirectory(path.join(resolved, file)))) continue;
        if (await containsPythonFile(path.join(resolved, file))) claim(file, written);
      }
    }
    fauxPackages.set(resolved, { written, destination });
    if (written === '.') workingDir = destination;
    if (files.includes('requirements.txt')) {
      requirements.push({ file: path.join(resolved, 'requirements.txt'), destination: `${destination}/requirements.txt` });
    }
  }
  return { requirements, realPackages, fauxPackages, workingDir, outsideDirs };
}

async function resolveDirectory(configDir: string, written: string, configName: string): Promise<string> {
  let resolved: string;
  try {
    // Not path.join: it would fold `link/..` before the link is followed; realpath(3) follows it.
    resolved = await fs.realpath(`${configDir}/${written}`);
  } catch {
    throw new GraphConfigError(`${configName}: dependency '${written}' does not exist (looked for ${path.join(configDir, written)})`);
  }
  if (!(await isDirectory(resolved))) throw new GraphConfigError(`${configName}: dependency '${written}' must be a directory`);
  return resolved;
}

async function isDirectory(target: string): Promise<boolean> {
  try {
    return (await fs.stat(target)).isDirectory();
  } catch {
    return false;
  }
}

async function containsPythonFile(directory: string): Promise<boolean> {
  try {
    return (await fs.readdir(directory)).some((file) => file.endsWith('.py'));
  } catch {
    return false; // unreadable: the CLI skips it too
  }
}
