import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { DriverError, type BuildDriver, type BuildRequest, type BuiltImage } from '../../src/engine/drivers/types.js';
import { gitIntegrationOf } from '../support/codehost.js';
import { createRepository, type FixtureRepository, git, type TempDir, tempDir } from '../support/git-repos.js';
import { type GitHubStandIn, startGitHubStandIn } from '../support/github-stand-in.js';
import { type Client, client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { type DatabaseKind, postgresUnavailable, startTestServer, type TestServer } from '../support/server.js';
import { otherTenants } from '../support/suite.js';
import { deadline } from '../support/deadline.js';

/**
 * Builds nothing but answers the commit the branch is really at, as a real build does, so
 * a revision names the commit it was built from. A test can hold builds at a gate (the
 * revision stays BUILDING) and make them fail.
 */
class ResolvingBuilder implements BuildDriver {
  readonly name = 'resolving';
  /** Bare repository of each source URL. */
  readonly repositories = new Map<string, string>();
  failing = false;
  #gate: Promise<void> | null = null;
  #open: () => void = () => {};

  hold(): void {
    this.#gate = new Promise((resolve) => (this.#open = resolve));
  }

  release(): void {
    this.#gate = null;
    this.#open();
  }

  async build(request: BuildRequest, context: { signal: AbortSignal }): Promise<BuiltImage> {
    if (request.source.kind !== 'git') throw new DriverError('only repositories here');
    const gate = this.#gate;
    if (gate)
      await Promise.race([gate, new Promise((_, reject) => context.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }))]);
    if (this.failing) throw new DriverError('this build fails on purpose');
    const bare = this.repositories.get(request.source.url);
    if (!bare) throw new DriverError(`no repository for ${request.source.url}`);
    const commitSha = await git(bare, ['rev-parse', `refs/heads/${request.source.ref}^{commit}`]);
    return { image: `berth.local/${request.deploymentId}:${commitSha.slice(0, 12)}`, commitSha };
  }
}

interface RevisionBody {
  id: string;
  status: string;
  source_revision_config: { repo_commit_sha: string | null };
}

