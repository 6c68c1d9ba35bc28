/**
 * The dashboard scenario (issue 22, "Speed"): Debian's chromium driven by playwright-core against
 * a Berth serving dist/dashboard (as `npm run build` made it) over 10,000 seeded deployments.
 * Prints one JSON line with:
 * - list: navigation start until the deployments list shows its rows, read off the page's own
 *   clock (a MutationObserver installed before any of the page's scripts), over several loads;
 * - status: a revision status committed through lifecycle/ (as the engine commits it) until the
 *   open deployment page's timeline shows it, both ends on the wall clock of this one machine;
 * - assets: the scripts and styles the first load fetched, uncompressed and compressed with
 *   gzip and brotli at their highest levels (Berth sends the build's brotli or gzip file to a
 *   browser that accepts it).
 *
 * The server runs in this process, engine off, so that nothing but this script moves the
 * revisions and the status is committed on the server's own bus.
 *
 *   node --import tsx bench/dashboard.ts [deployments] [loads] [revisions]
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { RevisionStatus } from '../src/domain/revision-status.js';
import { moveRevision } from '../src/lifecycle/revisions.js';
import { Encryptor, loadEncryptionKey } from '../src/security/encryption.js';
import { findRevisionById } from '../src/store/repositories/revisions.js';
import { CHROMIUM } from '../test/dashboard/harness.js';
import { client } from '../test/support/http.js';
import { startTestServer, type TestServer } from '../test/support/server.js';
import { seed } from './seed.js';
import { percentile } from './stats.js';

const DASHBOARD_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../dist/dashboard');
/** A revision's way from creation to DEPLOYED with the engine's statuses, each a change the timeline must show. */
const WAY: RevisionStatus[] = ['QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'];
const WAIT_MS = 30_000;

export interface DashboardResult {
  deployments: number;
  /** Navigation start until the list's rows are in the page, ms, one per load. */
  listMs: number[];
  /** Status committed until the timeline shows it, ms, one per change. */
  statusMs: number[];
  assets: { file: string; bytes: number; gzip: number; brotli: number }[];
  load: { before: number[]; after: number[] };
  cores: number;
}

/**
 * Page scripts as text: tsx names functions with a helper (`__name`) the page does not have.
 * `appeared(selector, attributes)` resolves with the wall-clock time at which `selector` first matched.
 */
const APPEARED = `window.__appeared = (selector, timeoutMs) => new Promise((resolve, reject) => {
  const now = () => performance.timeOrigin + performance.now();
  if (document.querySelector(selector)) return resolve(now());
  const timer = setTimeout(() => { observer.disconnect(); reject(new Error(selector + ' never appeared')); }, timeoutMs);
  const observer = new MutationObserver(() => {
    if (!document.querySelector(selector)) return;
    observer.disconnect();
    clearTimeout(timer);
    resolve(now());
  });
  observer.observe(document, { childList: true, subtree: true, attributes: true, attributeFilter: ['data-status'] });
});`;
/** Installed before any of the page's scripts: when the list's first row appears, on the page's clock (since navigation start). */
const LIST_ROWS = `${APPEARED}
window.__listRows = window.__appeared('table.deployments tbody tr', ${WAIT_MS}).then((at) => at - performance.timeOrigin);`;

async function signIn(browser: Browser, server: TestServer): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(WAIT_MS);
  await page.goto(`${server.url}/`);
  await page.getByLabel('API key').fill(server.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('who').waitFor();
  return page;
}

/** Loads of /deployments in a signed-in context, each a fresh navigation with the assets in the HTTP cache after the first. */
async function listLoads(page: Page, server: TestServer, loads: number): Promise<{ ms: number[]; assets: Map<string, Buffer> }> {
  const assets = new Map<string, Buffer>();
  const keep = async (response: import('playwright-core').Response) => {
    const url = new URL(response.url());
    if (url.pathname.startsWith('/assets/') && /\.(js|css)$/.test(url.pathname) && !assets.has(url.pathname)) assets.set(url.pathname, await response.body());
  };
  page.on('response', (response) => void keep(response).catch(() => {}));
  await page.addInitScript(LIST_ROWS);
  const ms: number[] = [];
  for (let i = 0; i < loads; i++) {
    await page.goto(`${server.url}/deployments`);
    await page.locator('table.deployments tbody tr').first().waitFor();
    ms.push(await page.evaluate('window.__listRows'));
  }
  return { ms, assets };
}

/** Wall-clock ms (sub-millisecond) at which `status` appeared in the page's timeline. */
function shownAt(page: Page, status: RevisionStatus): Promise<number> {
  return page.evaluate(`window.__appeared('[data-testid=timeline] li[data-status="${status}"]', ${WAIT_MS})`);
}

async function statusChanges(page: Page, server: TestServer, revisions: number): Promise<number[]> {
  const api = client(server.url, { key: server.adminKey });
  const { db, bus } = server.berth;
  const ms: number[] = [];
  for (let i = 0; i < revisions; i++) {
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: `bench-timeline-${i}`,
        source: 'external_docker',
        source_config: null,
        source_revision_config: { image_uri: 'example.com/agent:v1' },
        secrets: [],
      },
    });
    if (created.status !== 201) throw new Error(`create answered ${created.status}: ${created.text}`);
    // Measured once the page follows the deployment's event stream (its answer's headers came), as a person watching it would be.
    const following = page.waitForResponse((response) => response.url().includes(`/deployments/${created.body.id}/events`));
    await page.goto(`${server.url}/deployments/${created.body.id}`);
    await following;
    for (const status of WAY) {
      const revision = await findRevisionById(db, created.body.latest_revision_id);
      if (!revision) throw new Error('the revision is gone');
      const shown = shownAt(page, status);
      shown.catch(() => {}); // awaited below; a failure must not go unhandled meanwhile
      // Let the observer be in place before the commit, so the measure starts at the commit.
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(resolve)));
      // From before the write: the figure includes the commit itself, never less than commit-to-screen.
      const committingAt = performance.timeOrigin + performance.now();
      const moved = await moveRevision({ db, bus }, revision, status, { message: null, fence: { kind: 'api' } });
      if (moved.outcome !== 'ok') throw new Error(`move to ${status}: ${moved.outcome}`);
      ms.push((await shown) - committingAt);
    }
  }
  return ms;
}

async function main(): Promise<void> {
  const [deployments = 10_000, loads = 10, revisions = 5] = process.argv.slice(2).map(Number);
  const os = await import('node:os');
  const before = os.loadavg();
  const server = await startTestServer('sqlite', { engine: false, overrides: { dashboardDir: DASHBOARD_DIR } });
  let browser: Browser | undefined;
  try {
    const { key } = loadEncryptionKey(undefined, server.dataDir);
    await seed(server.berth.db, new Encryptor(key), server.workspaceId, deployments, 10);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    const page = await signIn(browser, server);
    const list = await listLoads(page, server, loads);
    const statusMs = await statusChanges(page, server, revisions);
    const assets = [...list.assets].map(([file, body]) => ({
      file,
      bytes: body.length,
      gzip: gzipSync(body, { level: 9 }).length,
      brotli: brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
    }));
    const result: DashboardResult = {
      deployments,
      listMs: list.ms,
      statusMs,
      assets,
      load: { before, after: os.loadavg() },
      cores: os.cpus().length,
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
    process.stderr.write(`list p50 ${percentile(list.ms, 50).toFixed(0)} ms, status p50 ${percentile(statusMs, 50).toFixed(0)} ms\n`);
  } finally {
    await browser?.close();
    await server.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error) => {
    process.stderr.write(`dashboard bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}
