import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { gitIntegrationOf } from '../support/codehost.js';
import { createRepository, type FixtureRepository, type TempDir, tempDir } from '../support/git-repos.js';
import { type GitHttpServer, startGitHttpServer } from '../support/git-http-server.js';
import { type GitHubStandIn, startGitHubStandIn } from '../support/github-stand-in.js';
import { type Client, client } from '../support/http.js';
import { describeOnEachDatabase, otherTenants } from '../support/suite.js';
import { eventually } from '../support/runtimes.js';

const PASSWORD = `pw-${randomUUID()}`;

describeOnEachDatabase('code-host integrations', (ctx) => {
  let dir: TempDir;
  let repo: FixtureRepository;
  let http: GitHttpServer;
  let github: GitHubStandIn;
  let member: Client;

  before(async () => {
    dir = await tempDir();
    repo = await createRepository(dir.path, { owner: 'acme', name: 'agent', defaultBranch: 'trunk' });
    await createRepository(dir.path, { owner: 'acme', name: 'tools', defaultBranch: 'main' });
    http = await startGitHttpServer({ root: dir.path, auth: { username: 'berth', password: PASSWORD } });
    github = await startGitHubStandIn({
      appId: 4242,
      installationId: 77,
      repositories: [
        { id: 901, owner: 'acme', name: 'agent', defaultBranch: 'trunk' },
        { id: 902, owner: 'acme', name: 'tools', defaultBranch: 'main' },
      ],
      gitRoot: dir.path,
      maxPerPage: 1,
    });
    const key = await ctx().api('POST', '/v1/api-keys', { body: { name: 'member', workspace_id: ctx().server.workspaceId, role: 'member' } });
    member = client(ctx().server.url, { key: key.body.key });
  });
  after(async () => {
    await http?.close();
    await github?.close();
    await dir?.remove();
  });

  test('a git integration over HTTP: created by an admin, listed by anyone, credentials never shown', async () => {
    const { api, server } = ctx();
    const withCredentials = `http://berth:${PASSWORD}@127.0.0.1:${new URL(http.url).port}/acme/agent.git`;
    const created = await api('POST', '/v1/integrations/codehost', {
      body: {
        provider: 'git',
        name: 'company git',
        git: { repositories: [withCredentials, `${http.url}/acme/tools.git`], username: 'berth', password: PASSWORD },
      },
    });
    assert.equal(created.status, 201, created.text);
    assert.ok(!created.text.includes(PASSWORD), 'the answer does not echo the password');
    assert.deepEqual(created.body.git, {
      repositories: [`${http.url}/acme/agent.git`, `${http.url}/acme/tools.git`],
      username: 'berth',
      has_password: true,
      has_ssh_private_key: false,
      has_known_hosts: false,
    });
    assert.equal(created.body.webhook_url, `${server.url}/v1/integrations/codehost/${created.body.id}/webhook`);
    const id = created.body.id as string;

    const installs = await member('GET', '/v1/integrations/codehost/install');
    assert.equal(installs.status, 200, installs.text);
    assert.deepEqual(installs.body, [{ id, installation_id: created.body.installation_id, name: 'company git' }]);
    assert.ok(Number.isSafeInteger(created.body.installation_id) && created.body.installation_id > 0);

    const repos = await member('GET', `/v1/integrations/github/${id}/repos`);
    assert.equal(repos.status, 200, repos.text);
    assert.deepEqual(
      repos.body.map((r: Record<string, unknown>) => ({ ...r, id: typeof r.id })),
      [
        { host_integration_id: id, id: 'number', name: 'agent', owner: 'acme', url: `${http.url}/acme/agent.git`, default_branch: 'trunk' },
        { host_integration_id: id, id: 'number', name: 'tools', owner: 'acme', url: `${http.url}/acme/tools.git`, default_branch: 'main' },
      ],
    );
    // Stable ids: the same repository spelled otherwise, in another integration, has the same id.
    const respelled = await api('POST', '/v1/integrations/codehost', {
      body: { provider: 'git', name: 'same repository', git: { repositories: [`${http.url}/acme/agent/`], username: 'berth', password: PASSWORD } },
    });
    assert.equal(respelled.status, 201, respelled.text);
    const other = await api('GET', `/v1/integrations/codehost/${respelled.body.id}/repos`);
    assert.equal(other.status, 200, other.text);
    assert.equal(other.body[0].id, repos.body[0].id);
    assert.equal((await api('DELETE', `/v1/integrations/codehost/${respelled.body.id}`)).status, 204);
    assert.ok(http.requests.length > 0, 'the remote was really asked');
    assert.equal((await api('GET', `/api-host/v1/integrations/codehost/${id}/repos`)).status, 200);

    // At rest, only ciphertext.
    const rows = await server.berth.db.selectFrom('codehost_integrations').selectAll().execute();
    assert.ok(!JSON.stringify(rows).includes(PASSWORD), 'credentials are encrypted at rest');
    assert.ok(!server.logs.join('').includes(PASSWORD), 'credentials never reach the log');

    // Admin operations need an admin key; the member's key is refused.
    assert.equal((await member('GET', `/v1/integrations/codehost/${id}`)).status, 403);
    assert.equal((await member('POST', '/v1/integrations/codehost', { body: { provider: 'git', name: 'x', git: { repositories: [repo.bare] } } })).status, 403);
    assert.equal((await member('DELETE', `/v1/integrations/codehost/${id}`)).status, 403);
    const got = await api('GET', `/v1/integrations/codehost/${id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, created.body);
  });

  test('a wrong password answers 502 naming the repository, without the password', async () => {
    const { api } = ctx();
    const created = await api('POST', '/v1/integrations/codehost', {
      body: { provider: 'git', name: 'wrong password', git: { repositories: [`${http.url}/acme/agent.git`], username: 'berth', password: 'not-it' } },
    });
    assert.equal(created.status, 201, created.text);
    const repos = await api('GET', `/v1/integrations/codehost/${created.body.id}/repos`);
    assert.equal(repos.status, 502, repos.text);
    assert.match(repos.body.detail, /acme\/agent/);
    assert.ok(!repos.text.includes('not-it'));
  });

  test('a GitHub App installation lists its repositories (against a local stand-in of the GitHub API)', async () => {
    const { api } = ctx();
    const created = await api('POST', '/v1/integrations/codehost', {
      body: {
        provider: 'github',
        name: 'acme on GitHub',
        github: { app_id: 4242, installation_id: 77, private_key: github.privateKey, api_url: github.url, webhook_secret: 'hook' },
      },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.installation_id, 77);
    assert.deepEqual(created.body.github, { app_id: 4242, installation_id: 77, api_url: github.url, has_webhook_secret: true });
    assert.ok(!created.text.includes('PRIVATE KEY'));
    const repos = await api('GET', `/v1/integrations/codehost/${created.body.id}/repos`);
    assert.equal(repos.status, 200, repos.text);
    assert.deepEqual(
      repos.body.map((r: { id: number; owner: string; name: string; default_branch: string }) => [r.id, r.owner, r.name, r.default_branch]),
      [
        [901, 'acme', 'agent', 'trunk'],
        [902, 'acme', 'tools', 'main'],
      ],
    );
    assert.deepEqual(github.refusals, []);
  });

  test("bad ids are 422, unknown and other workspaces' integrations are 404", async () => {
    const { api } = ctx();
    for (const path of ['/v1/integrations/codehost/not-a-uuid', '/v1/integrations/codehost/not-a-uuid/repos', '/v1/integrations/github/not-a-uuid/repos']) {
      const res = await api('GET', path);
      assert.equal(res.status, 422, `${path}: ${res.text}`);
      assert.equal(res.body.detail[0].type, 'uuid_parsing');
      assert.deepEqual(res.body.detail[0].loc, ['path', 'integration_id']);
    }
    const unknown = randomUUID();
    const missing = await api('GET', `/v1/integrations/codehost/${unknown}/repos`);
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { detail: `Integration ID ${unknown} not found.`, code: 'integration_not_found' });

    const mine = await gitIntegrationOf(api, repo.bare);
    const { otherWorkspaceKey } = await otherTenants(ctx());
    const other = client(ctx().server.url, { key: otherWorkspaceKey });
    for (const [method, path] of [
      ['GET', `/v1/integrations/codehost/${mine.id}/repos`],
      ['GET', `/v1/integrations/codehost/${mine.id}`],
      ['DELETE', `/v1/integrations/codehost/${mine.id}`],
    ] as const) {
      const res = await other(method, path);
      assert.ok(res.status === 404 || res.status === 403, `${method} ${path}: ${res.status}`);
      if (res.status === 404) assert.deepEqual(res.body, { detail: `Integration ID ${mine.id} not found.`, code: 'integration_not_found' });
    }
    assert.deepEqual(
      (await other('GET', '/v1/integrations/codehost/install')).body.filter((i: { id: string }) => i.id === mine.id),
      [],
    );
  });

  test('settings must match the provider; repository URLs must be usable', async () => {
    const { api } = ctx();
    const missing = await api('POST', '/v1/integrations/codehost', { body: { provider: 'github', name: 'no settings' } });
    assert.equal(missing.status, 422, missing.text);
    assert.deepEqual(missing.body.detail[0].loc, ['body', 'github']);
    const both = await api('POST', '/v1/integrations/codehost', {
      body: { provider: 'git', name: 'both', git: { repositories: [repo.bare] }, github: { app_id: 1, installation_id: 1, private_key: 'k' } },
    });
    assert.equal(both.status, 400, both.text);
    const bad = await api('POST', '/v1/integrations/codehost', {
      body: { provider: 'git', name: 'bad url', git: { repositories: ['-upload-pack=touch /tmp/x'] } },
    });
    assert.equal(bad.status, 422, bad.text);
    assert.deepEqual(bad.body.detail[0].loc, ['body', 'git', 'repositories', 0]);
  });

  test('an integration in use cannot be deleted (409); once its deployments are gone it can', async () => {
    const { api } = ctx();
    const integration = await gitIntegrationOf(api, repo.bare);
    const deployment = await api('POST', '/v2/deployments', {
      body: {
        name: `uses-${Date.now()}`,
        source: 'codehost',
        source_config: { integration_id: integration.id, repo_url: integration.repoUrl },
        source_revision_config: {},
        secrets: [],
      },
    });
    assert.equal(deployment.status, 201, deployment.text);
    assert.equal(deployment.body.source_revision_config.repo_ref, 'trunk', 'repo_ref defaults to the default branch');
    const refused = await api('DELETE', `/v1/integrations/codehost/${integration.id}`);
    assert.equal(refused.status, 409, refused.text);
    assert.match(refused.body.detail, /1 deployment builds from it/);
    assert.equal((await api('DELETE', `/v2/deployments/${deployment.body.id}`)).status, 204);
    await eventually(async () => (await api('GET', `/v2/deployments/${deployment.body.id}`)).status === 404, 'the deployment to be deleted');
    const deleted = await api('DELETE', `/v1/integrations/codehost/${integration.id}`);
    assert.equal(deleted.status, 204, deleted.text);
    assert.equal((await api('GET', `/v1/integrations/codehost/${integration.id}/repos`)).status, 404);
  });
});
