import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GitProvider } from '../../src/codehost/git-provider.js';
import { diffBranchHeads, remoteBranchHeads, remoteDefaultBranch } from '../../src/codehost/remote.js';
import { createRepository, type FixtureRepository, git, type TempDir, tempDir } from '../support/git-repos.js';
import { type GitHttpServer, startGitHttpServer } from '../support/git-http-server.js';
import { failsWith } from '../support/codehost.js';

const PASSWORD = 'pw-Zq8!secret';

describe('git provider', () => {
  let dir: TempDir;
  let repo: FixtureRepository;
  let open: GitHttpServer;
  let guarded: GitHttpServer;

  before(async () => {
    dir = await tempDir();
    repo = await createRepository(dir.path, { owner: 'acme', name: 'agent', defaultBranch: 'trunk' });
    await createRepository(dir.path, { owner: 'acme', name: 'classic', defaultBranch: 'main' });
    open = await startGitHttpServer({ root: dir.path });
    guarded = await startGitHttpServer({ root: dir.path, auth: { username: 'alice', password: PASSWORD } });
  });
  after(async () => {
    await open?.close();
    await guarded?.close();
    await dir?.remove();
  });

  it('lists repositories given by local path, file:// and http URL with their default branches', async () => {
    const provider = new GitProvider({
      repositories: [repo.bare, `file://${path.join(dir.path, 'acme/classic.git')}`, `${open.url}/acme/agent.git`],
    });
    const listed = await provider.listRepositories();
    assert.deepEqual(
      listed.map(({ owner, name, url, defaultBranch }) => ({ owner, name, url, defaultBranch })),
      [
        { owner: 'acme', name: 'agent', url: repo.bare, defaultBranch: 'trunk' },
        { owner: 'acme', name: 'classic', url: `file://${path.join(dir.path, 'acme/classic.git')}`, defaultBranch: 'main' },
        { owner: 'acme', name: 'agent', url: `${open.url}/acme/agent.git`, defaultBranch: 'trunk' },
      ],
    );
    for (const repository of listed) assert.ok(Number.isSafeInteger(repository.id) && repository.id > 0);
    const again = await new GitProvider({ repositories: [`${open.url}/acme/agent`] }).listRepositories();
    assert.equal(again[0]?.id, listed[2]?.id, 'the same repository keeps its id');
  });

  it('follows a default branch that changes', async () => {
    const scratch = await createRepository(path.join(dir.path, 'scratch'), { name: 'moving', defaultBranch: 'trunk' });
    assert.equal(await remoteDefaultBranch(scratch.bare, undefined), 'trunk');
    await git(scratch.bare, ['symbolic-ref', 'HEAD', 'refs/heads/main']);
    assert.equal(await remoteDefaultBranch(scratch.bare, undefined), 'main');
  });

  it('reads through HTTP basic auth with credentials given apart or embedded in the URL, which the listing drops', async () => {
    const apart = new GitProvider({ repositories: [`${guarded.url}/acme/agent.git`], auth: { kind: 'basic', username: 'alice', password: PASSWORD } });
    assert.equal((await apart.listRepositories())[0]?.defaultBranch, 'trunk');

    const embedded = new GitProvider({ repositories: [`${guarded.url.replace('http://', `http://alice:${encodeURIComponent(PASSWORD)}@`)}/acme/agent.git`] });
    const [listed] = await embedded.listRepositories();
    assert.equal(listed?.url, `${guarded.url}/acme/agent.git`);
    assert.ok(!JSON.stringify(listed).includes(PASSWORD));
    assert.deepEqual(await embedded.cloneAuth(`${guarded.url}/acme/agent`), { kind: 'basic', username: 'alice', password: PASSWORD });
    assert.equal(await embedded.cloneAuth(`${open.url}/acme/agent`), undefined, 'no credentials for a repository it does not list');
  });

  it('says authentication failed, without the password, when it is wrong or missing', async () => {
    const wrong = new GitProvider({ repositories: [`${guarded.url}/acme/agent.git`], auth: { kind: 'basic', username: 'alice', password: 'wrong-Pa55word' } });
    await assert.rejects(wrong.listRepositories(), failsWith('auth-failed', 'wrong-Pa55word'));
    await assert.rejects(new GitProvider({ repositories: [`${guarded.url}/acme/agent.git`] }).listRepositories(), failsWith('auth-failed'));
  });

  it('names a missing repository and an unreachable host', async () => {
    await assert.rejects(new GitProvider({ repositories: [`${open.url}/acme/nothing.git`] }).listRepositories(), (error: unknown) => {
      failsWith('repository-not-found')(error);
      assert.match((error as Error).message, /acme\/nothing\.git/);
      return true;
    });
    await assert.rejects(new GitProvider({ repositories: [path.join(dir.path, 'acme/absent.git')] }).listRepositories(), failsWith('repository-not-found'));
    const closedPort = await unusedPort();
    await assert.rejects(
      new GitProvider({ repositories: [`http://u:${PASSWORD}@127.0.0.1:${closedPort}/acme/agent.git`] }).listRepositories(),
      failsWith('unreachable', PASSWORD),
    );
  });

  it('refuses local repositories when they are switched off', () => {
    assert.throws(() => new GitProvider({ repositories: [repo.bare], allowLocal: false }), failsWith('local-disabled'));
    assert.throws(() => new GitProvider({ repositories: [`file://${repo.bare}`], allowLocal: false }), failsWith('local-disabled'));
  });

  it('polls branch heads and reports what changed', async () => {
    const scratch = await createRepository(path.join(dir.path, 'poll'), { name: 'polled' });
    const url = `${open.url}/${path.relative(dir.path, scratch.bare)}`;
    const first = await remoteBranchHeads(url, undefined);
    assert.deepEqual(first, { main: scratch.commits.side, trunk: scratch.commits.head });

    const pushed = await scratch.commit('trunk', { 'new.txt': 'new\n' });
    const created = await scratch.commit('feature/x', { 'x.txt': 'x\n' });
    await git(scratch.work, ['push', '--quiet', 'origin', '--delete', 'main']);
    const second = await remoteBranchHeads(url, undefined);
    assert.deepEqual(diffBranchHeads(first, second), [
      { branch: 'feature/x', before: null, after: created },
      { branch: 'main', before: scratch.commits.side, after: null },
      { branch: 'trunk', before: scratch.commits.head, after: pushed },
    ]);
    assert.deepEqual(diffBranchHeads(second, second), []);
  });

  it('stops when aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(remoteBranchHeads(repo.bare, undefined, controller.signal), failsWith('aborted'));
  });
});

async function unusedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
