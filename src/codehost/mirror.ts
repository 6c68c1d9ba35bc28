import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CodehostError } from './errors.js';
import { type GitSession, openGitSession } from './git-auth.js';
import { remoteFailure } from './git-errors.js';
import { runGit } from './git-process.js';
import { directorySize, isAbsentOrEmptyDirectory, isDirectory, removeGitLeftovers } from './mirror-files.js';
import { withMirrorLock } from './mirror-lock.js';
import { resolveRemote } from './remote.js';
import { type GitAuth, type LogLine, safeLog } from './types.js';
import { assertValidRef, type RepositoryLocation } from './url.js';

export interface MirrorCacheOptions {
  /** Holds one bare mirror per repository (Berth passes `<data dir>/git`). */
  root: string;
  /** Bound on a mirror's size on disk and on a checkout's files, in bytes; none if absent. */
  maxBytes?: number;
  /** Whether `file://` URLs and local paths are allowed (default true; see RemoteOptions). */
  allowLocal?: boolean;
  /** Where SSH host keys seen first are remembered; default `<root>/known_hosts`. */
  knownHostsFile?: string;
}

export interface ResolveRequest {
  /** Repository URL; credentials embedded in an http(s) URL are split off and used. */
  url: string;
  /** A branch, tag, `refs/…` name, or full or abbreviated commit sha. */
  ref: string;
  auth?: GitAuth;
  /** Receives git's progress and messages, scrubbed of credentials. */
  log?: LogLine;
  signal?: AbortSignal;
  /** Overrides the cache's bound for this call. */
  maxBytes?: number;
}

export interface CheckoutRequest extends ResolveRequest {
  /** Absolute path that must not exist or be an empty directory; gets the commit's files, no .git. */
  dest: string;
}

export interface ResolvedCommit {
  commitSha: string;
}

const FULL_SHA = /^([0-9a-f]{40}|[0-9a-f]{64})$/i;
const ABBREVIATED_SHA = /^[0-9a-f]{4,64}$/i;
/** How often a running fetch's mirror is measured against the size bound. */
const SIZE_CHECK_MS = 1000;

/**
 * One bare mirror per repository under `root`, updated before each use, from which
 * commits are written out as plain directory trees.
 *
 * A mirror is made with `git init --bare` plus a fetch of branches and tags rather than
 * `git clone --mirror`: a mirror clone also copies `refs/pull/*` (every pull request's
 * head on GitHub), and one code path for the first fetch and later ones keeps the
 * failure handling in one place. A new mirror is fetched into a temporary directory and
 * renamed into place, so a failed first fetch leaves nothing behind.
 *
 * Submodules are not fetched (their directories stay empty) and Git LFS files stay
 * pointer files.
 */
export class MirrorCache {
  private readonly knownHostsFile: string;

  constructor(private readonly options: MirrorCacheOptions) {
    this.knownHostsFile = options.knownHostsFile ?? path.join(options.root, 'known_hosts');
  }

  /** Where the mirror of `url` lives (whether or not it exists yet). */
  mirrorPath(url: string): string {
    return this.mirrorDir(resolveRemote(url, undefined, this.options).location);
  }

  /** Fetches the repository and answers which commit `ref` names there. */
  async resolve(resolveRequest: ResolveRequest): Promise<ResolvedCommit> {
    const request = { ...resolveRequest, log: safeLog(resolveRequest.log) };
    assertValidRef(request.ref);
    const remote = resolveRemote(request.url, request.auth, this.options);
    const session = await openGitSession(remote.location, remote.auth, { knownHostsFile: this.knownHostsFile, allowLocal: this.options.allowLocal });
    try {
      const commitSha = await this.resolveIn(remote.location, session, request);
      return { commitSha };
    } finally {
      await session.dispose();
    }
  }

  /**
   * Writes the tree of the commit `ref` names into `dest` (no `.git`) and answers its sha.
   * On any failure, abort included, `dest` is left as it was.
   */
  async checkout(checkoutRequest: CheckoutRequest): Promise<ResolvedCommit> {
    const request = { ...checkoutRequest, log: safeLog(checkoutRequest.log) };
    assertValidRef(request.ref);
    const dest = path.resolve(request.dest);
    if (!(await isAbsentOrEmptyDirectory(dest))) {
      throw new CodehostError('destination-not-empty', `git: cannot check out into ${dest}: it exists and is not an empty directory`);
    }
    const remote = resolveRemote(request.url, request.auth, this.options);
    const session = await openGitSession(remote.location, remote.auth, { knownHostsFile: this.knownHostsFile, allowLocal: this.options.allowLocal });
    try {
      const commitSha = await this.resolveIn(remote.location, session, request);
      const gitDir = this.mirrorDir(remote.location);
      await this.assertTreeFits(gitDir, session, remote.location, request, commitSha);
      await this.writeTree(gitDir, session, commitSha, dest, request);
      request.log?.(`checked out ${request.ref} at ${commitSha}`);
      return { commitSha };
    } finally {
      await session.dispose();
    }
  }

