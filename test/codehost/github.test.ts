import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GitHubAppProvider } from '../../src/codehost/github-provider.js';
import { MirrorCache } from '../../src/codehost/mirror.js';
import { createRepository, type FixtureRepository, type TempDir, tempDir } from '../support/git-repos.js';
import { type GitHubStandIn, startGitHubStandIn } from '../support/github-stand-in.js';
import { failsWith } from '../support/codehost.js';

const APP_ID = 424242;
const INSTALLATION_ID = 9001;

describe('github provider (GitHub App installation)', () => {
  let dir: TempDir;
  let repo: FixtureRepository;
  let github: GitHubStandIn;
  const repositories = [
    { id: 101, owner: 'acme', name: 'agent', defaultBranch: 'trunk' },
    { id: 102, owner: 'acme', name: 'tools', defaultBranch: 'main' },
    { id: 103, owner: 'acme', name: 'docs', defaultBranch: 'main', private: false },
    { id: 104, owner: 'other-org', name: 'bot', defaultBranch: 'develop' },
    { id: 105, owner: 'other-org', name: 'site', defaultBranch: 'gh-pages' },
  ];
  const provider = (overrides: Partial<ConstructorParameters<typeof GitHubAppProvider>[0]> = {}, now?: () => number) =>
    new GitHubAppProvider({ appId: APP_ID, privateKey: github.privateKey, installationId: INSTALLATION_ID, apiBaseUrl: github.url, ...overrides }, now);
  const tokenRequests = () => github.calls.filter((call) => call.startsWith('POST /app/installations/')).length;

  before(async () => {
    dir = await tempDir();
    repo = await createRepository(dir.path, { owner: 'acme', name: 'agent', defaultBranch: 'trunk' });
    github = await startGitHubStandIn({ appId: APP_ID, installationId: INSTALLATION_ID, repositories, gitRoot: dir.path, maxPerPage: 2 });
  });
  after(async () => {
    await github?.close();
    await dir?.remove();
  });

  it('lists every page of the installation repositories as GitHub describes them', async () => {
    github.calls.length = 0;
    const listed = await provider().listRepositories();
    assert.deepEqual(listed, [
      ...repositories.map((r) => ({
        id: r.id,
        owner: r.owner,
        name: r.name,
        url: `${github.url}/${r.owner}/${r.name}`,
        cloneUrl: `${github.url}/${r.owner}/${r.name}.git`,
        defaultBranch: r.defaultBranch,
      })),
    ]);
    assert.deepEqual(github.refusals, []);
    assert.equal(tokenRequests(), 1);
    assert.deepEqual(
      github.calls.filter((call) => call.startsWith('GET /installation/repositories')),
      ['GET /installation/repositories?per_page=100', 'GET /installation/repositories?per_page=2&page=2', 'GET /installation/repositories?per_page=2&page=3'],
    );
  });

  it('clones over https with the installation token, reused until shortly before it expires', async () => {
    let now = Date.now();
    const app = provider({}, () => now);
    github.calls.length = 0;
    const url = `${github.url}/acme/agent`;
    const auth = await app.cloneAuth(url);
    assert.equal(auth?.kind, 'basic');
    assert.equal(auth?.kind === 'basic' && auth.username, 'x-access-token');

    const cache = new MirrorCache({ root: path.join(dir.path, 'mirrors') });
    const lines: string[] = [];
    const result = await cache.checkout({ url, ref: 'trunk', auth, dest: path.join(dir.path, 'out-1'), log: (line) => lines.push(line) });
    assert.equal(result.commitSha, repo.commits.head);
    assert.equal(await readFile(path.join(dir.path, 'out-1', 'README.md'), 'utf8'), 'version 2\n');
    assert.deepEqual(github.refusals, []);
    const token = auth?.kind === 'basic' ? auth.password : '';
    for (const line of lines) assert.ok(!line.includes(token), line);

    await app.listRepositories();
    assert.deepEqual(await app.cloneAuth(url), auth, 'the same token 55 minutes before it expires');
    assert.equal(tokenRequests(), 1);

    now += 56 * 60 * 1000; // four minutes before the hour is up
    const renewed = await app.cloneAuth(url);
    assert.notDeepEqual(renewed, auth);
    assert.equal(tokenRequests(), 2);
  });

  it('gives concurrent callers one token request', async () => {
    const app = provider();
    github.calls.length = 0;
    const tokens = await Promise.all([app.installationToken(), app.installationToken(), app.installationToken()]);
    assert.equal(new Set(tokens.map((t) => t.token)).size, 1);
    assert.equal(tokenRequests(), 1);
    assert.ok(tokens[0] && tokens[0].expiresAt.getTime() > Date.now() + 50 * 60 * 1000);
  });

  it('gets a new token when GitHub has revoked the cached one', async () => {
    const app = provider();
    await app.listRepositories();
    github.revokeTokens();
    github.calls.length = 0;
    assert.equal((await app.listRepositories()).length, repositories.length);
    assert.equal(tokenRequests(), 1);
  });

  it('keeps the token away from other hosts and from ssh', async () => {
    const app = provider();
    assert.equal(await app.cloneAuth('https://gitlab.example.com/acme/agent.git'), undefined);
    assert.equal(await app.cloneAuth(`git@127.0.0.1:acme/agent.git`), undefined);
    assert.equal(await app.cloneAuth('not a url'), undefined);
  });

  it('says GitHub refused the app when its key is wrong, without key material', async () => {
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    const keyLine = privateKey.split('\n')[1] as string;
    await assert.rejects(provider({ privateKey }).listRepositories(), (error: unknown) => {
      failsWith('auth-failed', keyLine, 'BEGIN')(error);
      assert.match((error as Error).message, /installation 9001 of GitHub App 424242.*HTTP 401/);
      return true;
    });
    await assert.rejects(provider({ appId: 1 }).installationToken(), failsWith('auth-failed'));
  });

  it('names an unknown installation and an unreachable API', async () => {
    await assert.rejects(provider({ installationId: 1234 }).listRepositories(), (error: unknown) => {
      failsWith('provider')(error);
      assert.match((error as Error).message, /installation 1234 .*HTTP 404.*installation id/);
      return true;
    });
    await assert.rejects(provider({ apiBaseUrl: 'http://127.0.0.1:9' }).listRepositories(), failsWith('unreachable'));
  });

  it('fails a clone with an expired token as an authentication failure that does not show the token', async () => {
    const app = provider();
    const auth = await app.cloneAuth(`${github.url}/acme/agent`);
    github.revokeTokens();
    const token = auth?.kind === 'basic' ? auth.password : 'unset';
    const cache = new MirrorCache({ root: path.join(dir.path, 'mirrors-expired') });
    await assert.rejects(
      cache.checkout({ url: `${github.url}/acme/agent.git`, ref: 'trunk', auth, dest: path.join(dir.path, 'out-expired') }),
      failsWith('auth-failed', token),
    );
  });
});
