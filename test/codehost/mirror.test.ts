import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, readlink, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MirrorCache } from '../../src/codehost/mirror.js';
import { createRepository, type FixtureRepository, git, type TempDir, tempDir } from '../support/git-repos.js';
import { type GitHttpServer, startGitHttpServer } from '../support/git-http-server.js';
import { commandLines, filesContaining } from '../support/processes.js';
import { failsWith } from '../support/codehost.js';

const PASSWORD = 'pw-Zq8!secret';
const ROOT = path.resolve(import.meta.dirname, '../..');

const exists = (file: string) =>
  stat(file).then(
    () => true,
    () => false,
  );

describe('repository mirrors and checkouts', () => {
  let dir: TempDir;
  let repo: FixtureRepository;
  let server: GitHttpServer;
  let counter = 0;
  /** A fresh destination path under the temp dir. */
  const dest = () => path.join(dir.path, 'checkouts', `out-${++counter}`);
  const newCache = (options: { maxBytes?: number } = {}) => new MirrorCache({ root: path.join(dir.path, `mirrors-${++counter}`), ...options });

  before(async () => {
    dir = await tempDir();
    repo = await createRepository(dir.path, { owner: 'acme', name: 'agent', defaultBranch: 'trunk' });
    server = await startGitHttpServer({ root: dir.path, auth: { username: 'alice', password: PASSWORD } });
  });
  after(async () => {
    await server?.close();
    await dir?.remove();
  });

  it('reads one file of a commit without a checkout: regular files only, within a bound, never through a link or a pattern', async () => {
    const cache = newCache();
    const { commitSha } = await cache.resolve({ url: repo.bare, ref: 'trunk' });
    const read = (file: string, maxBytes = 1024) => cache.readFile({ url: repo.bare, commitSha, file, maxBytes });
    assert.equal(await read('README.md'), 'version 2\n');
    assert.equal(await read('LINK.md'), null, 'a symbolic link is not followed (nor read as its target)');
    assert.equal(await read('*.md'), null, 'a path is a path, not a pattern');
    assert.equal(await read('missing.txt'), null);
    assert.equal(await read('README.md', 3), null, 'a file past the bound is not read');
    await assert.rejects(cache.readFile({ url: repo.bare, commitSha: 'trunk', file: 'README.md', maxBytes: 10 }));
  });

  it('writes the tree of a branch, a tag, a full or short sha into a directory without .git', async () => {
    const cache = newCache();
    const trunk = dest();
    assert.deepEqual(await cache.checkout({ url: repo.bare, ref: 'trunk', dest: trunk }), { commitSha: repo.commits.head });
    assert.equal(await readFile(path.join(trunk, 'README.md'), 'utf8'), 'version 2\n');
    assert.equal((await stat(path.join(trunk, 'run.sh'))).mode & 0o111, 0o111, 'the executable bit survives');
    assert.equal(await readlink(path.join(trunk, 'LINK.md')), 'README.md', 'symbolic links stay links');
    assert.deepEqual((await readdir(trunk)).sort(), ['LINK.md', 'README.md', 'langgraph.json', 'run.sh']);

    const expectations: [string, string][] = [
      ['v1.0', repo.commits.first], // annotated tag
      ['v1-light', repo.commits.first], // lightweight tag
      ['main', repo.commits.side],
      ['refs/heads/main', repo.commits.side],
      [repo.commits.first, repo.commits.first],
      [repo.commits.side.slice(0, 7), repo.commits.side],
    ];
    for (const [ref, sha] of expectations) {
      const out = dest();
      assert.deepEqual(await cache.checkout({ url: `file://${repo.bare}`, ref, dest: out }), { commitSha: sha }, ref);
      assert.equal(await exists(path.join(out, 'side-only.txt')), sha === repo.commits.side, ref);
      assert.equal(await exists(path.join(out, '.git')), false);
    }
    assert.deepEqual(await cache.resolve({ url: repo.bare, ref: 'trunk' }), { commitSha: repo.commits.head });
  });

  it('goes on when the log throws or rejects', async () => {
    let calls = 0;
    const throwing = () => {
      calls++;
      throw new Error('log store down');
    };
    assert.equal((await newCache().checkout({ url: repo.bare, ref: 'trunk', dest: dest(), log: throwing })).commitSha, repo.commits.head);
    assert.ok(calls > 0);
    const rejecting = async () => {
      throw new Error('log store down');
    };
    assert.equal((await newCache().checkout({ url: repo.bare, ref: 'main', dest: dest(), log: rejecting })).commitSha, repo.commits.side);
  });

  it('fetches new commits and forgets deleted branches on the next checkout', async () => {
    const scratch = await createRepository(path.join(dir.path, 'moving'), { name: 'moving' });
    const cache = newCache();
    assert.equal((await cache.checkout({ url: scratch.bare, ref: 'trunk', dest: dest() })).commitSha, scratch.commits.head);
    const newer = await scratch.commit('trunk', { 'README.md': 'version 3\n' });
    await scratch.commit('short-lived', { 'tmp.txt': 'tmp\n' });
    const out = dest();
    assert.equal((await cache.checkout({ url: scratch.bare, ref: 'trunk', dest: out })).commitSha, newer);
    assert.equal(await readFile(path.join(out, 'README.md'), 'utf8'), 'version 3\n');
    assert.ok((await cache.resolve({ url: scratch.bare, ref: 'short-lived' })).commitSha);

    await git(scratch.work, ['push', '--quiet', 'origin', '--delete', 'short-lived']);
    await assert.rejects(cache.resolve({ url: scratch.bare, ref: 'short-lived' }), failsWith('ref-not-found'));
  });

  it('fetches a commit that no branch or tag reaches when it is asked for by full sha', async () => {
    const scratch = await createRepository(path.join(dir.path, 'pulls'), { name: 'pulls' });
    await git(scratch.work, ['checkout', '--quiet', '-b', 'pr']);
    await writeFile(path.join(scratch.work, 'pr.txt'), 'pull request\n');
    await git(scratch.work, ['add', '.']);
    await git(scratch.work, ['commit', '--quiet', '-m', 'pr']);
    const sha = await git(scratch.work, ['rev-parse', 'HEAD']);
    await git(scratch.work, ['push', '--quiet', 'origin', 'HEAD:refs/pull/1/head']);
    const out = dest();
    assert.deepEqual(await newCache().checkout({ url: scratch.bare, ref: sha, dest: out }), { commitSha: sha });
    assert.equal(await readFile(path.join(out, 'pr.txt'), 'utf8'), 'pull request\n');
  });

  it('names an unknown ref and the repository, and leaves no destination', async () => {
    const url = `${server.url}/acme/agent`;
    const out = dest();
    await assert.rejects(
      newCache().checkout({ url, ref: 'feature-x', dest: out, auth: { kind: 'basic', username: 'alice', password: PASSWORD } }),
      (error: unknown) => {
        failsWith('ref-not-found', PASSWORD)(error);
        assert.equal((error as Error).message, `git: ref 'feature-x' not found in ${url}`);
        return true;
      },
    );
    assert.equal(await exists(out), false);
    assert.deepEqual(await readdir(path.dirname(out)).then((names) => names.filter((name) => name.startsWith(path.basename(out)))), []);
  });

  it('refuses a destination that has files, and fills an empty one', async () => {
    const cache = newCache();
    const full = dest();
    await mkdir(full, { recursive: true });
    await writeFile(path.join(full, 'keep.txt'), 'mine\n');
    await assert.rejects(cache.checkout({ url: repo.bare, ref: 'trunk', dest: full }), failsWith('destination-not-empty'));
    assert.deepEqual(await readdir(full), ['keep.txt']);

    const empty = dest();
    await mkdir(empty, { recursive: true });
    await cache.checkout({ url: repo.bare, ref: 'trunk', dest: empty });
    assert.ok(await exists(path.join(empty, 'README.md')));
  });

  it('keeps a password given in the URL out of log lines, errors, mirror files and git command lines', async () => {
    const base64 = Buffer.from(`alice:${PASSWORD}`).toString('base64');
    const leaks: string[] = [];
    let sawGit = false;
    const watcher = await startGitHttpServer({
      root: dir.path,
      auth: { username: 'alice', password: PASSWORD },
      onRequest: async () => {
        // While git talks to this server, no process may carry the password in its arguments.
        for (const line of await commandLines()) {
          if (line.includes(PASSWORD) || line.includes(encodeURIComponent(PASSWORD)) || line.includes(base64)) leaks.push(line);
          if (line.includes(watcher.url)) sawGit = true;
        }
      },
    });
    try {
      const url = `${watcher.url.replace('http://', `http://alice:${encodeURIComponent(PASSWORD)}@`)}/acme/agent.git`;
      const cache = newCache();
      const lines: string[] = [];
      const out = dest();
      const result = await cache.checkout({ url, ref: 'trunk', dest: out, log: (line) => lines.push(line) });
      assert.equal(result.commitSha, repo.commits.head);
      assert.ok(
        lines.some((line) => line.includes('Receiving objects') || line.includes('new branch')),
        `git's progress is logged: ${lines.join('\n')}`,
      );
      assert.ok(sawGit, 'the command-line scan saw the git process (control)');
      assert.deepEqual(leaks, []);
      for (const line of lines) assert.ok(!line.includes(PASSWORD) && !line.includes(base64), line);
      assert.deepEqual(await filesContaining(path.dirname(cache.mirrorPath(url)), PASSWORD), []);
      assert.deepEqual(await filesContaining(path.dirname(cache.mirrorPath(url)), base64), []);

      const wrongUrl = `${watcher.url.replace('http://', 'http://alice:Wr0ng-Pa55word@')}/acme/agent.git`;
      const wrongLines: string[] = [];
      await assert.rejects(
        newCache().checkout({ url: wrongUrl, ref: 'trunk', dest: dest(), log: (line) => wrongLines.push(line) }),
        failsWith('auth-failed', 'Wr0ng-Pa55word'),
      );
      for (const line of wrongLines) assert.ok(!line.includes('Wr0ng-Pa55word'), line);
    } finally {
      await watcher.close();
    }
  });

  it('names a missing repository and leaves no half-made mirror', async () => {
    const cache = newCache();
    const url = `${server.url}/acme/missing.git`;
    await assert.rejects(
      cache.checkout({ url, ref: 'trunk', dest: dest(), auth: { kind: 'basic', username: 'alice', password: PASSWORD } }),
      (error: unknown) => {
        failsWith('repository-not-found', PASSWORD)(error);
        assert.match((error as Error).message, /acme\/missing\.git/);
        return true;
      },
    );
    const root = path.dirname(cache.mirrorPath(url));
    assert.deepEqual(
      (await readdir(root)).filter((name) => name.endsWith('.git') || name.includes('.new-')),
      [],
    );
  });

  it('serves concurrent checkouts of one repository from one sound mirror', async () => {
    const cache = newCache();
    const refs = ['trunk', 'main', 'v1.0', 'trunk', repo.commits.side];
    const expected = [repo.commits.head, repo.commits.side, repo.commits.first, repo.commits.head, repo.commits.side];
    const results = await Promise.all(refs.map((ref) => cache.checkout({ url: repo.bare, ref, dest: dest() })));
    assert.deepEqual(
      results.map((result) => result.commitSha),
      expected,
    );
    const mirror = cache.mirrorPath(repo.bare);
    assert.deepEqual(
      (await readdir(path.dirname(mirror))).filter((name) => name !== 'known_hosts'),
      [path.basename(mirror)],
    );
    await git(mirror, ['fsck', '--no-progress']);
  });

  it('waits while another process holds the mirror lock, then goes on', async () => {
    const cache = newCache();
    const mirror = cache.mirrorPath(repo.bare);
    await mkdir(path.dirname(mirror), { recursive: true });
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const lockfile = require('proper-lockfile');
         lockfile.lock(process.argv[1], { lockfilePath: process.argv[1] + '.lock', realpath: false }).then((release) => {
           console.log('locked');
           process.stdin.once('data', () => release().then(() => process.exit(0)));
         });`,
        mirror,
      ],
      { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
      let waiting!: () => void;
      const sawWaiting = new Promise<void>((resolve) => {
        waiting = resolve;
      });
      const events: string[] = [];
      const checkout = cache
        .checkout({
          url: repo.bare,
          ref: 'trunk',
          dest: dest(),
          log: (line) => {
            if (line.startsWith('waiting for another Berth process')) {
              events.push('waiting');
              waiting();
            }
          },
        })
        .then((result) => {
          events.push('done');
          return result;
        });
      await sawWaiting;
      assert.deepEqual(events, ['waiting']);
      holder.stdin.write('release\n');
      assert.equal((await checkout).commitSha, repo.commits.head);
      assert.deepEqual(events, ['waiting', 'done']);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('takes over a lock that a dead process left behind', async () => {
    const cache = newCache();
    const mirror = cache.mirrorPath(repo.bare);
    await mkdir(`${mirror}.lock`, { recursive: true });
    const old = new Date(Date.now() - 10 * 60 * 1000);
    await utimes(`${mirror}.lock`, old, old);
    const lines: string[] = [];
    assert.equal((await cache.checkout({ url: repo.bare, ref: 'trunk', dest: dest(), log: (line) => lines.push(line) })).commitSha, repo.commits.head);
    assert.ok(!lines.some((line) => line.startsWith('waiting')), 'a stale lock is not waited for');
  });

  it('on abort kills git and everything it started, and leaves no destination or mirror', async () => {
    let arrived!: () => void;
    const requestArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const holding = await startGitHttpServer({
      root: dir.path,
      onRequest: () => {
        arrived();
        return new Promise<void>(() => {}); // never answers
      },
    });
    try {
      const cache = newCache();
      const url = `${holding.url}/acme/agent.git`;
      const out = dest();
      const controller = new AbortController();
      const checkout = cache.checkout({ url, ref: 'trunk', dest: out, signal: controller.signal });
      await requestArrived;
      assert.ok(
        (await commandLines()).some((line) => line.includes(holding.url)),
        'git is talking to the server (control)',
      );
      controller.abort();
      await assert.rejects(checkout, failsWith('aborted'));
      assert.deepEqual(
        (await commandLines()).filter((line) => line.includes(holding.url)),
        [],
        'no git process is left',
      );
      assert.equal(await exists(out), false);
      assert.deepEqual(
        (await readdir(path.dirname(cache.mirrorPath(url)))).filter((name) => name.endsWith('.git') || name.includes('.new-')),
        [],
      );
    } finally {
      await holding.close();
    }
  });

  it('stops a repository larger than the bound, whether its history or its tree is too large', async () => {
    const big = await createRepository(path.join(dir.path, 'big'), { name: 'big', bigFileBytes: 400 * 1024 });
    const cache = newCache({ maxBytes: 200 * 1024 });
    const out = dest();
    await assert.rejects(cache.checkout({ url: big.bare, ref: 'trunk', dest: out }), (error: unknown) => {
      failsWith('too-large')(error);
      assert.match((error as Error).message, /larger than the limit of 0\.2 MiB/);
      return true;
    });
    assert.equal(await exists(out), false);
    assert.equal(await exists(cache.mirrorPath(big.bare)), false, 'the oversized mirror is removed');

    // Zeros pack to almost nothing, so only the checkout's own bound can catch them.
    const sparse = await createRepository(path.join(dir.path, 'sparse'), { name: 'sparse' });
    const sha = await sparse.commit('trunk', { 'zeros.bin': '\0'.repeat(2 * 1024 * 1024) });
    const small = newCache({ maxBytes: 1024 * 1024 });
    await assert.rejects(small.checkout({ url: sparse.bare, ref: 'trunk', dest: dest() }), (error: unknown) => {
      failsWith('too-large')(error);
      assert.match((error as Error).message, /holds 2\.0 MiB of files, more than the limit of 1\.0 MiB/);
      return true;
    });
    assert.equal(
      (await small.checkout({ url: sparse.bare, ref: 'trunk', dest: dest(), maxBytes: 4 * 1024 * 1024 })).commitSha,
      sha,
      'a per-call bound overrides',
    );
  });
});
