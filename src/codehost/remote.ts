import { CodehostError } from './errors.js';
import { openGitSession } from './git-auth.js';
import { remoteFailure } from './git-errors.js';
import { runGit } from './git-process.js';
import type { GitAuth } from './types.js';
import { parseRepositoryUrl, type RepositoryLocation } from './url.js';

export interface RemoteOptions {
  signal?: AbortSignal;
  /** Where SSH host keys seen first are remembered (see git-auth.ts). */
  knownHostsFile?: string;
  /**
   * Whether `file://` URLs and local paths may be read. Off, a tenant cannot point Berth at
   * directories of the machine it runs on (other tenants' mirrors, for one). Default: true.
   */
  allowLocal?: boolean;
  /** How long each git command may wait for the remote before it is killed (see GitCommand.timeoutMs). */
  timeoutMs?: number;
}

export interface ResolvedRemote {
  location: RepositoryLocation;
  /** The credentials to use: those embedded in the URL, else the ones passed in. */
  auth: GitAuth | undefined;
}

/** Parses a repository URL, splits off embedded credentials and applies the local-repository policy. */
export function resolveRemote(url: string, auth: GitAuth | undefined, options: Pick<RemoteOptions, 'allowLocal'> = {}): ResolvedRemote {
  const location = parseRepositoryUrl(url);
  if (location.transport === 'file' && options.allowLocal === false) {
    throw new CodehostError('local-disabled', `git: repositories on the Berth host (${location.url}) are not allowed here; use an https:// or ssh URL`);
  }
  const embedded = location.credentials;
  const { credentials: _dropped, ...withoutCredentials } = location;
  return { location: withoutCredentials, auth: embedded ? { kind: 'basic', ...embedded } : auth };
}

/** Runs `git ls-remote <flags> <url> <patterns>` with the repository's credentials; throws a named failure. */
async function lsRemote(remote: ResolvedRemote, flags: string[], patterns: string[], options: RemoteOptions): Promise<string> {
  const session = await openGitSession(remote.location, remote.auth, options);
  try {
    const activity = `listing the refs of ${remote.location.url}`;
    const result = await runGit({
      args: ['ls-remote', ...flags, remote.location.url, ...patterns],
      env: session.env,
      scrub: session.scrub,
      activity,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
    if (result.code !== 0) throw remoteFailure(remote.location, activity, result);
    return result.stdout;
  } finally {
    await session.dispose();
  }
}

/**
 * The branch the remote's HEAD points at. Servers that do not say (dumb HTTP, very old
 * ones) get the branch whose commit HEAD names, preferring `main` and `master`; an empty
 * repository without that information gets `main`.
 */
export async function remoteDefaultBranch(url: string, auth: GitAuth | undefined, options: RemoteOptions = {}): Promise<string> {
  const remote = resolveRemote(url, auth, options);
  const output = await lsRemote(remote, ['--symref'], ['HEAD'], options);
  const symref = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(output);
  if (symref) return symref[1] as string;
  const headSha = /^([0-9a-f]{40,64})\tHEAD$/m.exec(output)?.[1];
  if (!headSha) return 'main';
  const heads = parseHeads(await lsRemote(remote, ['--heads'], [], options));
  const candidates = Object.keys(heads).filter((branch) => heads[branch] === headSha);
  return candidates.find((branch) => branch === 'main') ?? candidates.find((branch) => branch === 'master') ?? candidates.sort()[0] ?? 'main';
}

/** Branch name → commit sha. */
export type BranchHeads = Record<string, string>;

/**
 * Every branch of a remote and the commit it is at, for polling repositories that send no
 * webhooks: keep the answer and compare the next one with `diffBranchHeads`.
 */
export async function remoteBranchHeads(
  url: string,
  auth: GitAuth | undefined,
  signal?: AbortSignal,
  options: Omit<RemoteOptions, 'signal'> = {},
): Promise<BranchHeads> {
  return parseHeads(await lsRemote(resolveRemote(url, auth, options), ['--heads'], [], { ...options, signal }));
}

export interface BranchChange {
  branch: string;
  /** Null when the branch is new. */
  before: string | null;
  /** Null when the branch was deleted. */
  after: string | null;
}

/** What changed between two polls, sorted by branch name. */
export function diffBranchHeads(previous: BranchHeads, current: BranchHeads): BranchChange[] {
  const branches = new Set([...Object.keys(previous), ...Object.keys(current)]);
  const changes: BranchChange[] = [];
  for (const branch of [...branches].sort()) {
    const before = previous[branch] ?? null;
    const after = current[branch] ?? null;
    if (before !== after) changes.push({ branch, before, after });
  }
  return changes;
}

function parseHeads(output: string): BranchHeads {
  const heads: BranchHeads = {};
  for (const line of output.split('\n')) {
    const match = /^([0-9a-f]{40,64})\trefs\/heads\/(.+)$/.exec(line);
    if (match) heads[match[2] as string] = match[1] as string;
  }
  return heads;
}
