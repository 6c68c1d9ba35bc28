import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { allowedProtocols } from './git-process.js';
import { basicToken, createScrubber } from './scrub.js';
import type { GitAuth } from './types.js';
import type { RepositoryLocation } from './url.js';

/** What one git invocation (or a few for one repository) runs with. */
export interface GitSession {
  env: NodeJS.ProcessEnv;
  scrub: (text: string) => string;
  /** Removes the temporary key and known_hosts files, if any. */
  dispose(): Promise<void>;
}

export interface SessionOptions {
  /**
   * The known_hosts file that remembers SSH host keys seen first (trust on first use);
   * Berth passes one in its data directory so the memory survives restarts.
   */
  knownHostsFile?: string;
  /** Whether git may use the `file` transport (local repositories); default true, as RemoteOptions. */
  allowLocal?: boolean;
}

// Operator settings for TLS and proxies pass through; anything else named GIT_* could point
// git at another repository, inject config or trace headers (GIT_TRACE_CURL) into output.
const INHERITED_GIT_VARIABLES = new Set([
  'GIT_SSL_CAINFO',
  'GIT_SSL_CAPATH',
  'GIT_SSL_NO_VERIFY',
  'GIT_SSL_CERT',
  'GIT_SSL_KEY',
  'GIT_PROXY_COMMAND',
  'GIT_PROXY_SSL_CAINFO',
  'GIT_EXEC_PATH',
  'GIT_HTTP_USER_AGENT',
]);

/**
 * Prepares git's environment for one repository and its credentials.
 *
 * HTTP(S): the credentials go into an `Authorization: Basic` header through
 * `http.<origin>.extraHeader`, set with GIT_CONFIG_COUNT/KEY/VALUE environment variables
 * (git ≥ 2.31). Unlike argv or a URL, the environment is readable only by Berth's own
 * user; unlike a GIT_ASKPASS script it needs no file and no 401 round trip, and nothing
 * reaches a credential helper that could store the token. The header is scoped to the
 * repository's origin. Credential helpers are switched off and prompts disabled, so a
 * wrong password fails at once instead of using or overwriting the host's stored ones.
 *
 * SSH: the key goes into a private temporary directory (0700, file 0600) named by
 * GIT_SSH_COMMAND with `IdentitiesOnly` and no agent, so exactly that key is offered.
 * Host keys: given `knownHosts`, only those keys are accepted (`StrictHostKeyChecking=yes`);
 * otherwise `accept-new`: Berth runs unattended and cannot ask anyone to confirm a key, so
 * the first key seen is remembered in `knownHostsFile` and a changed key is refused
 * later (trust on first use). `no` would accept a changed key, i.e. a man in the middle.
 * `BatchMode` makes ssh fail instead of prompting.
 */
export async function openGitSession(location: RepositoryLocation, auth: GitAuth | undefined, options: SessionOptions = {}): Promise<GitSession> {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('GIT_') || INHERITED_GIT_VARIABLES.has(name)) env[name] = value;
  }
  delete env.SSH_ASKPASS;
  Object.assign(env, {
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '',
    LC_ALL: 'C',
    LANGUAGE: 'C',
    GIT_ALLOW_PROTOCOL: allowedProtocols(options.allowLocal !== false),
  });

  const config: [string, string][] = [
    ['credential.helper', ''],
    ['protocol.ext.allow', 'never'],
    // Mirrors and checkouts never follow submodules, whatever the host's git config says.
    ['submodule.recurse', 'false'],
    ['fetch.recurseSubmodules', 'false'],
  ];
  let tempDir: string | undefined;
  if (auth?.kind === 'basic' && (location.transport === 'http' || location.transport === 'https')) {
    const host = location.host?.includes(':') ? `[${location.host}]` : location.host;
    const origin = `${location.transport}://${host}${location.port === null ? '' : `:${location.port}`}/`;
    config.push([`http.${origin}.extraHeader`, `Authorization: Basic ${basicToken(auth)}`]);
  }
  if (location.transport === 'ssh') {
    const sshOptions = ['-o BatchMode=yes', '-o ConnectTimeout=30'];
    let hostKeyOptions = ['-o StrictHostKeyChecking=accept-new'];
    if (options.knownHostsFile) hostKeyOptions.push(`-o UserKnownHostsFile=${shellQuote(options.knownHostsFile)}`);
    if (auth?.kind === 'ssh-key') {
      tempDir = await mkdtemp(path.join(os.tmpdir(), 'berth-git-'));
      try {
        const keyFile = path.join(tempDir, 'key');
        await writeFile(keyFile, auth.privateKey.endsWith('\n') ? auth.privateKey : `${auth.privateKey}\n`, { mode: 0o600, flag: 'wx' });
        sshOptions.push(`-i ${shellQuote(keyFile)}`, '-o IdentitiesOnly=yes', '-o IdentityAgent=none');
        if (auth.knownHosts) {
          const knownHostsFile = path.join(tempDir, 'known_hosts');
          await writeFile(knownHostsFile, `${auth.knownHosts.trim()}\n`, { mode: 0o600, flag: 'wx' });
          hostKeyOptions = ['-o StrictHostKeyChecking=yes', `-o UserKnownHostsFile=${shellQuote(knownHostsFile)}`];
        }
      } catch (error) {
        await rm(tempDir, { recursive: true, force: true });
        throw error;
      }
    }
    env.GIT_SSH_COMMAND = ['ssh', ...sshOptions, ...hostKeyOptions].join(' ');
    env.GIT_SSH_VARIANT = 'ssh';
  }

  env.GIT_CONFIG_COUNT = String(config.length);
  config.forEach(([key, value], index) => {
    env[`GIT_CONFIG_KEY_${index}`] = key;
    env[`GIT_CONFIG_VALUE_${index}`] = value;
  });
  return {
    env,
    scrub: createScrubber(auth),
    dispose: async () => {
      if (tempDir) await rm(tempDir, { recursive: true, force: true });
    },
  };
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
