import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { deadline } from '../support/deadline.js';
import { createRepository, type FixtureRepository, type TempDir, tempDir } from '../support/git-repos.js';
import { type GitHubStandIn, startGitHubStandIn } from '../support/github-stand-in.js';
import { type Client, client } from '../support/http.js';
import { browserAbsent, type DashboardHarness, startDashboard } from './harness.js';

if (browserAbsent) process.stdout.write(`# SKIP the dashboard's previews in a browser: ${browserAbsent}\n`);

const HOOK_SECRET = `hook-${randomUUID()}`;
const REPO_ID = 701;

/**
 * Issue 22 with issue 23 item 4: previews in the dashboard. Previews are made as the API
 * makes them, from signed `pull_request` deliveries (the GitHub stand-in serves the
 * repository; the test server's fake builder and in-process runtime deploy them).
 */
describe("the dashboard's previews", { skip: browserAbsent ?? undefined }, () => {
  let harness: DashboardHarness;
  let dir: TempDir;
  let repo: FixtureRepository;
  let github: GitHubStandIn;
  let api: Client;

  before(async () => {
    dir = await tempDir();
    repo = await createRepository(dir.path, { owner: 'acme', name: 'agent', defaultBranch: 'main' });
    github = await startGitHubStandIn({
      appId: 41,
      installationId: 42,
      repositories: [{ id: REPO_ID, owner: 'acme', name: 'agent', defaultBranch: 'main' }],
      gitRoot: dir.path,
    });
    harness = await startDashboard({ env: { BERTH_OUTBOUND_ALLOW_PRIVATE: 'on' } });
    api = client(harness.server.url, { key: harness.server.adminKey });
  });
  after(async () => {
    await harness?.close();
    await github?.close();
    await dir?.remove();
  });

  async function deployed(deploymentId: string, revisionId: string): Promise<void> {
    const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}?wait_for_terminal=60`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'DEPLOYED', res.body.status_message ?? '');
  }

  async function pullRequestOpened(integrationId: string, number: number, sha: string, ref: string): Promise<string> {
    const body = JSON.stringify({
      action: 'opened',
      number,
      pull_request: { head: { sha, ref, repo: { id: REPO_ID, full_name: 'acme/agent' } }, labels: [], merged: false },
      repository: { id: REPO_ID, full_name: 'acme/agent', clone_url: `${github.url}/acme/agent.git`, html_url: `${github.url}/acme/agent` },
      installation: { id: 42 },
    });
    const res = await fetch(`${harness.server.url}/v1/integrations/codehost/${integrationId}/webhook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'pull_request',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': `sha256=${createHmac('sha256', HOOK_SECRET).update(body).digest('hex')}`,
      },
      body,
    });
    const answer = (await res.json()) as { previews?: { action: string; deployment_id: string | null }[] };
    assert.equal(res.status, 200, JSON.stringify(answer));
    const [made] = answer.previews ?? [];
    assert.equal(made?.action, 'created', JSON.stringify(answer));
    return made.deployment_id!;
  }

  /** A parent with previews on and two pull requests' previews, deployed; a deployment of its own beside them. */
  async function seed() {
    const integration = await api('POST', '/v1/integrations/codehost', {
      body: {
        provider: 'github',
        name: 'acme',
        github: { app_id: 41, installation_id: 42, private_key: github.privateKey, api_url: github.url, webhook_secret: HOOK_SECRET },
      },
    });
    assert.equal(integration.status, 201, integration.text);
    const [listed] = (await api('GET', `/v1/integrations/codehost/${integration.body.id}/repos`)).body as { url: string }[];
    assert.ok(listed);
    await repo.commit('main', { 'agent.txt': 'main' });
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: 'web',
        source: 'github',
        source_config: { integration_id: integration.body.id, repo_url: listed.url, build_on_push: true },
        source_revision_config: { repo_ref: 'main' },
        secrets: [
          { name: 'OPENAI_API_KEY', value: 'sk-preview' },
          { name: 'PROD_DB_PASSWORD', value: 'never-in-a-preview' },
        ],
      },
    });
    assert.equal(created.status, 201, created.text);
    const parent = created.body as { id: string; latest_revision_id: string };
    await deployed(parent.id, parent.latest_revision_id);
    const on = await api('PATCH', `/v2/deployments/${parent.id}`, { body: { previews: { enabled: true } } });
    assert.equal(on.status, 200, on.text);
    const heads = [await repo.commit('feature-1', { 'agent.txt': 'one' }), await repo.commit('feature-2', { 'agent.txt': 'two' })];
    const previews = [
      await pullRequestOpened(integration.body.id, 1, heads[0]!, 'feature-1'),
      await pullRequestOpened(integration.body.id, 2, heads[1]!, 'feature-2'),
    ];
    for (const id of previews) await deployed(id, (await api('GET', `/v2/deployments/${id}`)).body.latest_revision_id);
    return { parentId: parent.id, previews, heads };
  }

  test(
    'badges, the previews filter, the parent section, a preview page, settings saved and refused; read-only sees no controls',
    { timeout: deadline(3 * 60_000) },
    async () => {
      const { server } = harness;
      const { parentId, previews, heads } = await seed();

      // The list: each preview badged with its parent and pull request; the parent is not.
      const page = await harness.signedIn(server.adminKey, '/deployments');
      const rows = page.locator('table.deployments tbody tr');
      const row = (name: string) => rows.filter({ has: page.getByRole('link', { name, exact: true }) });
      const previewRow = rows.filter({ hasText: 'PR #1' });
      await previewRow.getByTestId('preview-badge').filter({ hasText: 'preview of web · PR #1' }).waitFor();
      await rows.filter({ hasText: 'PR #2' }).getByTestId('preview-badge').waitFor();
      assert.equal(await row('web').getByTestId('preview-badge').count(), 0, 'the parent is not badged');
      await harness.checkAccessibility(page, 'deployments with previews');

      // The filter, in the URL: previews only, then (deep-linked) no previews.
      await page.getByLabel('Previews').selectOption('only');
      await page.waitForURL(/previews=only/);
      await row('web').waitFor({ state: 'detached' });
      assert.equal(await page.getByTestId('preview-badge').count(), 2);
      await page.goto(`${server.url}/deployments?previews=none`);
      await row('web').waitFor();
      assert.equal(await page.getByTestId('preview-badge').count(), 0, 'no previews listed');
      assert.equal(await page.getByLabel('Previews').inputValue(), 'none');

      // The parent's page: its previews, each linked, with its pull request, head commit and status.
      await page.goto(`${server.url}/deployments/${parentId}`);
      const section = page.getByTestId('previews');
      await section.getByRole('cell', { name: 'PR #2', exact: true }).waitFor();
      const first = section.locator('tbody tr', { hasText: 'PR #1' });
      await first.getByText(heads[0]!.slice(0, 12)).waitFor();
      await first.getByText('ready').waitFor();
      await harness.checkAccessibility(page, 'parent with previews');
      await first.getByRole('link').first().click();

      // A preview's page: its parent (a link), its pull request and branch, its head commit.
      await page.waitForURL(new RegExp(`/deployments/${previews[0]}$`));
      const origin = page.getByTestId('preview-of');
      await origin.getByRole('link', { name: 'web', exact: true }).waitFor();
      await origin.getByText('PR #1').waitFor();
      await origin.getByText('feature-1').waitFor();
      assert.equal(await origin.getByTitle(heads[0]!).innerText(), heads[0]!.slice(0, 12));
      assert.equal(await page.getByTestId('previews').count(), 0, 'a preview has no previews section');
      await harness.checkAccessibility(page, 'preview');
      // Its settings hold no preview settings of its own: they are its parent's.
      await page.goto(`${server.url}/deployments/${previews[0]}/settings`);
      await page.getByTestId('preview-settings-parent').waitFor();
      assert.equal(await page.getByRole('button', { name: 'Save previews' }).count(), 0);
      await page.goBack();
      await origin.getByRole('link', { name: 'web', exact: true }).click();
      await page.waitForURL(new RegExp(`/deployments/${parentId}$`));

      // Settings: the API's refusal is shown as it says it; then a valid change is saved in place.
      await page.goto(`${server.url}/deployments/${parentId}/settings`);
      await page.getByLabel('Previews on').waitFor();
      assert.equal(await page.getByLabel('Previews on').isChecked(), true);
      await harness.checkAccessibility(page, 'preview settings');
      await page.getByLabel('Trigger').selectOption('label');
      await page.getByRole('button', { name: 'Save previews' }).click();
      // The refusal's own alert: another may be showing already (a request that failed under
      // a loaded machine), and reading the first one raced the answer.
      const refusal = await page.getByRole('alert').filter({ hasText: 'Preview settings:' }).innerText();
      assert.match(refusal, /^Preview settings: trigger 'label' needs a 'label' to look for./, refusal);
      const unchanged = await api('GET', `/v2/deployments/${parentId}`);
      assert.equal(unchanged.body.previews.trigger, 'all', 'nothing saved on a refusal');

      await page.getByLabel('Label', { exact: true }).fill('preview');
      await page.getByLabel('Idle minutes before removal').fill('90');
      await page.getByLabel('Previews at most').fill('4');
      await page.getByLabel('Give previews OPENAI_API_KEY').check();
      await page.getByLabel('Branch pattern (git integrations)').fill('preview/*');
      await page.getByRole('button', { name: 'Save previews' }).click();
      await page.getByText('Preview settings saved').waitFor();
      const saved = await api('GET', `/v2/deployments/${parentId}`);
      assert.deepEqual(saved.body.previews, {
        enabled: true,
        trigger: 'label',
        label: 'preview',
        idle_minutes: 90,
        max_previews: 4,
        secret_names: ['OPENAI_API_KEY'],
        branch_pattern: 'preview/*',
        allow_forks: false,
      });
      assert.equal(saved.body.latest_revision_id, unchanged.body.latest_revision_id, 'preview settings make no revision');
      assert.deepEqual(harness.violations, []);

      // A read-only key reads the settings and the previews, and is offered no control.
      const viewer = await api('POST', '/v1/api-keys', { body: { name: 'preview-viewer', role: 'read_only', workspace_id: server.workspaceId } });
      assert.equal(viewer.status, 201, viewer.text);
      const watching = await harness.signedIn(viewer.body.key, `/deployments/${parentId}/settings`);
      const facts = watching.getByTestId('preview-settings');
      await facts.getByText('pull requests labelled preview').waitFor();
      await facts.getByText('OPENAI_API_KEY').waitFor();
      assert.equal(await watching.getByRole('button', { name: /Save/ }).count(), 0, 'no save for a read-only key');
      assert.equal(await watching.locator('main').locator('input:enabled, select:enabled').count(), 0, 'no field to change');
      await watching.goto(`${server.url}/deployments/${parentId}`);
      await watching.getByTestId('previews').getByRole('cell', { name: 'PR #1', exact: true }).waitFor();
      await watching.context().close();
    },
  );
});