  /**
   * A file of a commit the mirror has (`resolve` brought it there), read without writing a
   * checkout: what the engine needs to tell whether a build's inputs changed. Null when the
   * commit has no regular file at `file` (absent, a directory, a symbolic link, a submodule)
   * or it is larger than `maxBytes`.
   */
  async readFile(request: { url: string; auth?: GitAuth; commitSha: string; file: string; maxBytes: number; signal?: AbortSignal }): Promise<string | null> {
    if (!FULL_SHA.test(request.commitSha)) throw new CodehostError('ref-not-found', `git: '${request.commitSha}' is not a full commit sha`);
    const remote = resolveRemote(request.url, request.auth, this.options);
    const session = await openGitSession(remote.location, remote.auth, { knownHostsFile: this.knownHostsFile, allowLocal: this.options.allowLocal });
    try {
      const gitDir = this.mirrorDir(remote.location);
      // ls-tree names the entry's mode and size without reading it: links (120000) and
      // submodules are not files, and a blob past the bound is never read.
      const listed = await runGit({
        args: ['--git-dir', gitDir, 'ls-tree', '-l', '-z', request.commitSha, '--', request.file],
        env: { ...session.env, GIT_LITERAL_PATHSPECS: '1' },
        scrub: session.scrub,
        activity: `looking up ${request.file} at ${request.commitSha}`,
        signal: request.signal,
      });
      const entry = /^(\d+) blob ([0-9a-f]+)\s+(\d+)\t/.exec(listed.stdout.split('\0')[0] ?? '');
      if (listed.code !== 0 || !entry || !['100644', '100755'].includes(entry[1] ?? '') || Number(entry[3]) > request.maxBytes) return null;
      const read = await runGit({
        args: ['--git-dir', gitDir, 'cat-file', 'blob', entry[2] as string],
        env: session.env,
        scrub: session.scrub,
        activity: `reading ${request.file} at ${request.commitSha}`,
        signal: request.signal,
        maxStdoutBytes: request.maxBytes,
      });
      return read.code === 0 ? read.stdout : null;
    } finally {
      await session.dispose();
    }
  }

  private async resolveIn(location: RepositoryLocation, session: GitSession, request: ResolveRequest): Promise<string> {
    const gitDir = this.mirrorDir(location);
    const { ref, signal } = request;
    // A full sha the mirror already has names the same commit forever: no fetch needed.
    if (FULL_SHA.test(ref) && (await isDirectory(gitDir))) {
      const known = await this.revParse(gitDir, session, `${ref}^{commit}`, signal);
      if (known) return known;
    }
    await this.update(location, session, request);
    const found = await this.findCommit(gitDir, session, ref, signal);
    if (found) return found;
    if (FULL_SHA.test(ref) && (await this.fetchCommit(location, session, request))) {
      const fetched = await this.revParse(gitDir, session, `${ref}^{commit}`, signal);
      if (fetched) return fetched;
    }
    throw new CodehostError('ref-not-found', `git: ref '${ref}' not found in ${location.url}`);
  }

  /** Branches win over tags of the same name, and both over a sha a name happens to look like. */
  private async findCommit(gitDir: string, session: GitSession, ref: string, signal?: AbortSignal): Promise<string | null> {
    const candidates = ref.startsWith('refs/') ? [ref] : [`refs/heads/${ref}`, `refs/tags/${ref}`];
    if (!ref.startsWith('refs/') && ABBREVIATED_SHA.test(ref)) candidates.push(ref);
    for (const candidate of candidates) {
      const sha = await this.revParse(gitDir, session, `${candidate}^{commit}`, signal);
      if (sha) return sha;
    }
    return null;
  }

  private async revParse(gitDir: string, session: GitSession, expression: string, signal?: AbortSignal): Promise<string | null> {
    const result = await runGit({
      args: ['--git-dir', gitDir, 'rev-parse', '--verify', '--quiet', expression],
      env: session.env,
      scrub: session.scrub,
      activity: 'resolving a ref',
      signal,
    });
    const sha = result.stdout.trim();
    return result.code === 0 && FULL_SHA.test(sha) ? sha : null;
  }

