import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { LocalContainerRuntime, type ResolvedRuntime } from '../../src/containers/runtime/index.js';
import { containersEnv, ROOT } from '../build/helpers.js';
import { deadline } from '../support/deadline.js';
import { client } from '../support/http.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import { eventually } from '../support/runtimes.js';
import { browserAbsent, type DashboardHarness, startDashboard } from './harness.js';

const run = promisify(execFile);
const IMAGE = 'localhost/berth-test-agent:v1';
/** Serves only after 4 s: its revision stays DEPLOYING long enough to be seen so, however fast the machine. */
const SLOW_IMAGE = 'localhost/berth-test-agent:slow';

const onPath = (binary: string) =>
  run('sh', ['-c', `command -v ${binary}`]).then(
    () => true,
    () => false,
  );

// The runtime `npm start` gives Berth with BERTH_CONTAINER_RUNTIME=podman (src/server.ts).
const podman = new LocalContainerRuntime({ runtime: 'podman', env: containersEnv(), healthTimeoutMs: null });
const unusable = await podman.unavailableReason();
// A broken podman is a setup bug CI must see (the suite fails); only a machine without one skips.
const skip = browserAbsent ?? (unusable && !(await onPath('podman')) ? unusable : null);
if (skip) process.stdout.write(`# SKIP the dashboard watching a deployment go live on podman: ${skip}\n`);

/** What a timeline showed at one moment: the revision heading and its steps' statuses. */
interface Seen {
  heading: string;
  steps: string[];
}

declare global {
  interface Window {
    /** Set once the page is open; a reload would lose it. */
    berthSameDocument?: boolean;
    berthSeen?: Seen[];
  }
}

/**
 * Notes every state the timeline passes through from now on, in this very document. A string,
 * not a function: tsx names functions with a helper the page does not have.
 */
const RECORD_TIMELINE = `(() => {
  const seen = [];
  const snapshot = () => {
    const heading = document.querySelector('h2:has(.connection)')?.textContent ?? '';
    const steps = [...document.querySelectorAll('[data-testid=timeline] li')].map((item) => item.getAttribute('data-status') ?? '');
    const last = seen.at(-1);
    if (!last || last.heading !== heading || last.steps.join() !== steps.join()) seen.push({ heading, steps });
  };
  window.berthSameDocument = true;
  window.berthSeen = seen;
  snapshot();
  new MutationObserver(snapshot).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
})()`;

const answersOk = async (url: string) => {
  const response = await fetch(`${url}/ok`, { signal: AbortSignal.timeout(deadline(5_000)) }).catch(() => null);
  return response?.status === 200 && (await response.text()) === '{"ok":true}';
};

describe('the dashboard watching a deployment go live on podman', { skip: skip ?? undefined }, () => {
  holdMachineTurnForSuite({ before, after });
  let harness: DashboardHarness;
  let runtime: ResolvedRuntime;
  const deployments: string[] = [];
  const podmanCli = async (...args: string[]) => (await run(runtime.binary, args, { env: runtime.env })).stdout;
  const containersOf = async (deploymentId: string, ...filters: string[]) =>
    (await podmanCli('ps', '-a', '--filter', `label=berth.deployment=${deploymentId}`, ...filters, '--format', '{{.Names}}')).split('\n').filter(Boolean);

  before(
    async () => {
      if (unusable) throw new Error(`podman is installed but not usable: ${unusable}`);
      const resolved = await podman.resolvedRuntime();
      assert.ok(resolved);
      runtime = resolved;
      for (const [image, flags] of [
        [IMAGE, []],
        [SLOW_IMAGE, ['--slow']],
      ] as const) {
        await run(path.join(ROOT, 'scripts/build-test-image.sh'), [image, ...flags], { env: runtime.env });
      }
      harness = await startDashboard({ overrides: { runtime: podman } });
    },
    { timeout: deadline(5 * 60_000) },
  );

  after(async () => {
    // Berth first: a deploy it had in flight could otherwise start a container after the sweep below.
    await harness?.close();
    for (const id of deployments) {
      const names = await containersOf(id).catch(() => []);
      if (names.length > 0) await podmanCli('rm', '-f', '-t', '0', ...names).catch(() => undefined);
    }
  });

  test(
    'a deployment created through the API reaches DEPLOYED in a container; the open page follows its next revision live to DEPLOYED',
    { timeout: deadline(3 * 60_000) },
    async () => {
      const { server } = harness;
      const api = client(server.url, { key: server.adminKey });
      const page = await harness.signedIn(server.adminKey);
      const created = await api('POST', '/v2/deployments', {
        body: { name: 'podman-agent', source: 'external_docker', source_config: null, source_revision_config: { image_uri: IMAGE }, secrets: [] },
      });
      assert.equal(created.status, 201, created.text);
      const id = created.body.id as string;
      deployments.push(id);
      await page.goto(`${server.url}/deployments/${id}`);
      await page.locator('[data-testid=timeline] li[data-status=DEPLOYED]').waitFor({ timeout: deadline(90_000) });
      const first = (await api('GET', `/v2/deployments/${id}`)).body;
      assert.equal(first.active_revision_id, created.body.latest_revision_id);
      await page.getByRole('link', { name: first.url }).waitFor();
      assert.ok(await answersOk(first.url), `${first.url}/ok answers 200`);
      assert.equal((await containersOf(id, '--filter', 'status=running')).length, 1, 'one running container serves it');

      // The page is open, and stays the same document, before the next revision even exists.
      await page.evaluate(RECORD_TIMELINE);
      const next = await api('POST', `/v2/deployments/${id}/revisions`, { body: { source_revision_config: { image_uri: SLOW_IMAGE } } });
      assert.equal(next.status, 201, next.text);
      await page.getByRole('heading', { name: /Revision #2/ }).waitFor();
      await page.locator('[data-testid=timeline] li[data-status=DEPLOYED]').waitFor({ timeout: deadline(90_000) });
      assert.equal(await page.evaluate(() => window.berthSameDocument), true, 'no reload: the stream brought every step');

      const seen = (await page.evaluate(() => window.berthSeen ?? [])).filter((state) => state.heading.includes('Revision #2'));
      const final = seen.at(-1)!.steps;
      assert.equal(final.at(-1), 'DEPLOYED', JSON.stringify(seen));
      assert.ok(final.includes('DEPLOYING'), final.join(', '));
      assert.equal(new Set(final).size, final.length, `no step twice: ${final.join(', ')}`);
      // Each step appeared after the ones before it, and none was ever taken back or reordered.
      for (const state of seen) assert.deepEqual(state.steps, final.slice(0, state.steps.length), JSON.stringify(seen));
      // Live: the page showed the revision DEPLOYING, and only later DEPLOYED.
      assert.ok(
        seen.some((state) => state.steps.at(-1) === 'DEPLOYING'),
        `DEPLOYING was on the page before DEPLOYED: ${JSON.stringify(seen)}`,
      );

      // The URL now served is the new revision's container, which answers; the first one was retired.
      const second = (await api('GET', `/v2/deployments/${id}`)).body;
      assert.equal(second.active_revision_id, next.body.id);
      await page.getByRole('link', { name: second.url }).waitFor();
      assert.ok(await answersOk(second.url), `${second.url}/ok answers 200`);
      const serving = await eventually(async () => {
        const names = await containersOf(id);
        return names.length === 1 ? names : undefined;
      }, 'the first revision’s container to be retired');
      assert.match(serving[0]!, new RegExp(`-${next.body.id.slice(0, 8)}$`));
    },
  );
});
