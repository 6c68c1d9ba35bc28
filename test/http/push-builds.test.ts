import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { gitIntegrationOf } from '../support/codehost.js';
import { createRepository, type FixtureRepository, type TempDir, tempDir } from '../support/git-repos.js';
import { type GitHubStandIn, startGitHubStandIn } from '../support/github-stand-in.js';
import { type Client, client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { type DatabaseKind, postgresUnavailable, startTestServer, type TestServer } from '../support/server.js';

const SECRET = `hook-${randomUUID()}`;

for (const kind of ['sqlite', 'postgres'] as DatabaseKind[]) {
  describe(`build on push [${kind}]`, async () => {
    const skip = kind === 'postgres' ? await postgresUnavailable() : null;
    if (skip) {
      process.stdout.write(`# SKIP build on push [postgres]: ${skip}\n`);
      return;
    }
    let server: TestServer;
    let api: Client;
    let dir: TempDir;
    let repo: FixtureRepository;
    let github: GitHubStandIn;

    before(async () => {
      server = await startTestServer(kind, { gitPollSeconds: 1 });
      api = client(server.url, { key: server.adminKey });
      dir = await tempDir();
      repo = await createRepository(dir.path, { owner: 'acme', name: 'agent', defaultBranch: 'main' });
      github = await startGitHubStandIn({
        appId: 11,
        installationId: 22,
        repositories: [{ id: 501, owner: 'acme', name: 'agent', defaultBranch: 'main' }],
        gitRoot: dir.path,
      });
    });
    after(async () => {
      await server.close();
      await github.close();
      await dir.remove();
    });

    const revisionCount = async (id: string) => (await api('GET', `/v2/deployments/${id}/revisions?limit=100`)).body.resources.length as number;
    const deploy = async (integrationId: string, repoUrl: string, buildOnPush: boolean, ref = 'main') => {
      const res = await api('POST', '/v2/deployments', {
        body: {
          name: `push-${randomUUID().slice(0, 8)}`,
          source: 'github',
          source_config: { integration_id: integrationId, repo_url: repoUrl, build_on_push: buildOnPush },
          source_revision_config: { repo_ref: ref },
          secrets: [],
        },
      });
      assert.equal(res.status, 201, res.text);
      return res.body.id as string;
    };

    test('a signed GitHub push builds the deployments that track the branch, once per delivery', async () => {
      const integration = await api('POST', '/v1/integrations/codehost', {
        body: {
          provider: 'github',
          name: 'acme',
          github: { app_id: 11, installation_id: 22, private_key: github.privateKey, api_url: github.url, webhook_secret: SECRET },
        },
      });
      assert.equal(integration.status, 201, integration.text);
      const [listed] = (await api('GET', `/v1/integrations/codehost/${integration.body.id}/repos`)).body as { url: string }[];
      assert.ok(listed);
      const tracking = await deploy(integration.body.id, listed.url, true);
      const notTracking = await deploy(integration.body.id, listed.url, false);
      const otherBranch = await deploy(integration.body.id, listed.url, true, 'release');

      const payload = (ref: string) =>
        JSON.stringify({
          ref,
          before: '0'.repeat(40),
          after: repo.commits.head,
          created: false,
          deleted: false,
          forced: false,
          repository: {
            id: 501,
            full_name: 'acme/agent',
            clone_url: `${github.url}/acme/agent.git`,
            html_url: `${github.url}/acme/agent`,
            ssh_url: 'git@github.example:acme/agent.git',
          },
          installation: { id: 22 },
        });
      const send = (body: string, headers: Record<string, string>) =>
        fetch(`${server.url}/v1/integrations/codehost/${integration.body.id}/webhook`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body,
        });
      const signed = (body: string, event = 'push', delivery = randomUUID()) => ({
        'x-github-event': event,
        'x-github-delivery': delivery,
        'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`,
      });

      const body = payload('refs/heads/main');
      const delivery = randomUUID();
      const startedAt = new Date().toISOString();
      const first = await send(body, signed(body, 'push', delivery));
      const firstText = await first.clone().text();
      assert.equal(first.status, 200, firstText);
      const outcome = (await first.json()) as { outcome: string; revision_ids: string[] };
      assert.equal(outcome.outcome, 'built');
      assert.equal(outcome.revision_ids.length, 1);
      assert.equal(await revisionCount(tracking), 2);
      assert.equal(await revisionCount(notTracking), 1, 'build_on_push false: no build');
      assert.equal(await revisionCount(otherBranch), 1, 'another branch: no build');
      const logs = (await api('GET', `/v2/deployments/${tracking}/revisions/${outcome.revision_ids[0]}/logs?type=build`)).body.logs as { message: string }[];
      assert.ok(
        logs.some((l) => l.message.startsWith('Build on push: push of')),
        JSON.stringify(logs),
      );

      const again = await send(body, signed(body, 'push', delivery));
      assert.deepEqual(await again.json(), { outcome: 'duplicate', revision_ids: [] });
      assert.equal(await revisionCount(tracking), 2, 'a redelivery builds nothing twice');

      const wrong = await send(body, { ...signed(body), 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` });
      assert.equal(wrong.status, 401);
      const unsigned = await send(body, { 'x-github-event': 'push', 'x-github-delivery': randomUUID() });
      assert.equal(unsigned.status, 401);
      const ping = await send('{"zen":"hi"}', signed('{"zen":"hi"}', 'ping'));
      assert.deepEqual(await ping.json(), { outcome: 'ignored', revision_ids: [] });
      const tag = payload('refs/tags/v1.0');
      assert.deepEqual(await (await send(tag, signed(tag))).json(), { outcome: 'ignored', revision_ids: [] });
      const unknown = await fetch(`${server.url}/v1/integrations/codehost/${randomUUID()}/webhook`, { method: 'POST', headers: signed(body), body });
      assert.equal(unknown.status, 404);
      assert.equal(await revisionCount(tracking), 2);
      // Berth made the revision, for the push: one row of its own; the refused, repeated and ignored deliveries add none.
      const audit = (await api('GET', `/v1/audit-log?actor=berth&since=${encodeURIComponent(startedAt)}&limit=100`)).body.resources;
      assert.deepEqual(
        audit.map((row: { action: string; target: { id: string; name: string } }) => [row.action, row.target.id]),
        [['revision.create', outcome.revision_ids[0]]],
      );
      assert.match(audit[0].actor.reason, new RegExp(`^build on push: push of ${repo.commits.head.slice(0, 12)} to main$`));
    });

    test('the git poller builds on a new commit to the tracked branch, and only then', async () => {
      const integration = await gitIntegrationOf(api, repo.bare);
      const tracking = await deploy(integration.id, integration.repoUrl, true);
      // The poller's first look only remembers what it sees.
      await eventually(async () => {
        const heads = await server.berth.db.selectFrom('codehost_branch_heads').select('branch').where('integration_id', '=', integration.id).execute();
        return heads.length > 0;
      }, 'the poller to look at the repository');
      assert.equal(await revisionCount(tracking), 1);
      await repo.commit('side-work', { 'notes.txt': 'not tracked' });
      await new Promise((resolve) => setTimeout(resolve, 2500));
      assert.equal(await revisionCount(tracking), 1, 'a commit to an untracked branch builds nothing');
      await repo.commit('main', { 'notes.txt': 'tracked' });
      await eventually(async () => (await revisionCount(tracking)) === 2, 'a build of the new commit', 15_000);
    });
  });
}
