import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

const IDENTITY = {
  GIT_AUTHOR_NAME: 'Berth Test',
  GIT_AUTHOR_EMAIL: 'test@berth.invalid',
  GIT_COMMITTER_NAME: 'Berth Test',
  GIT_COMMITTER_EMAIL: 'test@berth.invalid',
};

/** Runs git for a fixture (never for the code under test) and answers its trimmed stdout. */
export async function git(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('git', args, { cwd, env: { ...process.env, ...IDENTITY, LC_ALL: 'C' }, maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

export interface TempDir {
  path: string;
  remove(): Promise<void>;
}

export async function tempDir(prefix = 'berth-codehost-'): Promise<TempDir> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  return { path: dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export interface FixtureRepository {
  /** The bare repository remotes point at: `<root>/<owner>/<name>.git`. */
  bare: string;
  /** A working clone that `commit` writes through. */
  work: string;
  defaultBranch: string;
  /** A branch forked from the first commit with a file of its own: `main`, or `trunk` when `main` is the default. */
  sideBranch: string;
  /** Commit shas: `first` (tagged v1.0, annotated, and v1-light), `head` of the default branch, `side` (head of the side branch). */
  commits: { first: string; head: string; side: string };
  /** Commits files on a branch (created from the default branch if new), pushes, answers the sha. */
  commit(branch: string, files: Record<string, string>, message?: string): Promise<string>;
}

export interface RepositoryOptions {
  owner?: string;
  name?: string;
  /** The branch the bare repository's HEAD names; `trunk` unless given, so nothing can pass by assuming `main`. */
  defaultBranch?: string;
  /** Adds a file of this many random (incompressible) bytes to the default branch's head. */
  bigFileBytes?: number;
}

/**
 * A real repository with history: on the default branch a first commit (tagged), then a
 * second with an executable script and a symbolic link; a side branch that forks from
 * the first commit; HEAD of the bare repository on the default branch.
 */
export async function createRepository(root: string, options: RepositoryOptions = {}): Promise<FixtureRepository> {
  const owner = options.owner ?? 'acme';
  const name = options.name ?? 'agent';
  const defaultBranch = options.defaultBranch ?? 'trunk';
  const work = path.join(root, 'work', owner, name);
  const bare = path.join(root, owner, `${name}.git`);
  await mkdir(work, { recursive: true });
  await mkdir(path.dirname(bare), { recursive: true });
  await git(work, ['init', '--quiet', '--initial-branch', defaultBranch]);
  await git(root, ['init', '--quiet', '--bare', bare]);
  await git(work, ['remote', 'add', 'origin', bare]);

  await writeFile(path.join(work, 'README.md'), 'version 1\n');
  await writeFile(path.join(work, 'langgraph.json'), '{"graphs": {"agent": "./agent.py:graph"}}\n');
  await git(work, ['add', '.']);
  await git(work, ['commit', '--quiet', '-m', 'first']);
  const first = await git(work, ['rev-parse', 'HEAD']);
  await git(work, ['tag', '-a', 'v1.0', '-m', 'release 1.0']);
  await git(work, ['tag', 'v1-light']);

  await writeFile(path.join(work, 'README.md'), 'version 2\n');
  await writeFile(path.join(work, 'run.sh'), '#!/bin/sh\necho run\n');
  await chmod(path.join(work, 'run.sh'), 0o755);
  await symlink('README.md', path.join(work, 'LINK.md'));
  if (options.bigFileBytes) await writeFile(path.join(work, 'big.bin'), randomBytes(options.bigFileBytes));
  await git(work, ['add', '.']);
  await git(work, ['commit', '--quiet', '-m', 'second']);
  const head = await git(work, ['rev-parse', 'HEAD']);

  const sideBranch = defaultBranch === 'main' ? 'trunk' : 'main';
  await git(work, ['checkout', '--quiet', '-b', sideBranch, first]);
  await writeFile(path.join(work, 'side-only.txt'), `only on ${sideBranch}\n`);
  await git(work, ['add', '.']);
  await git(work, ['commit', '--quiet', '-m', 'side branch']);
  const side = await git(work, ['rev-parse', 'HEAD']);
  await git(work, ['checkout', '--quiet', defaultBranch]);

  await git(work, ['push', '--quiet', 'origin', '--all']);
  await git(work, ['push', '--quiet', 'origin', '--tags']);
  await git(bare, ['symbolic-ref', 'HEAD', `refs/heads/${defaultBranch}`]);

  const commit = async (branch: string, files: Record<string, string>, message = 'change'): Promise<string> => {
    const exists = (await git(work, ['branch', '--list', branch])) !== '';
    await git(work, ['checkout', '--quiet', ...(exists ? [branch] : ['-b', branch, defaultBranch])]);
    for (const [file, content] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(work, file)), { recursive: true });
      await writeFile(path.join(work, file), content);
    }
    await git(work, ['add', '.']);
    await git(work, ['commit', '--quiet', '-m', message]);
    await git(work, ['push', '--quiet', 'origin', branch]);
    const sha = await git(work, ['rev-parse', 'HEAD']);
    await git(work, ['checkout', '--quiet', defaultBranch]);
    return sha;
  };
  return { bare, work, defaultBranch, sideBranch, commits: { first, head, side }, commit };
}