  /** Creates or updates the mirror, one writer at a time across processes. */
  private async update(location: RepositoryLocation, session: GitSession, request: ResolveRequest): Promise<void> {
    const gitDir = this.mirrorDir(location);
    await mkdir(this.options.root, { recursive: true });
    const onWait = () => request.log?.(`waiting for another Berth process to finish updating the mirror of ${location.url}`);
    await withMirrorLock(gitDir, { signal: request.signal, onWait }, async (signal) => {
      await this.removeAbandonedNewMirrors(gitDir);
      const exists = await isDirectory(gitDir);
      if (exists) await removeGitLeftovers(gitDir);
      const target = exists ? gitDir : `${gitDir}.new-${randomBytes(4).toString('hex')}`;
      try {
        if (!exists) await this.initMirror(target, location, session, signal);
        request.log?.(exists ? `fetching ${location.url}` : `cloning ${location.url}`);
        await this.fetch(target, location, session, ['fetch', '--prune', '--progress', '--no-write-fetch-head', 'origin'], { ...request, signal });
        if (!exists) await rename(target, gitDir);
      } catch (error) {
        if (!exists) await rm(target, { recursive: true, force: true });
        else if (error instanceof CodehostError && error.failure === 'too-large') await rm(gitDir, { recursive: true, force: true });
        else await removeGitLeftovers(gitDir);
        throw error;
      }
    });
  }

  /**
   * A commit no branch or tag reaches (a deleted branch, a pull request). Hosts that allow
   * fetching by sha (GitHub does) hand it over; it is kept under `refs/berth/commits/` so
   * that `--prune` and garbage collection leave it alone. False if the host refuses.
   */
  private async fetchCommit(location: RepositoryLocation, session: GitSession, request: ResolveRequest): Promise<boolean> {
    const gitDir = this.mirrorDir(location);
    return withMirrorLock(gitDir, { signal: request.signal }, async (signal) => {
      const refspec = `+${request.ref}:refs/berth/commits/${request.ref}`;
      try {
        await this.fetch(gitDir, location, session, ['fetch', '--progress', '--no-write-fetch-head', 'origin', refspec], { ...request, signal });
        return true;
      } catch (error) {
        await removeGitLeftovers(gitDir);
        if (error instanceof CodehostError && error.failure === 'failed') return false;
        throw error;
      }
    });
  }

  private async initMirror(target: string, location: RepositoryLocation, session: GitSession, signal: AbortSignal): Promise<void> {
    const git = (args: string[]) =>
      runGit({ args: ['--git-dir', target, ...args], env: session.env, scrub: session.scrub, activity: `creating the mirror of ${location.url}`, signal });
    const steps: string[][] = [
      ['init', '--bare', '--quiet'],
      ['config', 'remote.origin.url', location.url],
      ['config', 'remote.origin.fetch', '+refs/heads/*:refs/heads/*'],
      ['config', '--add', 'remote.origin.fetch', '+refs/tags/*:refs/tags/*'],
      // Garbage collection after a fetch must finish inside the lock, not in the background.
      ['config', 'gc.autoDetach', 'false'],
      ['config', 'core.logAllRefUpdates', 'false'],
    ];
    for (const args of steps) {
      const result = await git(args);
      if (result.code !== 0)
        throw new CodehostError('failed', `git: could not create the mirror of ${location.url} in ${target}: ${result.stderrTail.at(-1) ?? ''}`);
    }
  }

  /** Runs a fetch into `gitDir` while watching its size; maps failures to named errors. */
  private async fetch(
    gitDir: string,
    location: RepositoryLocation,
    session: GitSession,
    args: string[],
    request: ResolveRequest & { signal: AbortSignal },
  ): Promise<void> {
    const maxBytes = request.maxBytes ?? this.options.maxBytes;
    const tooLarge = new AbortController();
    const watchdog =
      maxBytes === undefined
        ? undefined
        : setInterval(() => {
            void directorySize(gitDir).then((size) => {
              if (size > maxBytes) tooLarge.abort();
            });
          }, SIZE_CHECK_MS);
    const activity = `fetching ${location.url}`;
    try {
      const result = await runGit({
        args: ['--git-dir', gitDir, ...args],
        env: session.env,
        scrub: session.scrub,
        activity,
        signal: AbortSignal.any([request.signal, tooLarge.signal]),
        onLine: request.log,
      });
      if (result.code !== 0) throw remoteFailure(location, activity, result);
    } catch (error) {
      if (tooLarge.signal.aborted && !request.signal.aborted) throw mirrorTooLarge(location, maxBytes as number);
      throw error;
    } finally {
      if (watchdog) clearInterval(watchdog);
    }
    if (maxBytes !== undefined && (await directorySize(gitDir)) > maxBytes) throw mirrorTooLarge(location, maxBytes);
  }

