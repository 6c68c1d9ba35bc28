import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { deadline } from '../support/deadline.js';
import { client } from '../support/http.js';
import type { TestServer } from '../support/server.js';
import { browserAbsent, type DashboardHarness, startDashboard } from './harness.js';

if (browserAbsent) process.stdout.write(`# SKIP the dashboard in a browser: ${browserAbsent}\n`);

const imageDeployment = (name: string, image: string) => ({
  name,
  source: 'external_docker',
  source_config: null,
  source_revision_config: { image_uri: image },
  secrets: [],
});

describe('the dashboard in a browser', { skip: browserAbsent ?? undefined }, () => {
  let harness: DashboardHarness;
  let server: TestServer;
  let violations: string[];

  before(async () => {
    harness = await startDashboard();
    server = harness.server;
    violations = harness.violations;
  });
  after(async () => {
    await harness?.close();
  });
  const checkAccessibility = (page: Page, screen: string) => harness.checkAccessibility(page, screen);
  const signedIn = (key: string, at = '/') => harness.signedIn(key, at);

  test(
    'sign in, an empty workspace, a deployment and a new revision reaching DEPLOYED, a failed one with its reason, sign out',
    { timeout: deadline(2 * 60_000) },
    async () => {
      const page = await signedIn(server.adminKey);
      assert.equal(new URL(page.url()).pathname, '/deployments');
      await page.getByText('berth deploy --name my-agent').waitFor();
      await checkAccessibility(page, 'empty deployments list');
      await page.getByText('langgraph deploy --remote').waitFor();
      // The key is nowhere the page's scripts can read it; the session cookie is HttpOnly.
      const stored = await page.evaluate(() => JSON.stringify({ cookie: document.cookie, local: { ...localStorage }, session: { ...sessionStorage } }));
      assert.ok(!stored.includes(server.adminKey) && !stored.includes('berth_session'), stored);

      // On the in-process runtime, for speed: podman.test.ts watches a revision go live in a real container.
      const api = client(server.url, { key: server.adminKey });
      const created = await api('POST', '/v2/deployments', { body: imageDeployment('browser-agent', 'localhost/berth-test-agent:v1') });
      assert.equal(created.status, 201, created.text);
      await page.goto(`${server.url}/deployments/${created.body.id}`);
      await page.locator('[data-testid=timeline] li[data-status=DEPLOYED]').waitFor();
      const steps = await page.locator('[data-testid=timeline] li').evaluateAll((items) => items.map((item) => item.getAttribute('data-status')));
      assert.ok(steps.length >= 3, steps.join(', '));
      assert.equal(steps.at(-1), 'DEPLOYED');
      assert.equal(new Set(steps).size, steps.length, `no step twice: ${steps.join(', ')}`);
      await page
        .getByTestId('serving-revision')
        .filter({ hasText: created.body.latest_revision_id.slice(0, 8) })
        .waitFor();
      await page.getByRole('button', { name: 'Delete…' }).waitFor();
      await checkAccessibility(page, 'deployment');

      // A new revision from the page: the open page follows it from its first status to DEPLOYED.
      await page.getByRole('button', { name: 'New revision' }).click();
      await page.getByRole('heading', { name: /Revision #2/ }).waitFor();
      await page.locator('[data-testid=timeline] li[data-status=DEPLOYED]').waitFor();
      const second = await page.locator('[data-testid=timeline] li').evaluateAll((items) => items.map((item) => item.getAttribute('data-status')));
      assert.equal(new Set(second).size, second.length, `no step twice: ${second.join(', ')}`);
      const revisions = await api('GET', `/v2/deployments/${created.body.id}/revisions`);
      assert.equal(revisions.body.resources.length, 2);
      // Health says what serves, from the API's own statuses: the second revision, since its DEPLOYED event.
      const servingNow = (await api('GET', `/v2/deployments/${created.body.id}`)).body.active_revision_id as string;
      await page
        .getByTestId('health')
        .filter({ hasText: `Serving revision #2 (${servingNow.slice(0, 8)}) since` })
        .waitFor();

      // The list finds it by name; a search with no match says so.
      await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Deployments' }).click();
      await page.getByRole('link', { name: 'browser-agent' }).waitFor();
      await checkAccessibility(page, 'deployments list');
      await page.getByLabel('Name contains').fill('nothing-like-it');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.getByText('No deployment matches.').waitFor();
      assert.equal(new URL(page.url()).searchParams.get('q'), 'nothing-like-it', 'the search is in the URL');

      const failing = await api('POST', '/v2/deployments', { body: imageDeployment('browser-unhealthy', 'localhost/unhealthy:v1') });
      assert.equal(failing.status, 201, failing.text);
      await page.goto(`${server.url}/deployments/${failing.body.id}`);
      await page.locator('[data-testid=timeline] li[data-status=DEPLOY_FAILED]').waitFor();
      await page.getByRole('heading', { name: 'Why it failed' }).waitFor();
      await checkAccessibility(page, 'failed revision');
      await page.locator('.failure').getByText('/ok', { exact: false }).first().waitFor();
      await page
        .getByTestId('health')
        .filter({ hasText: /^Not serving: revision #1 \([0-9a-f]{8}\) ended in DEPLOY_FAILED; its timeline says why\.$/ })
        .waitFor();

      // Its logs: every line of the revision, then filtered by level and by a search, all on the page.
      await page.getByRole('link', { name: 'Logs of this revision' }).click();
      const log = page.getByTestId('log');
      await log.getByText('Started localhost/unhealthy:v1').waitFor();
      await checkAccessibility(page, 'logs');
      await page.getByLabel('Search').fill('answered 503');
      await log.getByText('Started localhost/unhealthy:v1').waitFor({ state: 'detached' });
      await log.getByText('answered 503').first().waitFor();
      await page.getByLabel('Search').fill('');
      await page.getByLabel('Level').selectOption('ERROR');
      await log.getByText('Started localhost/unhealthy:v1').waitFor({ state: 'detached' });
      assert.ok((await log.locator('.line').count()) >= 1, 'the failure is logged at ERROR or above');
      assert.ok(!(await log.innerText()).includes('\x1b'), 'no raw escape codes');

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('API key').waitFor();
      const after = await page.evaluate(async () => (await fetch('/v1/sessions/current')).status);
      assert.equal(after, 401, 'the session ended with sign-out');
      assert.deepEqual(violations, [], 'no serious or critical accessibility violation on any screen');
    },
  );

  test('a read-only key sees the deployment and no write action; a deep link opens after sign-in', { timeout: deadline(60_000) }, async () => {
    const api = client(server.url, { key: server.adminKey });
    const readOnly = await api('POST', '/v1/api-keys', { body: { name: 'viewer', role: 'read_only', workspace_id: server.workspaceId } });
    const deployment = await api('POST', '/v2/deployments', { body: imageDeployment('browser-read-only', 'localhost/berth-test-agent:v1') });
    assert.equal(deployment.status, 201, deployment.text);
    const page = await signedIn(readOnly.body.key, `/deployments/${deployment.body.id}`);
    assert.equal(new URL(page.url()).pathname, `/deployments/${deployment.body.id}`, 'the pasted link survives sign-in');
    await page.getByRole('heading', { name: 'browser-read-only' }).waitFor();
    await page.locator('[data-testid=timeline] li').first().waitFor();
    assert.equal(await page.getByTestId('actions').count(), 0, 'no actions for a read-only key');
    assert.equal(await page.getByRole('button', { name: /Delete|Redeploy|New revision|Interrupt/ }).count(), 0);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();

    // A deployer key: its own deployment, where it may ship but not delete.
    const deployer = await api('POST', '/v1/api-keys', {
      body: { name: 'shipper', role: 'deployer', workspace_id: server.workspaceId, deployment_ids: [deployment.body.id] },
    });
    assert.equal(deployer.status, 201, deployer.text);
    const shipping = await signedIn(deployer.body.key);
    await shipping.getByRole('link', { name: deployment.body.id }).click();
    await shipping.getByRole('button', { name: 'New revision' }).waitFor();
    assert.equal(await shipping.getByRole('button', { name: 'Delete…' }).count(), 0, 'a deployer key may not delete');
  });
  test('an admin key switches workspace and pages through it; the URL keeps both', { timeout: deadline(2 * 60_000) }, async () => {
    const api = client(server.url, { key: server.adminKey });
    const workspace = await api('POST', '/v1/workspaces', { body: { name: 'staging' } });
    assert.equal(workspace.status, 201, workspace.text);
    for (let n = 1; n <= 21; n += 1) {
      const name = `staging-${String(n).padStart(2, '0')}`;
      const made = await api('POST', '/v2/deployments', { body: imageDeployment(name, 'localhost/berth-test-agent:v1'), tenant: workspace.body.id });
      assert.equal(made.status, 201, made.text);
    }
    const page = await signedIn(server.adminKey);
    await page.getByLabel('Workspace').selectOption({ label: 'staging' });
    await page
      .getByRole('link', { name: /^staging-\d+$/ })
      .first()
      .waitFor();
    assert.equal(new URL(page.url()).searchParams.get('workspace'), workspace.body.id);
    assert.equal(await page.locator('table.deployments tbody tr').count(), 20);
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Page 2').waitFor();
    await page.locator('table.deployments tbody tr').first().waitFor();
    assert.equal(await page.locator('table.deployments tbody tr').count(), 1);

    // The URL is the state: opened afresh, it shows the same page of the same workspace.
    const url = page.url();
    assert.equal(new URL(url).searchParams.get('page'), '1');
    await page.goto(url);
    await page.getByText('Page 2').waitFor();
    const only = page.locator('table.deployments tbody tr a').first();
    const name = await only.innerText();
    await only.click();
    await page.getByRole('heading', { name }).waitFor();
    assert.equal(new URL(page.url()).searchParams.get('workspace'), workspace.body.id, 'links keep the workspace');
  });
});