for (const kind of ['sqlite', 'postgres'] as DatabaseKind[]) {
  describe(`replayed and repeated pushes [${kind}]`, async () => {
    const skip = kind === 'postgres' ? await postgresUnavailable() : null;
    if (skip) {
      process.stdout.write(`# SKIP replayed and repeated pushes [postgres]: ${skip}\n`);
      return;
    }
    const secret = `hook-${randomUUID()}`;
    const builder = new ResolvingBuilder();
    let server: TestServer;
    let api: Client;
    let dir: TempDir;
    let repo: FixtureRepository;
    let github: GitHubStandIn;
    let integrationId: string;
    let deploymentId: string;
    let pushedAt = 1_700_000_000;

    before(async () => {
      // No poller of its own: the poller test asks for each poll.
      server = await startTestServer(kind, { overrides: { builder } });
      api = client(server.url, { key: server.adminKey });
      dir = await tempDir();
      repo = await createRepository(dir.path, { owner: 'acme', name: 'agent', defaultBranch: 'main' });
      github = await startGitHubStandIn({
        appId: 11,
        installationId: 22,
        repositories: [{ id: 501, owner: 'acme', name: 'agent', defaultBranch: 'main' }],
        gitRoot: dir.path,
      });
      // The integration lists (and deployments store) the repository's web URL.
      for (const url of [`${github.url}/acme/agent`, `${github.url}/acme/agent.git`]) builder.repositories.set(url, repo.bare);
      const integration = await api('POST', '/v1/integrations/codehost', {
        body: {
          provider: 'github',
          name: 'acme',
          github: { app_id: 11, installation_id: 22, private_key: github.privateKey, api_url: github.url, webhook_secret: secret },
        },
      });
      assert.equal(integration.status, 201, integration.text);
      integrationId = integration.body.id;
      deploymentId = await deploy(api, integrationId, `${github.url}/acme/agent.git`);
      await deployed(api, deploymentId, 1);
    });
    after(async () => {
      builder.release();
      await server?.close();
      await github?.close();
      await dir?.remove();
    });

    const revisions = async (id: string, as = api) => (await as('GET', `/v2/deployments/${id}/revisions?limit=100`)).body.resources as RevisionBody[];
    const payload = (before: string, after: string, at = pushedAt++) =>
      JSON.stringify({
        ref: 'refs/heads/main',
        before,
        after,
        created: false,
        deleted: false,
        forced: false,
        repository: {
          id: 501,
          full_name: 'acme/agent',
          clone_url: `${github.url}/acme/agent.git`,
          html_url: `${github.url}/acme/agent`,
          ssh_url: 'git@github.example:acme/agent.git',
          pushed_at: at,
        },
        installation: { id: 22 },
      });
    const signature = (body: string, key = secret) => `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
    const send = async (body: string, options: { integration?: string; signature?: string; delivery?: string } = {}) => {
      const response = await fetch(`${server.url}/v1/integrations/codehost/${options.integration ?? integrationId}/webhook`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'push',
          'x-github-delivery': options.delivery ?? randomUUID(),
          'x-hub-signature-256': options.signature ?? signature(body),
        },
        body,
      });
      const text = await response.text();
      return { status: response.status, text, body: response.status === 200 ? (JSON.parse(text) as { outcome: string; revision_ids: string[] }) : null };
    };

    test('a captured delivery replayed under new delivery ids builds nothing more', async () => {
      const before = (await revisions(deploymentId)).length;
      const commit = await repo.commit('main', { 'notes.txt': 'replayed' });
      const captured = payload(repo.commits.head, commit);
      const first = await send(captured);
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body?.outcome, 'built');
      assert.equal(first.body?.revision_ids.length, 1);
      for (let replay = 0; replay < 3; replay++) {
        const again = await send(captured);
        assert.deepEqual(again.body, { outcome: 'duplicate', revision_ids: [] }, 'the same signed push under a new delivery id');
      }
      assert.equal((await revisions(deploymentId)).length, before + 1);
      await deployed(api, deploymentId, before + 1);

      // Once a newer push is deployed, replaying the old one would build again (the branch's head): it does not.
      const newer = await repo.commit('main', { 'notes.txt': 'newer' });
      assert.equal((await send(payload(commit, newer))).body?.revision_ids.length, 1);
      await deployed(api, deploymentId, before + 2);
      assert.deepEqual((await send(captured)).body, { outcome: 'duplicate', revision_ids: [] }, 'an old push replayed');
      assert.equal((await revisions(deploymentId)).length, before + 2);
    });

    test('a push of the commit a deployment is building or running makes no revision; after a failed build it builds again', async () => {
      const start = (await revisions(deploymentId)).length;
      const previous = (await revisions(deploymentId))[0]?.source_revision_config.repo_commit_sha as string;

      builder.hold();
      const commit = await repo.commit('main', { 'notes.txt': 'building' });
      const pushed = await send(payload(previous, commit));
      assert.equal(pushed.body?.revision_ids.length, 1, pushed.text);
      const [building] = pushed.body?.revision_ids ?? [];
      const inFlight = (await api('GET', `/v2/deployments/${deploymentId}/revisions/${building}`)).body as RevisionBody;
      assert.equal(inFlight.source_revision_config.repo_commit_sha, commit, 'until it is built, the revision names the pushed commit');
      // Another push of the same commit (the branch moved away and back, another delivery): not a replay, same commit.
      const sameCommit = await send(payload('0'.repeat(40), commit));
      assert.deepEqual(sameCommit.body, { outcome: 'built', revision_ids: [] }, 'already building that commit');
      assert.equal((await revisions(deploymentId)).length, start + 1);

      builder.release();
      await deployed(api, deploymentId, start + 1);
      const running = await send(payload(commit, commit));
      assert.deepEqual(running.body, { outcome: 'built', revision_ids: [] }, 'already running that commit');
      assert.equal((await revisions(deploymentId)).length, start + 1);

      builder.failing = true;
      const broken = await repo.commit('main', { 'notes.txt': 'broken' });
      const failing = await send(payload(commit, broken));
      assert.equal(failing.body?.revision_ids.length, 1, failing.text);
      await eventually(async () => (await revisions(deploymentId))[0]?.status === 'BUILD_FAILED', 'the build to fail');
      builder.failing = false;
      const retried = await send(payload(commit, broken));
      assert.equal(retried.body?.revision_ids.length, 1, `a failed build does not count: ${retried.text}`);
      await deployed(api, deploymentId, start + 3);
    });

    test('a member of another workspace cannot replay our deliveries, nor push to our integration with their own secret', async () => {
      const start = (await revisions(deploymentId)).length;
      const commit = await repo.commit('main', { 'notes.txt': 'ours' });
      const captured = payload(repo.commits.head, commit);
      assert.equal((await send(captured)).body?.revision_ids.length, 1);
      await deployed(api, deploymentId, start + 1);

      // An admin of another organization, with a GitHub integration and a deployment of the same repository.
      const { otherOrganizationKey } = await otherTenants({ server, api, anonymous: client(server.url) });
      const other = client(server.url, { key: otherOrganizationKey });
      const otherSecret = `theirs-${randomUUID()}`;
      const theirs = await other('POST', '/v1/integrations/codehost', {
        body: {
          provider: 'github',
          name: 'theirs',
          github: { app_id: 11, installation_id: 22, private_key: github.privateKey, api_url: github.url, webhook_secret: otherSecret },
        },
      });
      assert.equal(theirs.status, 201, theirs.text);
      const theirDeployment = await deploy(other, theirs.body.id, `${github.url}/acme/agent.git`);
      await deployed(other, theirDeployment, 1);

      // Our captured delivery under a new id, to our integration: acted on once already.
      assert.deepEqual((await send(captured)).body, { outcome: 'duplicate', revision_ids: [] });
      // Our captured delivery to their integration: our signature does not verify with their secret.
      assert.equal((await send(captured, { integration: theirs.body.id, signature: signature(captured) })).status, 401);
      // A new push signed with their secret, to our integration: refused.
      const fresh = payload(commit, await repo.commit('main', { 'notes.txt': 'theirs' }));
      assert.equal((await send(fresh, { signature: signature(fresh, otherSecret) })).status, 401);
      // Signed with their own secret, to their own integration: it builds their deployment only.
      const own = await send(fresh, { integration: theirs.body.id, signature: signature(fresh, otherSecret) });
      assert.equal(own.body?.revision_ids.length, 1, own.text);
      assert.equal((await revisions(theirDeployment, other)).length, 2);
      assert.equal((await revisions(deploymentId)).length, start + 1, 'our deployment got nothing from any of it');
    });

    test('the git poller makes no revision for a commit the deployment already runs', async () => {
      const pollDir = await tempDir();
      try {
        const polled = await createRepository(pollDir.path, { owner: 'acme', name: 'polled', defaultBranch: 'main' });
        builder.repositories.set(polled.bare, polled.bare);
        const integration = await gitIntegrationOf(api, polled.bare);
        const id = await deploy(api, integration.id, integration.repoUrl);
        await deployed(api, id, 1);
        const poll = () => server.berth.services.pushBuilds.pollGitIntegrations(pino({ level: 'silent' }), AbortSignal.timeout(deadline(30_000)));
        await poll(); // the first look only remembers the branch heads

        // The branch moves and, before the poller looks, a new revision (new secrets) builds the new commit.
        const commit = await polled.commit('main', { 'notes.txt': 'patched' });
        const patched = await api('PATCH', `/v2/deployments/${id}`, { body: { secrets: [{ name: 'TOKEN', value: 'x' }] } });
        assert.equal(patched.status, 200, patched.text);
        await deployed(api, id, 2);
        assert.equal((await revisions(id))[0]?.source_revision_config.repo_commit_sha, commit);
        assert.equal(await poll(), 0, 'the poller sees the move, but the deployment runs that commit already');
        assert.equal((await revisions(id)).length, 2);

        await polled.commit('main', { 'notes.txt': 'new' });
        assert.equal(await poll(), 1, 'a new commit builds');
        await deployed(api, id, 3);
      } finally {
        await pollDir.remove();
      }
    });
  });
}

async function deploy(api: Client, integrationId: string, repoUrl: string): Promise<string> {
  const res = await api('POST', '/v2/deployments', {
    body: {
      name: `replay-${randomUUID().slice(0, 8)}`,
      source: 'github',
      source_config: { integration_id: integrationId, repo_url: repoUrl, build_on_push: true },
      source_revision_config: { repo_ref: 'main' },
      secrets: [],
    },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.id as string;
}

/** Waits until the deployment has `count` revisions and the newest is DEPLOYED. */
async function deployed(api: Client, id: string, count: number): Promise<void> {
  await eventually(
    async () => {
      const listed = (await api('GET', `/v2/deployments/${id}/revisions?limit=100`)).body.resources as RevisionBody[];
      if (listed[0]?.status === 'BUILD_FAILED' || listed[0]?.status === 'DEPLOY_FAILED') throw new Error(`revision failed: ${JSON.stringify(listed[0])}`);
      return listed.length === count && listed[0]?.status === 'DEPLOYED';
    },
    `revision ${count} of ${id} to be deployed`,
    30_000,
  );
}
