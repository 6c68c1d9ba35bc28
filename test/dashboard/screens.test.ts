import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { deadline } from '../support/deadline.js';
import { client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { browserAbsent, type DashboardHarness, startDashboard } from './harness.js';

if (browserAbsent) process.stdout.write(`# SKIP the dashboard's second screens in a browser: ${browserAbsent}\n`);

const imageDeployment = (name: string, image: string) => ({
  name,
  source: 'external_docker',
  source_config: null,
  source_revision_config: { image_uri: image },
  secrets: [{ name: 'FIRST_SECRET', value: 'first-value-kept' }],
});

const SECRET_VALUE = 'sk-dashboard-never-shown-4711';

describe("the dashboard's history, settings, pins, keys and audit screens", { skip: browserAbsent ?? undefined }, () => {
  let harness: DashboardHarness;
  before(async () => {
    harness = await startDashboard();
  });
  after(async () => {
    await harness?.close();
  });

  test('a diff of two revisions, a secret saved unseen, a rollback pinned and unpinned', { timeout: deadline(3 * 60_000) }, async () => {
    const { server } = harness;
    const api = client(server.url, { key: server.adminKey });
    const terminal = async (id: string, revisionId: string) => {
      const revision = await api('GET', `/v2/deployments/${id}/revisions/${revisionId}?wait_for_terminal=60`);
      assert.equal(revision.body.status, 'DEPLOYED', revision.text);
    };
    const created = await api('POST', '/v2/deployments', { body: imageDeployment('screens-agent', 'localhost/berth-test-agent:v1') });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    const first = created.body.latest_revision_id as string;
    await terminal(id, first);
    const second = await api('POST', `/v2/deployments/${id}/revisions`, { body: { source_revision_config: { image_uri: 'localhost/berth-test-agent:v2' } } });
    assert.equal(second.status, 201, second.text);
    await terminal(id, second.body.id);

    // The diff, deep-linked: the image changed, the commit did not.
    const page = await harness.signedIn(server.adminKey, `/deployments/${id}/history?from=${first}&to=${second.body.id}`);
    // Every answer the page receives, to show that no secret value ever reaches the browser.
    const answers: Promise<string>[] = [];
    page.on('response', (response) => void answers.push(response.text().catch(() => '')));
    const diff = page.getByTestId('diff');
    await diff.getByText('localhost/berth-test-agent:v2').waitFor();
    const image = diff.locator('tr', { has: page.getByRole('rowheader', { name: 'image', exact: true }) });
    assert.equal(await image.getAttribute('data-changed'), 'true');
    assert.match(await image.innerText(), /berth-test-agent:v1[\s\S]*berth-test-agent:v2/);
    const commit = diff.locator('tr', { has: page.getByRole('rowheader', { name: 'commit', exact: true }) });
    assert.equal(await commit.getAttribute('data-changed'), null);
    assert.ok(!(await page.content()).includes('first-value-kept'), 'no secret value on the history page');
    await harness.checkAccessibility(page, 'history');

    // A secret saved: its name shows, its value never does; it made a revision.
    await page.goto(`${server.url}/deployments/${id}/settings`);
    await page.getByTestId('secret-names').getByText('FIRST_SECRET', { exact: true }).waitFor();
    await harness.checkAccessibility(page, 'settings');
    await page.getByLabel('Secret name').fill('OPENAI_API_KEY');
    await page.getByLabel('New value').fill(SECRET_VALUE);
    await page.getByRole('button', { name: 'Save secrets and deploy' }).click();
    await page.getByText('Secrets saved').waitFor();
    await page.getByTestId('secret-names').getByText('OPENAI_API_KEY', { exact: true }).waitFor();
    const shown = await page.evaluate(() => ({
      html: document.documentElement.outerHTML,
      inputs: [...document.querySelectorAll('input')].map((input) => input.value),
    }));
    assert.ok(!shown.html.includes(SECRET_VALUE) && !shown.html.includes('first-value-kept'), 'no secret value in the DOM');
    assert.ok(!shown.inputs.includes(SECRET_VALUE), 'the value field was emptied');
    const afterSave = await api('GET', `/v2/deployments/${id}`);
    const secrets = Object.fromEntries(afterSave.body.secrets.map((secret: { name: string; value: string }) => [secret.name, secret.value]));
    assert.deepEqual(secrets, { FIRST_SECRET: 'first-value-kept', OPENAI_API_KEY: SECRET_VALUE }, 'the other secret went back unchanged');
    assert.notEqual(afterSave.body.latest_revision_id, second.body.id, 'a change of secrets made a revision');
    await terminal(id, afterSave.body.latest_revision_id);
    // Its deploy changed the deployment (what serves): read afresh before the next write.
    await page.reload();

    // In-place settings save with If-Match; someone else's change in between is told, and the page reloads.
    await page.getByLabel('Display name').fill('Screens agent');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('No new revision').waitFor();
    const unchanged = await api('GET', `/v2/deployments/${id}/revisions`);
    assert.equal(unchanged.body.resources.length, 3, 'a display name makes no revision');
    assert.equal((await api('PATCH', `/v2/deployments/${id}`, { body: { display_name: 'Changed elsewhere' } })).status, 200);
    await page.getByLabel('Display name').fill('Mine');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Someone else changed this deployment').waitFor();
    // The page reads the deployment again after saying so; on a busy machine that comes later.
    await eventually(async () => (await page.getByLabel('Display name').inputValue()) === 'Changed elsewhere', 'the page showing the other change');

    // A rollback from the page of revision #1: the deployment shows the pin, then Unpin clears it.
    await page.goto(`${server.url}/deployments/${id}/revisions/${first}`);
    await page.getByRole('button', { name: 'Roll back to #1' }).click();
    const pin = page.getByTestId('pin');
    await pin.getByRole('heading', { name: 'Pinned by a rollback' }).waitFor();
    const pinned = await api('GET', `/v2/deployments/${id}`);
    assert.ok(pinned.body.pinned_revision_id, pinned.text);
    await pin.getByText('#4').waitFor();
    await harness.checkAccessibility(page, 'pinned deployment');
    // A read-only key sees the pin and is not offered Unpin.
    const viewer = await api('POST', '/v1/api-keys', { body: { name: 'pin-viewer', role: 'read_only', workspace_id: server.workspaceId } });
    const watching = await harness.signedIn(viewer.body.key, `/deployments/${id}`);
    await watching.getByTestId('pin').getByRole('heading', { name: 'Pinned by a rollback' }).waitFor();
    assert.equal(await watching.getByRole('button', { name: 'Unpin' }).count(), 0, 'no Unpin for a read-only key');
    await watching.context().close();
    await pin.getByRole('button', { name: 'Unpin' }).click();
    await pin.waitFor({ state: 'detached' });
    const unpinned = await api('GET', `/v2/deployments/${id}`);
    assert.equal(unpinned.body.pinned_revision_id, null);

    // Removal of the last secret (the rollback to #1 brought back its set: FIRST_SECRET alone); only the name is sent.
    assert.deepEqual(
      unpinned.body.secrets.map((secret: { name: string }) => secret.name),
      ['FIRST_SECRET'],
    );
    await page.goto(`${server.url}/deployments/${id}/settings`);
    await page.getByLabel('Remove FIRST_SECRET').check();
    await page.getByRole('button', { name: 'Save secrets and deploy' }).click();
    await page.getByText('Secrets saved').waitFor();
    await page.getByText('No secrets.').waitFor();
    const emptied = await api('GET', `/v2/deployments/${id}`);
    assert.deepEqual(emptied.body.secrets, []);
    await terminal(id, emptied.body.latest_revision_id);

    const received = await Promise.all(answers);
    assert.ok(
      received.some((body) => body.includes('FIRST_SECRET')),
      'the page did receive the names',
    );
    for (const body of received) {
      assert.ok(!body.includes(SECRET_VALUE) && !body.includes('first-value-kept'), `a secret value in an answer to the page: ${body.slice(0, 200)}`);
    }
    assert.deepEqual(harness.violations, []);
  });

  test('a key created, shown once, revoked; listeners, integrations and the audit log', { timeout: deadline(60_000) }, async () => {
    const { server } = harness;
    const page = await harness.signedIn(server.adminKey, '/api-keys');
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await harness.checkAccessibility(page, 'api keys');
    await page.getByLabel('Key name').fill('ci-reader');
    await page.getByLabel('Role').selectOption('read_only');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = await page.getByTestId('new-key').innerText();
    assert.match(key, /\S{20,}/);
    await page.getByRole('button', { name: 'Copy key' }).waitFor();
    const api = client(server.url, { key });
    assert.equal((await api('GET', '/v2/deployments')).status, 200, 'the new key works');
    await page.getByRole('button', { name: 'Done' }).click();
    await page.reload();
    await page.getByRole('cell', { name: 'ci-reader', exact: true }).waitFor();
    assert.ok(!(await page.content()).includes(key), 'shown once: not after a reload');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Revoke ci-reader' }).click();
    await page.getByRole('cell', { name: 'ci-reader', exact: true }).waitFor({ state: 'detached' });
    assert.equal((await api('GET', '/v2/deployments')).status, 401, 'the revoked key no longer works');

    await page.getByRole('link', { name: 'Listeners' }).click();
    await page.getByTestId('agent-command').waitFor();
    await harness.checkAccessibility(page, 'listeners');
    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('heading', { name: 'Code-host integrations' }).waitFor();
    await harness.checkAccessibility(page, 'integrations');
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByTestId('audit').getByText('api_key.revoke').first().waitFor();
    await page.getByLabel('Action').fill('api_key.create');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/action=api_key.create/);
    await page.getByTestId('audit').getByText('api_key.create').first().waitFor();
    assert.equal(await page.getByTestId('audit').getByText('api_key.revoke').count(), 0);
    await harness.checkAccessibility(page, 'audit log');
    assert.deepEqual(harness.violations, []);
  });

  test('a read-only key sees none of the write actions on these screens', { timeout: deadline(60_000) }, async () => {
    const { server } = harness;
    const admin = client(server.url, { key: server.adminKey });
    const readOnly = await admin('POST', '/v1/api-keys', { body: { name: 'viewer', role: 'read_only', workspace_id: server.workspaceId } });
    assert.equal(readOnly.status, 201, readOnly.text);
    const created = await admin('POST', '/v2/deployments', { body: imageDeployment('screens-read-only', 'localhost/berth-test-agent:v1') });
    const id = created.body.id as string;
    const page = await harness.signedIn(readOnly.body.key, `/deployments/${id}/settings`);
    await page.getByTestId('secret-names').getByText('FIRST_SECRET', { exact: true }).waitFor();
    assert.equal(
      await page
        .getByRole('button')
        .filter({ hasText: /Save|Remove/ })
        .count(),
      0,
      'no save for a read-only key',
    );
    assert.equal(await page.getByLabel('New value').count(), 0);
    assert.equal(await page.getByRole('link', { name: 'API keys' }).count(), 0, 'no API keys screen offered');
    await page.goto(`${server.url}/api-keys`);
    await page.getByText("This key's role may not see API keys.").waitFor();
    assert.equal(await page.getByRole('button', { name: /Create key|Revoke/ }).count(), 0);
    await page.goto(`${server.url}/deployments/${id}/history`);
    await page.getByRole('heading', { name: /History of/ }).waitFor();
    await page.goto(`${server.url}/audit-log`);
    await page.getByTestId('audit').waitFor();
    await page.goto(`${server.url}/integrations`);
    await page.getByRole('heading', { name: 'Code-host integrations' }).waitFor();
    assert.equal(await page.getByRole('button', { name: /Create|Delete|Revoke|Save|Unpin/ }).count(), 0);
  });
});