  private async assertTreeFits(gitDir: string, session: GitSession, location: RepositoryLocation, request: CheckoutRequest, commitSha: string): Promise<void> {
    const maxBytes = request.maxBytes ?? this.options.maxBytes;
    if (maxBytes === undefined) return;
    const result = await runGit({
      args: ['--git-dir', gitDir, 'ls-tree', '-r', '-l', '-z', commitSha],
      env: session.env,
      scrub: session.scrub,
      activity: `measuring ${location.url} at ${commitSha}`,
      signal: request.signal,
    });
    if (result.code !== 0) throw new CodehostError('failed', `git: could not list the files of ${commitSha} in ${location.url}`);
    let total = 0;
    for (const entry of result.stdout.split('\0')) {
      const size = /^\d+ blob [0-9a-f]+\s+(\d+)\t/.exec(entry)?.[1];
      if (size) total += Number(size);
    }
    if (total > maxBytes) {
      throw new CodehostError(
        'too-large',
        `git: ${location.url} at ${request.ref} holds ${megabytes(total)} of files, more than the limit of ${megabytes(maxBytes)}`,
      );
    }
  }

  /**
   * Checks the commit out into a sibling of `dest` with a private index (so concurrent
   * checkouts of one mirror do not share one), then renames it into place.
   */
  private async writeTree(gitDir: string, session: GitSession, commitSha: string, dest: string, request: CheckoutRequest): Promise<void> {
    await mkdir(path.dirname(dest), { recursive: true });
    const partial = `${dest}.partial-${randomBytes(4).toString('hex')}`;
    const indexDir = await mkdtemp(path.join(os.tmpdir(), 'berth-index-'));
    try {
      await mkdir(partial);
      const result = await runGit({
        args: [
          '--git-dir',
          gitDir,
          '--work-tree',
          partial,
          '-c',
          'core.autocrlf=false',
          '-c',
          'core.symlinks=true',
          'checkout',
          '--force',
          commitSha,
          '--',
          '.',
        ],
        env: { ...session.env, GIT_INDEX_FILE: path.join(indexDir, 'index'), GIT_LFS_SKIP_SMUDGE: '1' },
        scrub: session.scrub,
        activity: `checking out ${commitSha}`,
        signal: request.signal,
        onLine: request.log,
      });
      if (result.code !== 0)
        throw new CodehostError('failed', `git: could not check out ${commitSha}: ${result.stderrTail.at(-1) ?? `exit code ${result.code}`}`);
      await rename(partial, dest).catch((error: NodeJS.ErrnoException) => {
        throw new CodehostError(
          'destination-not-empty',
          `git: cannot check out into ${dest}: ${error.code === 'ENOTEMPTY' || error.code === 'EEXIST' ? 'something else wrote into it meanwhile' : error.code}`,
        );
      });
    } catch (error) {
      await rm(partial, { recursive: true, force: true });
      throw error;
    } finally {
      await rm(indexDir, { recursive: true, force: true });
    }
  }

  /** `<root>/<owner>-<name>-<hash of the URL>.git`: readable, and one per URL. */
  private mirrorDir(location: RepositoryLocation): string {
    const hash = createHash('sha256').update(location.url).digest('hex').slice(0, 16);
    const slug = `${location.owner}-${location.name}`
      .replace(/[^A-Za-z0-9._-]+/g, '_')
      .replace(/^[._]+/, '')
      .slice(0, 60);
    return path.join(this.options.root, `${slug}-${hash}.git`);
  }

  /** First fetches that a killed process left half done (only ever removed under the lock). */
  private async removeAbandonedNewMirrors(gitDir: string): Promise<void> {
    const prefix = `${path.basename(gitDir)}.new-`;
    const names = await readdir(this.options.root).catch(() => [] as string[]);
    await Promise.all(names.filter((name) => name.startsWith(prefix)).map((name) => rm(path.join(this.options.root, name), { recursive: true, force: true })));
  }
}

function mirrorTooLarge(location: RepositoryLocation, maxBytes: number): CodehostError {
  return new CodehostError('too-large', `git: ${location.url} is larger than the limit of ${megabytes(maxBytes)}; the fetch was stopped`);
}

function megabytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
