import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { gitIntegrationOf } from '../support/codehost.js';
import { describeEachDatabase } from '../support/database.js';
import { createRepository, type FixtureRepository, git, type TempDir, tempDir } from '../support/git-repos.js';
import { type GitHttpServer, startGitHttpServer } from '../support/git-http-server.js';
import { type GitHubStandIn, startGitHubStandIn } from '../support/github-stand-in.js';
import { type Client, client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { startTestServer, type TestServer } from '../support/server.js';

const SECRET = `hook-${randomUUID()}`;
const REPO_ID = 701;

interface PreviewBody {
  id: string;
  name: string;
  status: string;
  parent_deployment_id: string | null;
  latest_revision_id: string;
  url: string | null;
  secrets: { name: string; value: string | null }[];
  preview: { kind: string; pull_request_number: number | null; branch: string | null; head_sha: string; fork: boolean; last_activity_at: string } | null;
}

/**
 * Issue 23, item 4 on both databases: a preview's whole life through signed `pull_request`
 * deliveries (the GitHub stand-in: commit statuses) and through the git poller (real git
 * over `git http-backend`); the image-free engine (fake builder, in-process runtime).
 */
describeEachDatabase('preview deployments', (kind) => {
  let server: TestServer;
  let api: Client;
  let dir: TempDir;
  let repo: FixtureRepository;
  let http: GitHttpServer;
  let github: GitHubStandIn;

  before(async () => {
    dir = await tempDir();
    repo = await createRepository(dir.path, { owner: 'acme', name: 'agent', defaultBranch: 'main' });
    http = await startGitHttpServer({ root: dir.path });
    github = await startGitHubStandIn({
      appId: 41,
      installationId: 42,
      repositories: [{ id: REPO_ID, owner: 'acme', name: 'agent', defaultBranch: 'main' }],
      gitRoot: dir.path,
    });
    server = await startTestServer(kind, {
      gitPollSeconds: 1,
      env: { BERTH_OUTBOUND_ALLOW_PRIVATE: 'on' },
      overrides: { githubNotices: { firstRetryDelayMs: 50, sweepMs: 200 } },
    });
    api = client(server.url, { key: server.adminKey });
  });
  after(async () => {
    await server?.close();
    await github?.close();
    await http?.close();
    await dir?.remove();
  });

  const previewsOf = async (parentId: string, as: Client = api) => {
    const res = await as('GET', `/v2/deployments?parent_deployment_id=${parentId}&limit=100`);
    assert.equal(res.status, 200, res.text);
    return (res.body.resources as PreviewBody[]).filter((preview) => preview.status !== 'AWAITING_DELETE');
  };

  async function deployed(deploymentId: string, revisionId: string): Promise<void> {
    const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}?wait_for_terminal=60`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'DEPLOYED', res.body.status_message ?? '');
  }

  async function githubIntegration(name: string, as: Client, secret = SECRET): Promise<{ id: string; repoUrl: string }> {
    const created = await as('POST', '/v1/integrations/codehost', {
      body: {
        provider: 'github',
        name,
        github: { app_id: 41, installation_id: 42, private_key: github.privateKey, api_url: github.url, webhook_secret: secret },
      },
    });
    assert.equal(created.status, 201, created.text);
    const [listed] = (await as('GET', `/v1/integrations/codehost/${created.body.id}/repos`)).body as { url: string }[];
    assert.ok(listed);
    return { id: created.body.id, repoUrl: listed.url };
  }

  async function pullRequest(
    integrationId: string,
    pr: { action: string; number: number; sha: string; ref: string; labels?: string[]; fork?: boolean },
    options: { secret?: string; deliveryId?: string; on?: TestServer } = {},
  ): Promise<{
    status: number;
    body: { outcome: string; previews?: { parent_deployment_id: string; action: string; deployment_id: string | null; reason: string | null }[] };
  }> {
    const body = JSON.stringify({
      action: pr.action,
      number: pr.number,
      pull_request: {
        head: { sha: pr.sha, ref: pr.ref, repo: { id: pr.fork ? 999 : REPO_ID, full_name: pr.fork ? 'mallory/agent' : 'acme/agent' } },
        labels: (pr.labels ?? []).map((name) => ({ name })),
        merged: false,
      },
      repository: { id: REPO_ID, full_name: 'acme/agent', clone_url: `${github.url}/acme/agent.git`, html_url: `${github.url}/acme/agent` },
      installation: { id: 42 },
    });
    const res = await fetch(`${(options.on ?? server).url}/v1/integrations/codehost/${integrationId}/webhook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'pull_request',
        'x-github-delivery': options.deliveryId ?? randomUUID(),
        'x-hub-signature-256': `sha256=${createHmac('sha256', options.secret ?? SECRET)
          .update(body)
          .digest('hex')}`,
      },
      body,
    });
    return { status: res.status, body: (await res.json()) as never };
  }

  test('a pull request: opened, new commit, label, the maximum, a fork, closed, idle; audit rows, events, commit statuses', async () => {
    const integration = await githubIntegration(`acme-${kind}`, api);
    await repo.commit('main', { 'agent.txt': 'main' });
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: `web-${kind}`,
        source: 'github',
        source_config: { integration_id: integration.id, repo_url: integration.repoUrl, build_on_push: true },
        source_revision_config: { repo_ref: 'main' },
        secrets: [
          { name: 'OPENAI_API_KEY', value: 'sk-preview' },
          { name: 'PROD_DB_PASSWORD', value: 'never-in-a-preview' },
        ],
      },
    });
    assert.equal(created.status, 201, created.text);
    const parent = created.body as { id: string; name: string; latest_revision_id: string; previews: { enabled: boolean } };
    assert.equal(parent.previews.enabled, false, 'previews are off by default');
    await deployed(parent.id, parent.latest_revision_id);
    const subscription = await api('POST', '/v1/webhook-subscriptions', { body: { url: 'http://127.0.0.1:9/hook', events: ['preview.*'] } });
    assert.equal(subscription.status, 201, subscription.text);

    // Previews off: a pull request makes nothing.
    const first = await repo.commit('feature-1', { 'agent.txt': 'one' });
    const off = await pullRequest(integration.id, { action: 'opened', number: 1, sha: first, ref: 'feature-1' });
    assert.equal(off.status, 200);
    assert.equal(off.body.outcome, 'ignored');
    assert.equal((await previewsOf(parent.id)).length, 0);

    const patched = await api('PATCH', `/v2/deployments/${parent.id}`, {
      body: { previews: { enabled: true, secret_names: ['OPENAI_API_KEY'], max_previews: 2, idle_minutes: 30 } },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(patched.body.previews, {
      enabled: true,
      trigger: 'all',
      label: null,
      idle_minutes: 30,
      max_previews: 2,
      secret_names: ['OPENAI_API_KEY'],
      branch_pattern: null,
      allow_forks: false,
    });
    assert.equal(patched.body.latest_revision_id, parent.latest_revision_id, 'preview settings make no revision');

    // Opened: a preview of its own, with only the named secret.
    const opened = await pullRequest(integration.id, { action: 'reopened', number: 1, sha: first, ref: 'feature-1' });
    assert.equal(opened.body.outcome, 'built');
    assert.equal(opened.body.previews?.[0]?.action, 'created');
    const [preview] = await previewsOf(parent.id);
    assert.ok(preview);
    assert.equal(preview.id, opened.body.previews?.[0]?.deployment_id);
    assert.equal(preview.parent_deployment_id, parent.id);
    const { last_activity_at: activeAt, ...origin } = preview.preview ?? { last_activity_at: '' };
    assert.deepEqual(origin, { kind: 'pull_request', pull_request_number: 1, branch: 'feature-1', head_sha: first, fork: false });
    assert.ok(!Number.isNaN(Date.parse(activeAt)));
    assert.deepEqual(
      preview.secrets.map((secret) => secret.name),
      ['OPENAI_API_KEY'],
    );
    assert.equal(preview.name, `${parent.name}-pr-1`);
    const onlyPreviews = await api('GET', '/v2/deployments?is_preview=true&limit=100');
    assert.ok((onlyPreviews.body.resources as PreviewBody[]).every((d) => d.parent_deployment_id !== null));
    const noPreviews = await api('GET', '/v2/deployments?is_preview=false&limit=100');
    assert.ok((noPreviews.body.resources as PreviewBody[]).some((d) => d.id === parent.id));
    assert.ok(!(noPreviews.body.resources as PreviewBody[]).some((d) => d.id === preview.id));
    await deployed(preview.id, preview.latest_revision_id);
    const served = (await api('GET', `/v2/deployments/${preview.id}`)).body as PreviewBody;
    assert.ok(served.url);
    await eventually(
      async () => github.statuses.some((s) => s.sha === first && s.context === `berth/${preview.name}` && s.state === 'success' && s.target_url === served.url),
      "a success status linking to the preview's URL",
    );

    // A new commit: the preview follows it; the same delivery again does nothing.
    const second = await repo.commit('feature-1', { 'agent.txt': 'two' });
    const deliveryId = randomUUID();
    const synced = await pullRequest(integration.id, { action: 'synchronize', number: 1, sha: second, ref: 'feature-1' }, { deliveryId });
    assert.equal(synced.body.previews?.[0]?.action, 'updated');
    const again = await pullRequest(integration.id, { action: 'synchronize', number: 1, sha: second, ref: 'feature-1' }, { deliveryId });
    assert.equal(again.body.outcome, 'duplicate');
    const revisions = (await api('GET', `/v2/deployments/${preview.id}/revisions`)).body.resources as {
      id: string;
      source_revision_config: { repo_commit_sha: string };
    }[];
    assert.equal(revisions.length, 2);
    assert.equal(revisions[0]?.source_revision_config.repo_commit_sha, second);
    await deployed(preview.id, revisions[0]!.id);

    // Only labelled pull requests from now on.
    const labelled = await api('PATCH', `/v2/deployments/${parent.id}`, { body: { previews: { trigger: 'label', label: 'preview' } } });
    assert.equal(labelled.status, 200, labelled.text);
    const third = await repo.commit('feature-2', { 'agent.txt': 'three' });
    const unlabelled = await pullRequest(integration.id, { action: 'opened', number: 2, sha: third, ref: 'feature-2' });
    assert.equal(unlabelled.body.previews?.[0]?.action, 'ignored');
    const label = await pullRequest(integration.id, { action: 'labeled', number: 2, sha: third, ref: 'feature-2', labels: ['preview'] });
    assert.equal(label.body.previews?.[0]?.action, 'created');
    assert.equal((await previewsOf(parent.id)).length, 2);

    // The maximum (2): refused, and GitHub is told why on the head commit, through the
    // retried outbox: its first answer is a 500, and the status still arrives, once.
    const fourth = await repo.commit('feature-3', { 'agent.txt': 'four' });
    github.failNext(new RegExp(`/statuses/${fourth}$`), 1);
    const over = await pullRequest(integration.id, { action: 'labeled', number: 3, sha: fourth, ref: 'feature-3', labels: ['preview'] });
    assert.equal(over.body.previews?.[0]?.action, 'refused');
    assert.equal((await previewsOf(parent.id)).length, 2);
    const refusals = () => github.statuses.filter((s) => s.sha === fourth && s.context === `berth/${parent.name}/preview`);
    await eventually(async () => refusals().length > 0, 'the refusal status despite the 500');
    const pendingRefusals = () =>
      server.berth.db.selectFrom('github_notices').select('id').where('kind', '=', 'preview_refused').where('commit_sha', '=', fourth).execute();
    await eventually(async () => (await pendingRefusals()).length === 0, 'the refusal notice done with');
    assert.equal(refusals().length, 1, 'the refusal arrived exactly once');
    assert.equal(refusals()[0]?.state, 'failure');
    assert.match(refusals()[0]?.description ?? '', /maximum/);
    assert.equal(github.calls.filter((call) => call === `POST /repos/acme/agent/statuses/${fourth}`).length, 2, 'a 500, then the retry');
    assert.match(server.logs.join(''), /telling GitHub why a preview was refused failed; it is retried/);

    // A fork: no preview while the operator does not allow them.
    const fork = await pullRequest(integration.id, { action: 'opened', number: 4, sha: fourth, ref: 'main', labels: ['preview'], fork: true });
    assert.equal(fork.body.previews?.[0]?.action, 'refused');
    assert.match(fork.body.previews?.[0]?.reason ?? '', /forks/);

    // Closed: removed.
    const closed = await pullRequest(integration.id, { action: 'closed', number: 1, sha: second, ref: 'feature-1' });
    assert.equal(closed.body.previews?.[0]?.action, 'removed');
    await eventually(async () => (await api('GET', `/v2/deployments/${preview.id}`)).status === 404, 'the closed pull request’s preview to be deleted');
    assert.equal((await previewsOf(parent.id)).length, 1);

    // Idle past its time: removed by the sweep (asked with a clock 31 minutes ahead).
    const [idle] = await previewsOf(parent.id);
    assert.equal(await server.berth.services.previews.removeIdle(Date.now() + 31 * 60_000), 1);
    await eventually(async () => (await api('GET', `/v2/deployments/${idle!.id}`)).status === 404, 'the idle preview to be deleted');

    // Each change by Berth: an audit row with Berth as the actor, and an outbound event.
    const audit = (await api('GET', '/v1/audit-log?limit=100')).body.resources as { action: string; actor: { type: string }; target: { id: string } }[];
    const berth = audit.filter((row) => row.action.startsWith('preview.'));
    assert.deepEqual(berth.map((row) => row.action).sort(), ['preview.create', 'preview.create', 'preview.delete', 'preview.delete', 'preview.update']);
    assert.ok(berth.every((row) => row.actor.type === 'berth'));
    const expected = ['preview.created', 'preview.created', 'preview.deleted', 'preview.deleted', 'preview.updated'];
    const delivered = async () => {
      const res = await api('GET', `/v1/webhook-subscriptions/${subscription.body.id}/deliveries?limit=100`);
      return ((res.body.resources ?? []) as { event_type: string }[]).map((delivery) => delivery.event_type).sort();
    };
    await eventually(async () => (await delivered()).length >= expected.length, 'a delivery of each preview event');
    assert.deepEqual(await delivered(), expected);
  });

  test('another workspace: sees and changes no preview; its own webhook and a forged signature make none', async () => {
    const integration = await githubIntegration(`victim-${kind}`, api);
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: `victim-${kind}`,
        source: 'github',
        source_config: { integration_id: integration.id, repo_url: integration.repoUrl },
        source_revision_config: { repo_ref: 'main' },
        secrets: [],
      },
    });
    assert.equal(created.status, 201, created.text);
    const parentId = created.body.id as string;
    assert.equal((await api('PATCH', `/v2/deployments/${parentId}`, { body: { previews: { enabled: true } } })).status, 200);
    const sha = await repo.commit('victim-branch', { 'agent.txt': 'victim' });
    const made = await pullRequest(integration.id, { action: 'opened', number: 10, sha, ref: 'victim-branch' });
    assert.equal(made.body.previews?.[0]?.action, 'created');
    const [preview] = await previewsOf(parentId);
    assert.ok(preview);

    const workspace = await api('POST', '/v1/workspaces', { body: { name: `hostile-${kind}-${Date.now()}` } });
    assert.equal(workspace.status, 201, workspace.text);
    const key = await api('POST', '/v1/api-keys', { body: { name: 'hostile', workspace_id: workspace.body.id, role: 'admin' } });
    assert.equal(key.status, 201, key.text);
    const hostile = client(server.url, { key: key.body.key });
    assert.deepEqual(await previewsOf(parentId, hostile), [], 'a filter by a foreign parent lists nothing');
    assert.ok(!((await hostile('GET', '/v2/deployments?is_preview=true')).body.resources as PreviewBody[]).some((d) => d.id === preview.id));
    assert.equal((await hostile('GET', `/v2/deployments/${preview.id}`)).status, 404);
    assert.equal((await hostile('PATCH', `/v2/deployments/${parentId}`, { body: { previews: { enabled: false } } })).status, 404);
    assert.equal((await hostile('DELETE', `/v2/deployments/${preview.id}`)).status, 404);

    // The hostile workspace's own integration of the same repository: its deliveries reach its deployments only.
    const theirs = await githubIntegration(`hostile-${kind}`, hostile, 'their-secret');
    const closed = await pullRequest(theirs.id, { action: 'closed', number: 10, sha, ref: 'victim-branch' }, { secret: 'their-secret' });
    assert.equal(closed.status, 200);
    assert.deepEqual(closed.body.previews, []);
    const opened = await pullRequest(theirs.id, { action: 'opened', number: 11, sha, ref: 'victim-branch' }, { secret: 'their-secret' });
    assert.deepEqual(opened.body.previews, []);
    // A forged signature on the victim's integration: 401, nothing changes.
    const forged = await pullRequest(integration.id, { action: 'closed', number: 10, sha, ref: 'victim-branch' }, { secret: 'guessed' });
    assert.equal(forged.status, 401);
    const still = await previewsOf(parentId);
    assert.deepEqual(
      still.map((d) => d.id),
      [preview.id],
    );
    assert.equal((await api('PATCH', `/v2/deployments/${preview.id}`, { body: { previews: { enabled: true } } })).status, 400, 'a preview has no previews');

    // The parent deleted: the sweep removes its previews too.
    assert.equal((await api('DELETE', `/v2/deployments/${parentId}`)).status, 204);
    assert.equal(await server.berth.services.previews.removeIdle(), 1);
    await eventually(async () => (await api('GET', `/v2/deployments/${preview.id}`)).status === 404, 'the orphaned preview to be deleted');
  });

  /** A workspace of its own with an admin key: the hostile member of another workspace. */
  async function hostileWorkspace(on: TestServer, as: Client): Promise<Client> {
    const workspace = await as('POST', '/v1/workspaces', { body: { name: `hostile-${randomUUID().slice(0, 8)}` } });
    assert.equal(workspace.status, 201, workspace.text);
    const key = await as('POST', '/v1/api-keys', { body: { name: 'hostile', workspace_id: workspace.body.id, role: 'admin' } });
    assert.equal(key.status, 201, key.text);
    return client(on.url, { key: key.body.key });
  }

  test('a label removed: the preview goes, as when its pull request closes; another label, or another workspace, changes nothing', async () => {
    const integration = await githubIntegration(`label-${kind}`, api);
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: `label-${kind}`,
        source: 'github',
        source_config: { integration_id: integration.id, repo_url: integration.repoUrl },
        source_revision_config: { repo_ref: 'main' },
        secrets: [],
      },
    });
    assert.equal(created.status, 201, created.text);
    const parentId = created.body.id as string;
    const patched = await api('PATCH', `/v2/deployments/${parentId}`, { body: { previews: { enabled: true, trigger: 'label', label: 'preview' } } });
    assert.equal(patched.status, 200, patched.text);
    const sha = await repo.commit('labelled', { 'agent.txt': 'labelled' });
    const pr = { number: 20, sha, ref: 'labelled' };
    const made = await pullRequest(integration.id, { ...pr, action: 'labeled', labels: ['preview', 'ui'] });
    assert.equal(made.body.previews?.[0]?.action, 'created');
    const previewId = made.body.previews?.[0]?.deployment_id;
    assert.ok(previewId);

    // Another label removed: the preview stays.
    const other = await pullRequest(integration.id, { ...pr, action: 'unlabeled', labels: ['preview'] });
    assert.equal(other.body.previews?.[0]?.action, 'ignored');
    // The hostile workspace's own integration of the same repository: reaches no preview of this one.
    const hostile = await hostileWorkspace(server, api);
    const theirs = await githubIntegration(`hostile-label-${kind}`, hostile, 'their-secret');
    const foreign = await pullRequest(theirs.id, { ...pr, action: 'unlabeled', labels: [] }, { secret: 'their-secret' });
    assert.equal(foreign.status, 200);
    assert.deepEqual(foreign.body.previews, []);
    assert.deepEqual(
      (await previewsOf(parentId)).map((d) => d.id),
      [previewId],
    );

    // The label removed: the preview goes, with an audit row naming Berth and why.
    const removed = await pullRequest(integration.id, { ...pr, action: 'unlabeled', labels: ['ui'] });
    // The whole answer on failure: once, beside two busy loops on PostgreSQL, it held no preview outcome.
    assert.equal(removed.status, 200, JSON.stringify(removed));
    assert.equal(removed.body.previews?.[0]?.action, 'removed', JSON.stringify(removed));
    assert.equal(removed.body.previews?.[0]?.deployment_id, previewId);
    await eventually(async () => (await api('GET', `/v2/deployments/${previewId}`)).status === 404, 'the unlabelled pull request’s preview to be deleted');
    const audit = (await api('GET', '/v1/audit-log?limit=100')).body.resources as {
      action: string;
      actor: { type: string; reason?: string };
      target: { id: string };
    }[];
    const deleted = audit.filter((row) => row.action === 'preview.delete' && row.target.id === previewId);
    assert.equal(deleted.length, 1);
    assert.equal(deleted[0]?.actor.type, 'berth');
    assert.equal(deleted[0]?.actor.reason, "label 'preview' was removed from pull request #20");

    // Labelled again: a new preview.
    const again = await pullRequest(integration.id, { ...pr, action: 'labeled', labels: ['preview'] });
    assert.equal(again.body.previews?.[0]?.action, 'created');
    assert.notEqual(again.body.previews?.[0]?.deployment_id, previewId);
    assert.equal((await previewsOf(parentId)).length, 1);
  });

  test('forks allowed by the operator and the deployment: the preview gets no secret; a hostile fork reaches no other workspace', async () => {
    const forks = await startTestServer(kind, { env: { BERTH_PREVIEWS_ALLOW_FORKS: 'on' } });
    try {
      const admin = client(forks.url, { key: forks.adminKey });
      const integration = await githubIntegration(`forks-${kind}`, admin);
      const deployment = (as: Client, name: string, repoUrl: string, integrationId: string) =>
        as('POST', '/v2/deployments', {
          body: {
            name,
            source: 'github',
            source_config: { integration_id: integrationId, repo_url: repoUrl },
            source_revision_config: { repo_ref: 'main' },
            secrets: [{ name: 'OPENAI_API_KEY', value: `sk-${name}` }],
          },
        });
      const previewsOn = { previews: { enabled: true, allow_forks: true, secret_names: ['OPENAI_API_KEY'] } };
      const created = await deployment(admin, `forks-${kind}`, integration.repoUrl, integration.id);
      assert.equal(created.status, 201, created.text);
      const parentId = created.body.id as string;
      assert.equal((await admin('PATCH', `/v2/deployments/${parentId}`, { body: previewsOn })).status, 200);

      // Another workspace with a deployment of the same repository, previews and forks on too.
      const hostile = await hostileWorkspace(forks, admin);
      const theirIntegration = await githubIntegration(`hostile-forks-${kind}`, hostile, 'their-secret');
      const theirs = await deployment(hostile, `hostile-forks-${kind}`, theirIntegration.repoUrl, theirIntegration.id);
      assert.equal(theirs.status, 201, theirs.text);
      assert.equal((await hostile('PATCH', `/v2/deployments/${theirs.body.id}`, { body: previewsOn })).status, 200);

      // A fork's pull request on this workspace's integration: a preview of this deployment only, with no secret.
      const sha = await repo.commit('from-a-fork', { 'agent.txt': 'fork' });
      const opened = await pullRequest(integration.id, { action: 'opened', number: 30, sha, ref: 'from-a-fork', fork: true }, { on: forks });
      assert.equal(opened.status, 200);
      assert.deepEqual(
        opened.body.previews?.map((outcome) => [outcome.action, outcome.deployment_id !== null]),
        [['created', true]],
      );
      const previewId = opened.body.previews?.[0]?.deployment_id as string;
      const preview = (await admin('GET', `/v2/deployments/${previewId}`)).body as PreviewBody;
      assert.equal(preview.parent_deployment_id, parentId);
      assert.equal(preview.preview?.fork, true);
      assert.deepEqual(preview.secrets, [], 'a fork gets no secret, whatever secret_names says');
      const res = await admin('GET', `/v2/deployments/${previewId}/revisions/${preview.latest_revision_id}?wait_for_terminal=60`);
      assert.equal(res.body.status, 'DEPLOYED', res.text);
      const audit = (await admin('GET', '/v1/audit-log?limit=100')).body.resources as { action: string; target: { id: string } }[];
      const row = audit.find((entry) => entry.action === 'preview.create' && entry.target.id === previewId);
      assert.ok(row);
      assert.ok(!JSON.stringify(row).includes('OPENAI_API_KEY'), 'the audit row names no secret given');
      assert.equal((await previewsOf(theirs.body.id as string, hostile)).length, 0, 'the other workspace’s deployment got no preview');
      assert.equal((await hostile('GET', `/v2/deployments/${previewId}`)).status, 404);

      // The hostile workspace's fork pull request, on its own integration: its own deployment only.
      const theirSha = await repo.commit('hostile-fork', { 'agent.txt': 'hostile' });
      const hostileFork = { action: 'opened', number: 31, sha: theirSha, ref: 'hostile-fork', fork: true };
      const theirOpened = await pullRequest(theirIntegration.id, hostileFork, { on: forks, secret: 'their-secret' });
      assert.deepEqual(
        theirOpened.body.previews?.map((outcome) => outcome.parent_deployment_id),
        [theirs.body.id],
      );
      // Signed with its own secret on this workspace's integration: refused, nothing made.
      const forged = await pullRequest(integration.id, { ...hostileFork, number: 32 }, { on: forks, secret: 'their-secret' });
      assert.equal(forged.status, 401);
      assert.deepEqual(
        (await previewsOf(parentId, admin)).map((d) => d.id),
        [previewId],
      );
      const theirPreview = (await hostile('GET', `/v2/deployments/${theirOpened.body.previews?.[0]?.deployment_id}`)).body as PreviewBody;
      assert.deepEqual(theirPreview.secrets, [], 'their fork gets no secret either');
    } finally {
      await forks.close();
    }
  });

  test('a git integration: branches matching the pattern get previews through the poller, follow new commits and go with the branch', async () => {
    await repo.commit('main', { 'agent.txt': `poll ${kind}` });
    const integration = await gitIntegrationOf(api, `${http.url}/acme/agent.git`);
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: `poll-${kind}`,
        source: 'codehost',
        source_config: { integration_id: integration.id, repo_url: integration.repoUrl },
        source_revision_config: { repo_ref: 'main' },
        secrets: [],
      },
    });
    assert.equal(created.status, 201, created.text);
    const parentId = created.body.id as string;
    const patched = await api('PATCH', `/v2/deployments/${parentId}`, { body: { previews: { enabled: true, branch_pattern: 'preview/*' } } });
    assert.equal(patched.status, 200, patched.text);
    const firstSha = await repo.commit('preview/one', { 'agent.txt': 'p1' });
    await repo.commit('other/two', { 'agent.txt': 'ignored' });
    await eventually(async () => (await previewsOf(parentId)).length === 1, 'a preview of preview/one', 20_000);
    const [preview] = await previewsOf(parentId);
    assert.equal(preview?.preview?.branch, 'preview/one');
    assert.equal(preview?.preview?.head_sha, firstSha);
    const nextSha = await repo.commit('preview/one', { 'agent.txt': 'p1 again' });
    await eventually(async () => (await previewsOf(parentId))[0]?.preview?.head_sha === nextSha, 'the preview to follow the branch', 20_000);
    await git(repo.work, ['push', 'origin', '--delete', 'preview/one']);
    await eventually(async () => (await previewsOf(parentId)).length === 0, 'the preview to go with its branch', 20_000);
  });
});
