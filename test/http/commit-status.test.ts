import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { describe as describeMessage } from '../../src/domain/commit-status.js';
import { type BuildRequest, type BuiltImage, DriverError, type IdentifiedBuild, type StepContext } from '../../src/engine/drivers/types.js';
import { insertGitHubNotices } from '../../src/store/repositories/github-notices.js';
import { gitIntegrationOf } from '../support/codehost.js';
import { FakeBuildDriver } from '../support/drivers/fake-build.js';
import { createRepository, type FixtureRepository, git, type TempDir, tempDir } from '../support/git-repos.js';
import { type GitHubStandIn, startGitHubStandIn } from '../support/github-stand-in.js';
import { type Client, client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { type DatabaseKind, postgresUnavailable, startTestServer, type TestServer } from '../support/server.js';

const SECRET = `hook-${randomUUID()}`;
const PUBLIC_URL = 'https://berth.example';
const LEAKED = 'hunter2-do-not-show';

/**
 * Builds the commit a branch names in the fixture repository (as a real build fetches it),
 * and fails every build of the deployments it is told to, with a long message that quotes
 * a URL with credentials.
 */
class FailingBuilder extends FakeBuildDriver {
  readonly failing = new Set<string>();
  bare = '';
  private async resolved(request: BuildRequest): Promise<BuildRequest> {
    if (request.source.kind !== 'git' || /^[0-9a-f]{40}$/.test(request.source.ref) || !request.source.url.startsWith('http')) return request;
    return { ...request, source: { ...request.source, ref: await git(this.bare, ['rev-parse', `refs/heads/${request.source.ref}`]) } };
  }
  override async identify(request: BuildRequest): Promise<IdentifiedBuild> {
    return super.identify(await this.resolved(request));
  }
  override async build(request: BuildRequest, context: StepContext): Promise<BuiltImage> {
    if (this.failing.has(request.deploymentId))
      throw new DriverError(`npm install could not fetch https://ci:${LEAKED}@registry.example/pkg: ${'the registry answered 503; '.repeat(10)}`);
    return super.build(await this.resolved(request), context);
  }
}

for (const kind of ['sqlite', 'postgres'] as DatabaseKind[]) {
  describe(`commit statuses and GitHub deployments [${kind}]`, async () => {
    const skip = kind === 'postgres' ? await postgresUnavailable() : null;
    if (skip) {
      process.stdout.write(`# SKIP commit statuses [postgres]: ${skip}\n`);
      return;
    }
    let server: TestServer;
    let api: Client;
    let dir: TempDir;
    let repo: FixtureRepository;
    let github: GitHubStandIn;
    let integrationId: string;
    let repoUrl: string;
    const builder = new FailingBuilder();

    before(async () => {
      server = await startTestServer(kind, {
        env: { BERTH_PUBLIC_URL: PUBLIC_URL },
        overrides: { builder, githubNotices: { firstRetryDelayMs: 50, sweepMs: 200 } },
      });
      api = client(server.url, { key: server.adminKey });
      dir = await tempDir();
      repo = await createRepository(dir.path, { owner: 'acme', name: 'agent', defaultBranch: 'main' });
      builder.bare = repo.bare;
      github = await startGitHubStandIn({
        appId: 11,
        installationId: 22,
        repositories: [{ id: 501, owner: 'acme', name: 'agent', defaultBranch: 'main' }],
        gitRoot: dir.path,
      });
      const integration = await api('POST', '/v1/integrations/codehost', {
        body: {
          provider: 'github',
          name: 'acme',
          github: { app_id: 11, installation_id: 22, private_key: github.privateKey, api_url: github.url, webhook_secret: SECRET },
        },
      });
      assert.equal(integration.status, 201, integration.text);
      integrationId = integration.body.id as string;
      const [listed] = (await api('GET', `/v1/integrations/codehost/${integrationId}/repos`)).body as { url: string }[];
      assert.ok(listed);
      repoUrl = listed.url;
    });
    after(async () => {
      await server?.close();
      await github?.close();
      await dir?.remove();
    });

    const deploy = async (integration: string, url: string, name = `cs-${randomUUID().slice(0, 8)}`, installCommand?: string) => {
      const res = await api('POST', '/v2/deployments', {
        body: {
          name,
          source: 'github',
          source_config: { integration_id: integration, repo_url: url, build_on_push: true, ...(installCommand ? { install_command: installCommand } : {}) },
          source_revision_config: { repo_ref: 'main' },
          secrets: [],
        },
      });
      assert.equal(res.status, 201, res.text);
      return { id: res.body.id as string, name };
    };
    const revisionOf = (deploymentId: string, revisionId: string) =>
      api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}`).then((res) => res.body as { status: string; status_message: string | null });
    const settled = async (deploymentId: string, status: string) =>
      eventually(async () => {
        const listed = (await api('GET', `/v2/deployments/${deploymentId}/revisions?limit=100`)).body.resources as { id: string; status: string }[];
        return listed.length > 0 && listed.every((r) => ['DEPLOYED', 'BUILD_FAILED'].includes(r.status)) && listed.some((r) => r.status === status) && listed;
      }, `${deploymentId} settled at ${status}`);
    /** Pushes `sha` to main as GitHub would announce it; the ids of the revisions it made. */
    const push = async (sha: string) => {
      const body = JSON.stringify({
        ref: 'refs/heads/main',
        before: '0'.repeat(40),
        after: sha,
        created: false,
        deleted: false,
        forced: false,
        repository: { id: 501, full_name: 'acme/agent', clone_url: `${github.url}/acme/agent.git`, html_url: `${github.url}/acme/agent` },
        installation: { id: 22 },
      });
      const res = await fetch(`${server.url}/v1/integrations/codehost/${integrationId}/webhook`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'push',
          'x-github-delivery': randomUUID(),
          'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`,
        },
        body,
      });
      assert.equal(res.status, 200, await res.clone().text());
      return ((await res.json()) as { revision_ids: string[] }).revision_ids;
    };
    const statusesOf = (deploymentId: string, revisionId: string) =>
      github.statuses.filter((s) => s.target_url === `${PUBLIC_URL}/deployments/${deploymentId}/revisions/${revisionId}`);
    const githubDeploymentOf = (environment: string, sha: string) => github.deployments.filter((d) => d.environment === environment && d.ref === sha);
    const statesOf = (githubDeploymentId: number) => github.deploymentStatuses.filter((s) => s.deployment_id === githubDeploymentId).map((s) => s.state);

    test('a pushed commit gets pending then success, a failed build failure with its message, each with a GitHub deployment', async () => {
      const good = await deploy(integrationId, repoUrl);
      // Its own build inputs: with the good one's, it would reuse the image the good one built
      // of the pushed commit whenever that build finished first, and never build (or fail).
      const bad = await deploy(integrationId, repoUrl, undefined, 'npm ci --ignore-scripts');
      builder.failing.add(bad.id);
      await settled(good.id, 'DEPLOYED');
      await settled(bad.id, 'BUILD_FAILED');

      // A commit no revision was built from, so the build runs (an image reused skips BUILDING).
      const sha = await repo.commit('main', { 'first.txt': randomUUID() });
      const made = await push(sha);
      assert.equal(made.length, 2, 'both deployments track main');
      const revisions = await Promise.all(made.map(async (id) => ({ id, ...(await revisionOfAny(id)) })));
      const goodRevision = revisions.find((r) => r.deploymentId === good.id)?.id;
      const badRevision = revisions.find((r) => r.deploymentId === bad.id)?.id;
      assert.ok(goodRevision && badRevision);

      const goodStatuses = await eventually(async () => {
        const found = statusesOf(good.id, goodRevision);
        return found.length >= 3 && found;
      }, 'the good revision has its statuses');
      assert.deepEqual(
        goodStatuses.map((s) => [s.state, s.sha, s.context, s.repository]),
        [
          ['pending', sha, `berth/${good.name}`, 'acme/agent'],
          ['pending', sha, `berth/${good.name}`, 'acme/agent'],
          ['success', sha, `berth/${good.name}`, 'acme/agent'],
        ],
      );
      const [goodDeployment, ...more] = githubDeploymentOf(good.name, sha);
      assert.ok(goodDeployment, JSON.stringify(github.deployments));
      assert.equal(more.length, 0, 'one GitHub deployment per revision');
      assert.equal(goodDeployment.auto_merge, false);
      assert.deepEqual(goodDeployment.required_contexts, []);
      await eventually(async () => statesOf(goodDeployment.id).length >= 3, 'the GitHub deployment has its statuses');
      assert.deepEqual(statesOf(goodDeployment.id), ['queued', 'in_progress', 'success']);
      const served = await server.berth.db.selectFrom('revisions').select('url').where('id', '=', goodRevision).executeTakeFirstOrThrow();
      assert.ok(served.url);
      assert.equal(github.deploymentStatuses.find((s) => s.deployment_id === goodDeployment.id && s.state === 'success')?.environment_url, served.url);

      const badStatuses = await eventually(async () => {
        const found = statusesOf(bad.id, badRevision);
        return found.length >= 3 && found;
      }, 'the failed revision has its statuses');
      assert.deepEqual(
        badStatuses.map((s) => s.state),
        ['pending', 'pending', 'failure'],
      );
      const failed = await revisionOf(bad.id, badRevision);
      assert.equal(failed.status, 'BUILD_FAILED');
      assert.ok(failed.status_message);
      const description = badStatuses[2]?.description ?? '';
      assert.equal(description, describeMessage(failed.status_message));
      assert.ok(description.length <= 140, description);
      assert.ok(!description.includes(LEAKED), description);
      assert.ok(description.includes('registry.example/pkg'), description);
      const [badDeployment] = githubDeploymentOf(bad.name, sha);
      assert.ok(badDeployment);
      await eventually(async () => statesOf(badDeployment.id).length >= 3, 'the failed GitHub deployment has its statuses');
      assert.deepEqual(statesOf(badDeployment.id), ['queued', 'in_progress', 'failure']);
    });

    test('GitHub answering 500 then 201 gets each status once; the revision is untouched and no token reaches the logs', async () => {
      // Build inputs of its own: with the first test's good deployment's, the push below builds the
      // commit once for both, and whichever revision comes second reuses that image, skipping
      // BUILDING and its status (two statuses, never three; seen beside two busy loops).
      const deployment = await deploy(integrationId, repoUrl, undefined, 'npm ci --no-audit');
      await settled(deployment.id, 'DEPLOYED');
      const sha = await repo.commit('main', { 'notes.txt': randomUUID() });
      github.failNext(new RegExp(`/statuses/${sha}$`), 1);
      const made = await push(sha);
      const revisionId = (await Promise.all(made.map(async (id) => ({ id, ...(await revisionOfAny(id)) })))).find((r) => r.deploymentId === deployment.id)?.id;
      assert.ok(revisionId);
      await eventually(async () => statusesOf(deployment.id, revisionId).length >= 3, 'the statuses arrive despite the 500', 60_000);
      assert.equal((await revisionOf(deployment.id, revisionId)).status, 'DEPLOYED');
      assert.deepEqual(
        statusesOf(deployment.id, revisionId).map((s) => s.state),
        ['pending', 'pending', 'success'],
        'the failed call was retried, and nothing was sent twice',
      );
      const posted = github.calls.filter((call) => call === `POST /repos/acme/agent/statuses/${sha}`);
      const statusesForSha = github.statuses.filter((s) => s.sha === sha).length;
      assert.equal(posted.length, statusesForSha + 1, 'exactly one call was answered 500');
      const [githubDeployment] = githubDeploymentOf(deployment.name, sha);
      assert.ok(githubDeployment);
      assert.deepEqual(statesOf(githubDeployment.id), ['queued', 'in_progress', 'success'], 'a retry does not repeat the deployment status it already sent');
      const logs = server.logs.join('');
      assert.match(logs, /telling GitHub about a revision failed; it is retried/);
      assert.match(logs, /HTTP 500/);
      assert.ok(github.tokens.length > 0);
      for (const token of github.tokens) assert.ok(!logs.includes(token), 'an installation token reached the logs');
      assert.ok(!logs.includes(github.privateKey.split('\n')[1] ?? 'unreachable'), 'the private key reached the logs');
    });

    test('a notice that fails before its GitHub calls is retried with the backoff, not held for its lease, and then sent', async () => {
      const { deployment, revision, before } = await deployedAndTold();
      const integrations = () => server.berth.db.updateTable('codehost_integrations').where('id', '=', integrationId);
      const { credentials_encrypted: credentials } = await server.berth.db
        .selectFrom('codehost_integrations')
        .select('credentials_encrypted')
        .where('id', '=', integrationId)
        .executeTakeFirstOrThrow();
      // Credentials that cannot be decrypted: reading the integration throws before any GitHub call.
      await integrations().set({ credentials_encrypted: 'not-a-ciphertext', updated_at: new Date().toISOString() }).execute();
      const restore = () => integrations().set({ credentials_encrypted: credentials, updated_at: new Date().toISOString() }).execute();
      try {
        const noticeId = randomUUID();
        const notice = { id: noticeId, status: 'DEPLOYED' as const, message: null };
        assert.equal(await insertGitHubNotices(server.berth.db, { id: revision.id, deployment_id: deployment.id }, [notice], new Date().toISOString()), true);
        const row = () => server.berth.db.selectFrom('github_notices').selectAll().where('id', '=', noticeId).executeTakeFirst();
        // A second attempt within the 3-minute lease shows the first one let the notice go.
        const retried = await eventually(async () => {
          const found = await row();
          return found && found.attempts >= 2 && found;
        }, 'the notice is attempted again');
        assert.match(retried.last_error ?? '', /.+/);
        await restore();
        await eventually(async () => (await row()) === undefined, 'the notice is sent once the integration reads again');
      } finally {
        await restore();
      }
      assert.equal(statusesOf(deployment.id, revision.id).length, before + 1);
      assert.equal(statusesOf(deployment.id, revision.id).at(-1)?.state, 'success');
    });

    test("a revision's notices go to GitHub in the order of its changes, not of their clocks", async () => {
      const { deployment, revision, before } = await deployedAndTold();
      // Two changes queued one after another, as two replicas would: the second's clock is 5 ms
      // behind the first's, and a third shares the second's millisecond.
      const at = Date.now();
      await server.berth.db.transaction().execute(async (trx) => {
        const queue = (status: 'DEPLOYED' | 'BUILD_FAILED', ms: number) =>
          insertGitHubNotices(
            trx,
            { id: revision.id, deployment_id: deployment.id },
            [{ id: randomUUID(), status, message: null }],
            new Date(ms).toISOString(),
          );
        assert.equal(await queue('BUILD_FAILED', at), true);
        assert.equal(await queue('DEPLOYED', at - 5), true);
        assert.equal(await queue('BUILD_FAILED', at - 5), true);
      });
      const after = await eventually(async () => {
        const found = statusesOf(deployment.id, revision.id);
        return found.length >= before + 3 && found;
      }, 'the three notices are sent');
      assert.deepEqual(
        after.slice(before).map((s) => s.state),
        ['failure', 'success', 'failure'],
      );
    });

    test('a deployment on a git integration queues nothing for GitHub', async () => {
      const plain = await gitIntegrationOf(api, repo.bare);
      const onGit = await deploy(plain.id, plain.repoUrl);
      const onGitHub = await deploy(integrationId, repoUrl);
      await settled(onGit.id, 'DEPLOYED');
      await settled(onGitHub.id, 'DEPLOYED');
      const notice = { id: randomUUID(), status: 'DEPLOYED' as const, message: null };
      const at = new Date().toISOString();
      assert.equal(await insertGitHubNotices(server.berth.db, { id: randomUUID(), deployment_id: onGit.id }, [notice], at), false);
      // The same call for a github deployment queues (for a revision that does not exist: the notifier drops it).
      assert.equal(await insertGitHubNotices(server.berth.db, { id: randomUUID(), deployment_id: onGitHub.id }, [{ ...notice, id: randomUUID() }], at), true);
      assert.equal(github.statuses.filter((s) => s.target_url?.includes(onGit.id)).length, 0);
      assert.equal(github.deployments.filter((d) => d.environment === onGit.name).length, 0);
    });

    /**
     * A deployed revision whose own notices are all sent, and how many statuses it has: a test's
     * notices queue behind the revision's own (a revision's are sent in order), and how many those
     * are depends on whether it built or reused an earlier test's image.
     */
    async function deployedAndTold() {
      const deployment = await deploy(integrationId, repoUrl);
      const [revision] = await settled(deployment.id, 'DEPLOYED');
      assert.ok(revision);
      const pendingOf = async () => (await server.berth.db.selectFrom('github_notices').select('id').where('revision_id', '=', revision.id).execute()).length;
      await eventually(async () => (await pendingOf()) === 0 && statusesOf(deployment.id, revision.id).length > 0, 'the revision has its statuses');
      return { deployment, revision, before: statusesOf(deployment.id, revision.id).length };
    }

    /** A revision's deployment, found through the database (the push answers only revision ids). */
    async function revisionOfAny(revisionId: string): Promise<{ deploymentId: string }> {
      const row = await server.berth.db.selectFrom('revisions').select('deployment_id').where('id', '=', revisionId).executeTakeFirstOrThrow();
      return { deploymentId: row.deployment_id };
    }
  });
}
