import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { announce, recordLog } from '../../src/events/recorder.js';
import { deadline } from '../support/deadline.js';
import { client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { startReceiver } from '../support/webhook-receiver.js';
import { browserAbsent, type DashboardHarness, startDashboard } from './harness.js';

if (browserAbsent) process.stdout.write(`# SKIP the dashboard's logs, webhooks and events in a browser: ${browserAbsent}\n`);

const imageDeployment = (name: string, image: string) => ({
  name,
  source: 'external_docker',
  source_config: null,
  source_revision_config: { image_uri: image },
  secrets: [],
});

/** Build output as a hostile repository could make it: markup, and escapes of every kind. */
const HOSTILE_LINES = [
  '\x1b[38;5;208morange 256\x1b[0m \x1b[38;2;10;200;30mtruecolor green\x1b[0m \x1b[48;5;21mon blue\x1b[0m',
  '\x1b[1mbold\x1b[22m \x1b[2mdim\x1b[22m \x1b[3mitalic\x1b[23m \x1b[4munderlined\x1b[24m plain',
  '<script>window.__owned = 1</script><img src=x onerror="window.__owned = 2"> \x1b[31m<b>not bold</b>\x1b[0m',
  '\x1b]0;a window title\x07\x1b[2Kcleared\x1b[?25l \x1b]8;;javascript:alert(1)\x07a link\x1b]8;;\x07 \x1b(Bcharset\x1bZ end \x1b[31\x1b',
];

describe("the dashboard's logs, webhooks and workspace events", { skip: browserAbsent ?? undefined }, () => {
  let harness: DashboardHarness;
  before(async () => {
    harness = await startDashboard({ env: { BERTH_OUTBOUND_ALLOW_PRIVATE: 'on' } });
  });
  after(async () => {
    await harness?.close();
  });

  test("a failed revision's reason once; log colours rendered, never markup nor raw escapes", { timeout: deadline(2 * 60_000) }, async () => {
    const { server } = harness;
    const api = client(server.url, { key: server.adminKey });
    const failing = await api('POST', '/v2/deployments', { body: imageDeployment('colours-unhealthy', 'localhost/unhealthy:v1') });
    assert.equal(failing.status, 201, failing.text);
    const id = failing.body.id as string;
    const revisionId = failing.body.latest_revision_id as string;
    const page = await harness.signedIn(server.adminKey, `/deployments/${id}`);
    await page.locator('[data-testid=timeline] li[data-status=DEPLOY_FAILED]').waitFor();
    const reason = (await page.getByTestId('failure-reason').innerText()).trim();
    assert.ok(reason.length > 0);
    assert.equal(await page.getByText(reason, { exact: true }).count(), 1, `the reason once: ${reason}`);
    assert.ok(!(await page.getByTestId('timeline').innerText()).includes(reason), 'not in the steps too');
    await page.locator('.failing-step').waitFor();

    // The hostile lines, as a build would have logged them.
    for (const message of HOSTILE_LINES) {
      await recordLog(server.berth.db, { deploymentId: id, revisionId, logType: 'build', level: 'INFO', message });
    }
    announce(server.berth.bus, id);
    await page.goto(`${server.url}/deployments/${id}/revisions/${revisionId}/logs`);
    const log = page.getByTestId('log');
    await log.getByText('orange 256').waitFor();
    await log.getByText(/charset/).waitFor();
    const style = (text: string) =>
      log.getByText(text, { exact: true }).evaluate((element) => {
        const computed = getComputedStyle(element);
        return {
          color: computed.color,
          background: computed.backgroundColor,
          weight: computed.fontWeight,
          fontStyle: computed.fontStyle,
          decoration: computed.textDecorationLine,
          opacity: computed.opacity,
        };
      });
    // Colours given by number stay themselves, moved only as far as it takes to read on the page.
    const rgb = (css: string) => (css.match(/\d+/g) ?? []).map(Number);
    const [r, g, b] = rgb((await style('orange 256')).color);
    assert.ok(r! > g! && g! > b!, `still orange: ${r},${g},${b}`);
    const green = rgb((await style('truecolor green')).color);
    assert.ok(green[1]! > green[0]! && green[1]! > green[2]!, `still green: ${green.join(',')}`);
    const onBlue = await style('on blue');
    assert.equal(onBlue.background, 'rgb(0, 0, 255)', 'a 256-colour background');
    assert.equal(onBlue.color, 'rgb(255, 255, 255)', 'with text that reads on it');
    assert.equal((await style('bold')).weight, '700');
    assert.equal((await style('dim')).opacity, '0.7');
    assert.equal((await style('italic')).fontStyle, 'italic');
    assert.equal((await style('underlined')).decoration, 'underline');

    // Markup in a line is text: no element made, no script run; no escape shows, and no link is made.
    const text = await log.innerText();
    assert.ok(text.includes('<script>window.__owned = 1</script>') && text.includes('<b>not bold</b>'), text);
    assert.equal(await log.locator('script, img, b, a').count(), 0);
    assert.equal(await page.evaluate(() => (window as unknown as { __owned?: number }).__owned), undefined);
    assert.ok(!/[\x00-\x08\x0b-\x1f\x7f]/.test(text), `no control character or raw escape: ${JSON.stringify(text)}`);
    assert.ok(text.includes('a window title') === false && text.includes('cleared') && text.includes('a link'), text);
    await page.getByLabel('Search').fill('truecolor');
    await log.getByText('orange 256').waitFor();
    assert.equal(await log.locator('.line').count(), 1, 'a search matches the text, not the escapes');
    await harness.checkAccessibility(page, 'coloured logs');
    assert.deepEqual(harness.violations, []);
  });

  test(
    'webhook subscriptions: created with the secret once, deliveries with status codes, redelivered, deleted',
    { timeout: deadline(2 * 60_000) },
    async () => {
      const { server } = harness;
      const api = client(server.url, { key: server.adminKey });
      const receiver = await startReceiver(() => ({ status: 200 }));
      try {
        const page = await harness.signedIn(server.adminKey);
        await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Webhooks' }).click();
        await page.getByText('No webhook subscription yet').waitFor();
        await harness.checkAccessibility(page, 'webhooks, none');
        await page.getByLabel('Endpoint URL').fill(receiver.url('/berth'));
        await page.getByLabel('Description').fill('ci');
        await page.getByLabel('deployment.created').check();
        await page.getByRole('button', { name: 'Subscribe' }).click();
        const secret = (await page.getByTestId('webhook-secret').innerText()).trim();
        assert.ok(secret.length >= 16, secret);
        await page.getByRole('button', { name: 'Done' }).click();
        await page.reload();
        const link = page.getByRole('link', { name: receiver.url('/berth') });
        await link.waitFor();
        assert.ok(!(await page.content()).includes(secret), 'the secret is shown once');
        await harness.checkAccessibility(page, 'webhooks');

        // A deployment made: the receiver gets the event, and the subscription's page shows it with its status code.
        const made = await api('POST', '/v2/deployments', { body: imageDeployment('hooked', 'localhost/berth-test-agent:v1') });
        assert.equal(made.status, 201, made.text);
        await eventually(async () => receiver.received.some((request) => request.body.includes('deployment.created')), 'the first delivery');
        await link.click();
        const deliveries = page.getByTestId('deliveries');
        await deliveries.locator('tr[data-state=delivered]').getByText('#1: 200').first().waitFor();

        // Redelivered while the receiver fails: the new delivery shows its 500 once tried.
        receiver.answerWith(() => ({ status: 500 }));
        await deliveries
          .getByRole('button', { name: /^Redeliver/ })
          .first()
          .click();
        await deliveries.getByText('#1: 500').first().waitFor();
        await deliveries
          .getByText(/redelivery of/)
          .first()
          .waitFor();
        await harness.checkAccessibility(page, 'webhook deliveries');

        // A read-only key sees them and is offered neither redelivery nor delete.
        const viewer = await api('POST', '/v1/api-keys', { body: { name: 'hook-viewer', role: 'read_only', workspace_id: server.workspaceId } });
        const watching = await harness.signedIn(viewer.body.key, new URL(page.url()).pathname);
        await watching.getByTestId('deliveries').getByText('#1: 200').first().waitFor();
        assert.equal(await watching.getByRole('button', { name: /Redeliver|Delete/ }).count(), 0);
        await watching.goto(`${server.url}/webhooks`);
        await watching.getByRole('link', { name: receiver.url('/berth') }).waitFor();
        assert.equal(await watching.getByRole('button', { name: 'Subscribe' }).count(), 0, 'no create for a read-only key');
        await watching.context().close();

        page.once('dialog', (dialog) => void dialog.accept());
        await page.getByRole('button', { name: 'Delete subscription' }).click();
        await page.getByRole('heading', { name: 'Subscription deleted' }).waitFor();
        const left = await api('GET', '/v1/webhook-subscriptions');
        assert.deepEqual(left.body.resources, []);
        assert.deepEqual(harness.violations, []);
      } finally {
        await receiver.close();
      }
    },
  );

  test("the workspace's events: live, filtered in the URL, and not offered to a deployer key", { timeout: deadline(2 * 60_000) }, async () => {
    const { server } = harness;
    const api = client(server.url, { key: server.adminKey });
    const page = await harness.signedIn(server.adminKey);
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Events' }).click();
    await page.getByTestId('events').waitFor();
    await page.getByText('live', { exact: true }).waitFor();

    // Made while the page is open: its statuses arrive live, named.
    const made = await api('POST', '/v2/deployments', { body: imageDeployment('watched-live', 'localhost/berth-test-agent:v1') });
    assert.equal(made.status, 201, made.text);
    const rows = page.getByTestId('events').locator('tr', { has: page.getByRole('link', { name: 'watched-live' }) });
    await rows.filter({ hasText: 'deployed' }).first().waitFor();
    await harness.checkAccessibility(page, 'events');

    await page.getByLabel('Kind').selectOption('status');
    await page.waitForURL(/event=status/);
    await page.getByTestId('events').locator('tr[data-event=status]').first().waitFor();
    assert.equal(await page.getByTestId('events').locator('tr[data-event=log]').count(), 0);

    // A pasted link opens the same view.
    const deepLink = `/events?deployment=${made.body.id}&event=status`;
    await page.goto(`${server.url}${deepLink}`);
    await page.getByTestId('events').locator('tr[data-event=status]').first().waitFor();
    const names = await page.getByTestId('events').locator('tbody tr td:nth-child(2)').allInnerTexts();
    assert.ok(names.length > 0 && names.every((name) => name === 'watched-live'), names.join(', '));

    const deployer = await api('POST', '/v1/api-keys', {
      body: { name: 'events-deployer', role: 'deployer', workspace_id: server.workspaceId, deployment_ids: [made.body.id] },
    });
    const shipping = await harness.signedIn(deployer.body.key, '/events');
    await shipping.getByText("This key's role may not read the whole workspace's events").waitFor();
    assert.equal(await shipping.getByRole('link', { name: 'Events' }).count(), 0);
    assert.equal(await shipping.getByRole('link', { name: 'Webhooks' }).count(), 0);
    await shipping.goto(`${server.url}/webhooks`);
    await shipping.getByText("This key's role may not see webhook subscriptions.").waitFor();
    assert.deepEqual(harness.violations, []);
  });
});
