import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createBerthClient, type DeploymentEvent } from '../../src/client/index.js';
import { remoteBranchHeads } from '../../src/codehost/index.js';
import type { BuildRequest, BuiltImage, IdentifiedBuild, StepContext } from '../../src/engine/drivers/types.js';
import { gitIntegrationOf } from '../support/codehost.js';
import { deadline } from '../support/deadline.js';
import { FakeBuildDriver } from '../support/drivers/fake-build.js';
import { InProcessRuntime } from '../support/drivers/in-process.js';
import { createRepository, type FixtureRepository, type TempDir, tempDir } from '../support/git-repos.js';
import { type GitHttpServer, startGitHttpServer } from '../support/git-http-server.js';
import { type GitHubStandIn, startGitHubStandIn } from '../support/github-stand-in.js';
import { type Client, client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { type DatabaseKind, postgresUnavailable, startTestServer, type TestServer } from '../support/server.js';

const SECRET = `hook-${randomUUID()}`;
const FULL_SHA = /^[0-9a-f]{40}$/;

/**
 * The fake builder (it counts builds) whose refs are resolved by real git against the
 * remote, so that each push is a build input of its own and the commit a build names is
 * the one the branch held.
 */
class ResolvingBuilder extends FakeBuildDriver {
  /** What the engine asked to build, as it asked. */
  readonly requests: BuildRequest[] = [];

  private async pinned(request: BuildRequest): Promise<BuildRequest> {
    const source = request.source;
    if (source.kind !== 'git' || FULL_SHA.test(source.ref)) return request;
    const heads = await remoteBranchHeads(source.url, source.auth, AbortSignal.timeout(deadline(20_000)), { allowLocal: true, timeoutMs: deadline(20_000) });
    const sha = heads[source.ref];
    assert.ok(sha, `branch ${source.ref} exists`);
    return { ...request, source: { ...source, ref: sha } };
  }

  override async identify(request: BuildRequest): Promise<IdentifiedBuild> {
    return super.identify(await this.pinned(request));
  }

  override async build(request: BuildRequest, context: StepContext): Promise<BuiltImage> {
    this.requests.push(request);
    return super.build(await this.pinned(request), context);
  }
}

interface RevisionBody {
  id: string;
  revision_number: number;
  status: string;
  status_message: string | null;
  source_revision_config: { repo_commit_sha: string | null };
  build_inputs: { commit_sha: string | null; reused_from_revision_id: string | null } | null;
}

/**
 * Issue 21, item 2 on both databases: a rollback (a redeploy of a revision that is not the
 * latest) reuses its image and pins the deployment; while pinned, pushes seen by the git
 * poller (real git over `git http-backend`) and by a signed GitHub webhook (the GitHub
 * stand-in) make no revision and leave a `push_ignored_pinned` event; unpin, or an explicit
 * new revision, lets the next push deploy.
 */
for (const kind of ['sqlite', 'postgres'] as DatabaseKind[]) {
  describe(`rollback that holds [${kind}]`, async () => {
    const skip = kind === 'postgres' ? await postgresUnavailable() : null;
    if (skip) {
      process.stdout.write(`# SKIP rollback that holds [postgres]: ${skip}\n`);
      return;
    }
    let server: TestServer;
    let api: Client;
    let dir: TempDir;
    let repo: FixtureRepository;
    let http: GitHttpServer;
    let github: GitHubStandIn;
    const builder = new ResolvingBuilder();
    const runtime = new InProcessRuntime();

    before(async () => {
      dir = await tempDir();
      repo = await createRepository(dir.path, { owner: 'acme', name: 'agent', defaultBranch: 'main' });
      http = await startGitHttpServer({ root: dir.path });
      github = await startGitHubStandIn({
        appId: 31,
        installationId: 32,
        repositories: [{ id: 601, owner: 'acme', name: 'agent', defaultBranch: 'main' }],
        gitRoot: dir.path,
      });
      server = await startTestServer(kind, { gitPollSeconds: 1, overrides: { runtime, builder } });
      api = client(server.url, { key: server.adminKey });
    });
    after(async () => {
      await server?.close();
      await github?.close();
      await http?.close();
      await dir?.remove();
    });

    const revisions = async (id: string) => (await api('GET', `/v2/deployments/${id}/revisions?limit=100`)).body.resources as RevisionBody[];
    const deploymentOf = async (id: string) => (await api('GET', `/v2/deployments/${id}`)).body;
    const imageOf = (revisionId: string) => runtime.started.find((request) => request.revisionId === revisionId)?.image;

    async function finished(deploymentId: string, revisionId: string): Promise<RevisionBody> {
      const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}?wait_for_terminal=60`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.status, 'DEPLOYED', res.body.status_message ?? '');
      return res.body as RevisionBody;
    }

    async function statuses(deploymentId: string, revisionId: string): Promise<string[]> {
      const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/timeline`);
      return (res.body.resources as { status: string }[]).map((event) => event.status);
    }

    async function auditRows(deploymentId: string, action: string): Promise<{ changed_fields: string[] }[]> {
      const res = await api('GET', `/v1/audit-log?target_id=${deploymentId}&action=${action}`);
      assert.equal(res.status, 200, res.text);
      return res.body.resources;
    }

    /** Reads the deployment's event stream until a `push_ignored_pinned` event names `commit`. */
    async function ignoredPush(deploymentId: string, commit: string): Promise<Extract<DeploymentEvent, { event: 'push_ignored_pinned' }>> {
      const berth = createBerthClient({ baseUrl: server.url, apiKey: server.adminKey });
      const stop = AbortSignal.timeout(deadline(30_000));
      for await (const event of berth.followEvents(deploymentId, { signal: stop })) {
        if (event.event === 'push_ignored_pinned' && event.data.commit === commit) return event;
      }
      throw new Error(`no push_ignored_pinned event for ${commit} within the deadline`);
    }

    /** Each test tracks a branch of its own, so that its pushes build nothing of another test's deployments. */
    async function codehostDeployment(
      name: string,
      integrationId: string,
      repoUrl: string,
      branch: string,
      options: { source?: string; buildOnPush?: boolean } = {},
    ) {
      const created = await api('POST', '/v2/deployments', {
        body: {
          name,
          source: options.source ?? 'codehost',
          source_config: { integration_id: integrationId, repo_url: repoUrl, build_on_push: options.buildOnPush ?? true },
          source_revision_config: { repo_ref: branch },
          secrets: [],
        },
      });
      assert.equal(created.status, 201, created.text);
      const first = await finished(created.body.id, created.body.latest_revision_id);
      return { id: created.body.id as string, first };
    }

    test('through the git poller: the rollback builds nothing and pins; a push while pinned makes no revision; unpin, and the next push deploys', async () => {
      const branch = 'poll';
      await repo.commit(branch, { 'agent.txt': `first ${kind}` });
      const integration = await gitIntegrationOf(api, `${http.url}/acme/agent.git`);
      const buildsBefore = builder.builds;
      const { id, first } = await codehostDeployment(`poll-${kind}`, integration.id, integration.repoUrl, branch);
      assert.equal(builder.builds, buildsBefore + 1);
      assert.equal((await deploymentOf(id)).pinned_revision_id, null, 'a new deployment is not pinned');
      await eventually(async () => {
        const heads = await server.berth.db.selectFrom('codehost_branch_heads').select('branch').where('integration_id', '=', integration.id).execute();
        return heads.length > 0;
      }, 'the poller to look at the repository');

      // A push deploys, building its commit.
      const pushed = await repo.commit(branch, { 'agent.txt': `second ${kind}` });
      await eventually(async () => (await revisions(id)).length === 2, 'a build of the pushed commit', 20_000);
      const second = await finished(id, (await revisions(id))[0]!.id);
      assert.equal(second.source_revision_config.repo_commit_sha, pushed);
      assert.equal(builder.builds, buildsBefore + 2);
      assert.notEqual(imageOf(second.id), imageOf(first.id));

      // Roll back to the first revision: its image, no build, and a pin.
      const rolledBack = await api('POST', `/v2/deployments/${id}/revisions/${first.id}/redeploy`);
      assert.equal(rolledBack.status, 200, rolledBack.text);
      const third = rolledBack.body.latest_revision_id as string;
      assert.equal(rolledBack.body.pinned_revision_id, third, 'pinned to the revision the rollback made');
      assert.ok(rolledBack.body.pinned_at && !Number.isNaN(Date.parse(rolledBack.body.pinned_at)), 'and since when');
      const thirdBody = await finished(id, third);
      assert.equal(builder.builds, buildsBefore + 2, 'the rollback built nothing');
      assert.ok(!(await statuses(id, third)).includes('BUILDING'));
      assert.equal(imageOf(third), imageOf(first.id), "the first revision's image serves again");
      assert.equal(thirdBody.source_revision_config.repo_commit_sha, first.source_revision_config.repo_commit_sha);
      await eventually(async () => (await deploymentOf(id)).active_revision_id === third, 'the rolled-back revision to serve');
      assert.deepEqual(
        (await auditRows(id, 'deployment.pin')).map((row) => row.changed_fields),
        [['pinned_at', 'pinned_revision_id']],
      );

      // A push while pinned: recorded, no revision, an event naming the commit.
      const ignored = await repo.commit(branch, { 'agent.txt': `third ${kind}` });
      const event = await ignoredPush(id, ignored);
      assert.equal(event.data.revision_id, third);
      assert.match(event.data.message, new RegExp(`commit ${ignored}.*pinned to revision ${third}`));
      assert.equal((await revisions(id)).length, 3, 'no revision while pinned');
      assert.equal(builder.builds, buildsBefore + 2);
      const stillPinned = await deploymentOf(id);
      assert.equal(stillPinned.pinned_revision_id, third);
      assert.equal(stillPinned.active_revision_id, third);

      // Unpin (idempotent, one audit row), then the next push deploys.
      const unpinned = await api('POST', `/v2/deployments/${id}/unpin`);
      assert.equal(unpinned.status, 200, unpinned.text);
      assert.equal(unpinned.body.pinned_revision_id, null);
      assert.equal(unpinned.body.pinned_at, null);
      const again = await api('POST', `/v2/deployments/${id}/unpin`);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.pinned_revision_id, null);
      assert.deepEqual(
        (await auditRows(id, 'deployment.unpin')).map((row) => row.changed_fields),
        [['pinned_at', 'pinned_revision_id']],
        'an unpin that changes nothing writes no row',
      );
      const next = await repo.commit(branch, { 'agent.txt': `fourth ${kind}` });
      await eventually(async () => (await revisions(id)).length === 4, 'a build of the push after the unpin', 20_000);
      const fourth = await finished(id, (await revisions(id))[0]!.id);
      assert.equal(fourth.source_revision_config.repo_commit_sha, next);
      assert.equal(builder.builds, buildsBefore + 3);
    });

    test('through a signed GitHub webhook: a push to a pinned deployment is recorded and builds nothing', async () => {
      const integration = await api('POST', '/v1/integrations/codehost', {
        body: {
          provider: 'github',
          name: `acme-${kind}`,
          github: { app_id: 31, installation_id: 32, private_key: github.privateKey, api_url: github.url, webhook_secret: SECRET },
        },
      });
      assert.equal(integration.status, 201, integration.text);
      const [listed] = (await api('GET', `/v1/integrations/codehost/${integration.body.id}/repos`)).body as { url: string }[];
      assert.ok(listed);
      const branch = 'hook';
      await repo.commit(branch, { 'hook.txt': `zero ${kind}` });
      const { id, first } = await codehostDeployment(`hook-${kind}`, integration.body.id, listed.url, branch, { source: 'github' });
      const push = async (before: string, after: string) => {
        const body = JSON.stringify({
          ref: `refs/heads/${branch}`,
          before,
          after,
          created: false,
          deleted: false,
          forced: false,
          repository: { id: 601, full_name: 'acme/agent', clone_url: `${github.url}/acme/agent.git`, html_url: `${github.url}/acme/agent` },
          installation: { id: 32 },
        });
        const res = await fetch(`${server.url}/v1/integrations/codehost/${integration.body.id}/webhook`, {
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
        return (await res.json()) as { outcome: string; revision_ids: string[] };
      };

      const headBefore = first.source_revision_config.repo_commit_sha ?? '0'.repeat(40);
      const pushed = await repo.commit(branch, { 'hook.txt': `one ${kind}` });
      const built = await push(headBefore, pushed);
      assert.equal(built.outcome, 'built');
      assert.equal(built.revision_ids.length, 1);
      await finished(id, built.revision_ids[0]!);

      const buildsBefore = builder.builds;
      const rolledBack = await api('POST', `/v2/deployments/${id}/revisions/${first.id}/redeploy`);
      assert.equal(rolledBack.status, 200, rolledBack.text);
      const pinnedTo = rolledBack.body.latest_revision_id as string;
      assert.equal(rolledBack.body.pinned_revision_id, pinnedTo);
      await finished(id, pinnedTo);
      assert.equal(builder.builds, buildsBefore, 'the rollback built nothing');

      const ignored = await repo.commit(branch, { 'hook.txt': `two ${kind}` });
      const answer = await push(pushed, ignored);
      assert.deepEqual(answer, { outcome: 'built', revision_ids: [] }, 'the push is taken, and makes no revision');
      const event = await ignoredPush(id, ignored);
      assert.equal(event.data.revision_id, pinnedTo);
      assert.equal((await revisions(id)).length, 3);
      assert.equal(builder.builds, buildsBefore);

      // An explicit new revision unpins, and the audit row says so.
      const explicit = await api('POST', `/v2/deployments/${id}/revisions`, { body: {} });
      assert.equal(explicit.status, 201, explicit.text);
      assert.equal((await deploymentOf(id)).pinned_revision_id, null);
      const rows = (await api('GET', `/v1/audit-log?action=revision.create&target_id=${explicit.body.id}`)).body.resources as { changed_fields: string[] }[];
      assert.deepEqual(
        rows.map((row) => row.changed_fields),
        [['pinned_at', 'pinned_revision_id']],
      );
      await finished(id, explicit.body.id);
      const later = await repo.commit(branch, { 'hook.txt': `three ${kind}` });
      const rebuilt = await push(ignored, later);
      assert.equal(rebuilt.revision_ids.length, 1, 'unpinned: the next push builds');
      const followed = await finished(id, rebuilt.revision_ids[0]!);
      assert.equal(followed.source_revision_config.repo_commit_sha, later);
    });

    test('a PATCH that makes a revision unpins; one that does not keeps the pin; a redeploy of the latest revision does not pin', async () => {
      const integration = await gitIntegrationOf(api, `${http.url}/acme/agent.git`);
      const { id, first } = await codehostDeployment(`patch-${kind}`, integration.id, integration.repoUrl, 'main', { buildOnPush: false });
      const restart = await api('POST', `/v2/deployments/${id}/revisions/${first.id}/redeploy`);
      assert.equal(restart.status, 200, restart.text);
      assert.equal(restart.body.pinned_revision_id, null, 'redeploying the latest revision is a restart, not a rollback');
      await finished(id, restart.body.latest_revision_id);

      const rollback = await api('POST', `/v2/deployments/${id}/revisions/${first.id}/redeploy`);
      assert.equal(rollback.body.pinned_revision_id, rollback.body.latest_revision_id);
      await finished(id, rollback.body.latest_revision_id);
      const renamed = await api('PATCH', `/v2/deployments/${id}`, { body: { display_name: 'still pinned' } });
      assert.equal(renamed.status, 200, renamed.text);
      assert.equal(renamed.body.pinned_revision_id, rollback.body.latest_revision_id, 'a change without a revision keeps the pin');
      const restartPinned = await api('POST', `/v2/deployments/${id}/revisions/${rollback.body.latest_revision_id}/redeploy`);
      assert.equal(restartPinned.body.pinned_revision_id, restartPinned.body.latest_revision_id, 'a restart of the pinned revision moves the pin along');
      assert.equal(restartPinned.body.pinned_at, rollback.body.pinned_at, 'and keeps its time');
      await finished(id, restartPinned.body.latest_revision_id);

      const patched = await api('PATCH', `/v2/deployments/${id}`, { body: { secrets: [{ name: 'NEW', value: 'value' }] } });
      assert.equal(patched.status, 200, patched.text);
      assert.equal(patched.body.pinned_revision_id, null);
      assert.equal(patched.body.pinned_at, null);
      const rows = (await auditRows(id, 'deployment.update')).map((row) => row.changed_fields);
      assert.deepEqual(rows, [['pinned_at', 'pinned_revision_id', 'secrets'], ['display_name']]);
    });

    test('a rollback to a revision whose image is gone builds its commit again, and says so', async () => {
      const integration = await gitIntegrationOf(api, `${http.url}/acme/agent.git`);
      const branch = 'gone';
      await repo.commit(branch, { 'gone.txt': `first ${kind}` });
      const { id, first } = await codehostDeployment(`gone-${kind}`, integration.id, integration.repoUrl, branch, { buildOnPush: false });
      const moved = await repo.commit(branch, { 'gone.txt': `moved on ${kind}` });
      const patched = await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { repo_ref: branch } } });
      const second = await finished(id, patched.body.latest_revision_id);
      assert.equal(second.source_revision_config.repo_commit_sha, moved);
      const firstImage = imageOf(first.id);
      assert.ok(firstImage);
      builder.gone.add(firstImage);
      const buildsBefore = builder.builds;
      const rolledBack = await api('POST', `/v2/deployments/${id}/revisions/${first.id}/redeploy`);
      assert.equal(rolledBack.status, 200, rolledBack.text);
      const third = await finished(id, rolledBack.body.latest_revision_id);
      assert.equal(builder.builds, buildsBefore + 1, 'the image was built again');
      const request = builder.requests.at(-1)?.source;
      assert.equal(request?.kind === 'git' ? request.ref : undefined, first.source_revision_config.repo_commit_sha, 'the build asked for that commit');
      assert.equal(third.source_revision_config.repo_commit_sha, first.source_revision_config.repo_commit_sha, "the first revision's commit, not the branch's");
      assert.notEqual(imageOf(third.id), firstImage);
      assert.equal(third.build_inputs?.reused_from_revision_id, null);
      const log = (await api('GET', `/v2/deployments/${id}/revisions/${third.id}/logs?type=build&limit=1000`)).body.logs as { message: string }[];
      assert.ok(
        log.some(
          (line) =>
            line.message ===
            `Rebuilding: image ${firstImage} is gone from the image store; building commit ${first.source_revision_config.repo_commit_sha} again.`,
        ),
        JSON.stringify(log),
      );
      assert.equal(rolledBack.body.pinned_revision_id, third.id, 'and it holds all the same');
    });

    test('hostile: a deployer of another deployment, and a key of another workspace, can neither roll back nor unpin', async () => {
      const stamp = `${kind}-${Date.now()}`;
      const image = (name: string) => ({
        name,
        source: 'external_docker',
        source_config: {},
        source_revision_config: { image_uri: 'registry.example/agent:1' },
        secrets: [],
      });
      const target = (await api('POST', '/v2/deployments', { body: image(`pin-target-${stamp}`) })).body;
      const other = (await api('POST', '/v2/deployments', { body: image(`pin-other-${stamp}`) })).body;
      await finished(target.id, target.latest_revision_id);
      const v2 = await api('PATCH', `/v2/deployments/${target.id}`, { body: { source_revision_config: { image_uri: 'registry.example/agent:2' } } });
      await finished(target.id, v2.body.latest_revision_id);
      const rollback = await api('POST', `/v2/deployments/${target.id}/revisions/${target.latest_revision_id}/redeploy`);
      assert.equal(rollback.body.pinned_revision_id, rollback.body.latest_revision_id);

      const deployerKey = await api('POST', '/v1/api-keys', {
        body: { name: 'other deployer', role: 'deployer', workspace_id: server.workspaceId, deployment_ids: [other.id] },
      });
      const ownDeployerKey = await api('POST', '/v1/api-keys', {
        body: { name: 'own deployer', role: 'deployer', workspace_id: server.workspaceId, deployment_ids: [target.id] },
      });
      const workspace = await api('POST', '/v1/workspaces', { body: { name: `pins-hostile-${stamp}` } });
      const foreignKey = await api('POST', '/v1/api-keys', { body: { name: 'foreign', workspace_id: workspace.body.id, role: 'member' } });
      const readOnlyKey = await api('POST', '/v1/api-keys', { body: { name: 'reader', workspace_id: server.workspaceId, role: 'read_only' } });
      const deployer = client(server.url, { key: deployerKey.body.key });
      const foreign = client(server.url, { key: foreignKey.body.key });
      const reader = client(server.url, { key: readOnlyKey.body.key });

      const unpin = `/v2/deployments/${target.id}/unpin`;
      const redeploy = `/v2/deployments/${target.id}/revisions/${target.latest_revision_id}/redeploy`;
      assert.equal((await deployer('POST', unpin)).status, 403);
      assert.equal((await deployer('POST', redeploy)).status, 403);
      assert.equal((await reader('POST', unpin)).status, 403);
      const foreignUnpin = await foreign('POST', unpin);
      assert.deepEqual([foreignUnpin.status, foreignUnpin.body.code], [404, 'deployment_not_found']);
      assert.equal((await foreign('POST', redeploy)).status, 404);
      const afterAttempts = await deploymentOf(target.id);
      assert.equal(afterAttempts.pinned_revision_id, rollback.body.latest_revision_id, 'still pinned');
      assert.equal(afterAttempts.latest_revision_id, rollback.body.latest_revision_id, 'and no revision was made');

      const own = await client(server.url, { key: ownDeployerKey.body.key })('POST', unpin);
      assert.equal(own.status, 200, own.text);
      assert.equal(own.body.pinned_revision_id, null, "the deployment's own deployer may unpin it");
    });

    test('concurrent rollbacks, unpins and renames: the pin is always null or the latest revision, and never lost to a rename', async () => {
      const image = {
        name: `pin-race-${kind}`,
        source: 'external_docker',
        source_config: {},
        source_revision_config: { image_uri: 'registry.example/agent:1' },
        secrets: [],
      };
      const created = (await api('POST', '/v2/deployments', { body: image })).body;
      await finished(created.id, created.latest_revision_id);
      const v2 = await api('PATCH', `/v2/deployments/${created.id}`, { body: { source_revision_config: { image_uri: 'registry.example/agent:2' } } });
      await finished(created.id, v2.body.latest_revision_id);
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          i % 3 === 0
            ? api('POST', `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}/redeploy`)
            : i % 3 === 1
              ? api('PATCH', `/v2/deployments/${created.id}`, { body: { display_name: `name ${i}` } })
              : api('POST', `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}/redeploy`),
        ),
      );
      for (const answer of answers) assert.equal(answer.status, 200, answer.text);
      const final = await deploymentOf(created.id);
      assert.equal(final.pinned_revision_id, final.latest_revision_id, 'the last rollback holds: no rename wrote over it');
      const unpins = await Promise.all([
        api('POST', `/v2/deployments/${created.id}/unpin`),
        api('POST', `/v2/deployments/${created.id}/unpin`),
        api('PATCH', `/v2/deployments/${created.id}`, { body: { display_name: 'after' } }),
      ]);
      for (const answer of unpins) assert.equal(answer.status, 200, answer.text);
      assert.equal((await deploymentOf(created.id)).pinned_revision_id, null);
      assert.equal((await auditRows(created.id, 'deployment.unpin')).length, 1, 'two concurrent unpins: one change, one row');
    });
  });
}
