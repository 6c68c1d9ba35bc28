import path from 'node:path';
import { parseEnv } from 'node:util';
import type { LangGraphConfig } from './langgraph-config.js';
import { JsonNumber, type OrderedObject, pythonFloatRepr } from './ordered-json.js';

/**
 * langgraph.json's `env` (issue 21, item 3), as the LangGraph CLI applies it: an object's
 * values reach the container as Python's `str()` prints them (`True`, `1.0`), a string names
 * a KEY=VALUE file relative to langgraph.json. Neither is written into the image: the engine
 * stores the variables encrypted with the revision and gives them to the container at run
 * time, and the build removes the file from its context.
 */

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** An env file bigger than this is not read (a .env is a few lines). */
export const MAX_ENV_FILE_BYTES = 256 * 1024;

export interface ConfigEnv {
  variables: Record<string, string>;
  /** Names left out, for the build log (never values): not valid variable names, or holding NUL. */
  skipped: string[];
}

/** The env file's path relative to the project root (with `/`), or null when `env` is not a file or the path leaves the root. */
export function envFilePath(config: LangGraphConfig, configPath: string): string | null {
  if (typeof config.env !== 'string' || config.env === '') return null;
  if (config.env.includes('\0') || path.posix.isAbsolute(config.env)) return null;
  const joined = path.posix.normalize(path.posix.join(path.posix.dirname(configPath), config.env));
  if (joined === '..' || joined.startsWith('../') || joined === '.') return null;
  return joined;
}

/** The variables of an `env` object. */
export function envFromObject(env: OrderedObject): ConfigEnv {
  const entries: [string, string][] = [];
  for (const [name, value] of env) {
    if (typeof value === 'string') entries.push([name, value]);
    else if (typeof value === 'boolean') entries.push([name, value ? 'True' : 'False']);
    else if (value instanceof JsonNumber) entries.push([name, value.isInteger ? value.source : pythonFloatRepr(value.value)]);
  }
  return checked(entries);
}

/** The variables of an env file (dotenv syntax, as python-dotenv and Node read it). */
export function envFromFile(text: string): ConfigEnv {
  return checked(Object.entries(parseEnv(text)).flatMap(([name, value]) => (value === undefined ? [] : [[name, value] as [string, string]])));
}

function checked(entries: [string, string][]): ConfigEnv {
  const variables: Record<string, string> = {};
  const skipped: string[] = [];
  for (const [name, value] of entries) {
    if (NAME.test(name) && !value.includes('\0')) variables[name] = value;
    else skipped.push(NAME.test(name) ? name : JSON.stringify(name.slice(0, 64)));
  }
  return { variables, skipped };
}
