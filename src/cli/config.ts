/**
 * Where the CLI finds Berth and its key: flags, then BERTH_URL / BERTH_API_KEY /
 * BERTH_TENANT_ID, then the profile `berth login` wrote
 * ($XDG_CONFIG_HOME/berth/profiles.json, or ~/.config/berth/profiles.json; mode 0600).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CliExit, EXIT } from './io.js';

export interface Connection {
  url: string;
  apiKey: string;
  tenantId?: string;
}

interface Profile {
  url: string;
  api_key: string;
  tenant_id?: string;
}

interface ProfileFile {
  current?: string;
  profiles: Record<string, Profile>;
}

export interface ConnectionFlags {
  url?: string;
  apiKey?: string;
  tenantId?: string;
  profile?: string;
}

export function profilesPath(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME?.trim() || path.join(env.HOME?.trim() || os.homedir(), '.config');
  return path.join(base, 'berth', 'profiles.json');
}

function readProfiles(env: NodeJS.ProcessEnv): ProfileFile {
  const file = profilesPath(env);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return { profiles: {} };
  }
  try {
    const parsed = JSON.parse(text) as ProfileFile;
    return { current: parsed.current, profiles: parsed.profiles ?? {} };
  } catch {
    throw new CliExit(EXIT.usage, `the profile file ${file} is not valid JSON`, 'run `berth login` again to rewrite it');
  }
}

/** Saves a profile (and makes it the current one) in a file only its owner can read. */
export function saveProfile(env: NodeJS.ProcessEnv, name: string, connection: Connection): string {
  const file = profilesPath(env);
  const profiles = readProfiles(env);
  profiles.profiles[name] = { url: connection.url, api_key: connection.apiKey, ...(connection.tenantId ? { tenant_id: connection.tenantId } : {}) };
  profiles.current = name;
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, `${JSON.stringify(profiles, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(temporary, 0o600);
  fs.renameSync(temporary, file);
  return file;
}

export function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv): Connection {
  const file = readProfiles(env);
  const profileName = flags.profile ?? env.BERTH_PROFILE?.trim() ?? file.current;
  const profile = profileName ? file.profiles[profileName] : undefined;
  if (flags.profile && !profile) {
    throw new CliExit(EXIT.usage, `there is no profile named "${flags.profile}" in ${profilesPath(env)}`, `run \`berth login --profile ${flags.profile}\``);
  }
  const url = flags.url ?? (env.BERTH_URL?.trim() || profile?.url);
  const apiKey = flags.apiKey ?? (env.BERTH_API_KEY?.trim() || profile?.api_key);
  const tenantId = flags.tenantId ?? (env.BERTH_TENANT_ID?.trim() || profile?.tenant_id);
  if (!url) throw new CliExit(EXIT.usage, 'no Berth URL is configured', 'pass --url, set BERTH_URL, or run `berth login`');
  if (!apiKey) throw new CliExit(EXIT.usage, 'no API key is configured', 'set BERTH_API_KEY, or run `berth login`');
  return { url, apiKey, ...(tenantId ? { tenantId } : {}) };
}
