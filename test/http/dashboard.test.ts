import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { startTestServer, type TestServer } from '../support/server.js';

const SCRIPT = `console.log(${JSON.stringify('dashboard '.repeat(200))})`;

/** A stand-in for vite's output: what matters here is how Berth serves it, not what it holds. */
function fakeBuild(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-dashboard-files-'));
  fs.mkdirSync(path.join(dir, 'assets'));
  fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>Berth</title><script type="module" src="/assets/index-abc123.js"></script>');
  fs.writeFileSync(path.join(dir, 'assets', 'index-abc123.js'), SCRIPT);
  // What the build's precompression writes beside each asset (src/dashboard/vite.config.ts).
  fs.writeFileSync(path.join(dir, 'assets', 'index-abc123.js.br'), brotliCompressSync(SCRIPT));
  fs.writeFileSync(path.join(dir, 'assets', 'index-abc123.js.gz'), gzipSync(SCRIPT));
  return dir;
}

describe('serving the dashboard', () => {
  let server: TestServer;
  let unbuilt: TestServer;
  let dir: string;
  before(async () => {
    dir = fakeBuild();
    server = await startTestServer('sqlite', { engine: false, overrides: { dashboardDir: dir } });
    unbuilt = await startTestServer('sqlite', { engine: false, overrides: { dashboardDir: path.join(dir, 'absent') } });
  });
  after(async () => {
    await server?.close();
    await unbuilt?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('/ and every client-side route answer the HTML, with a policy allowing only its own files', async () => {
    for (const page of [
      '/',
      '/sign-in',
      '/deployments',
      '/deployments/0b5c1f0e-9d1e-4a6b-8c55-0f5a3c2f9e11/revisions/x',
      '/deployments/0b5c1f0e-9d1e-4a6b-8c55-0f5a3c2f9e11/history',
      '/listeners',
      '/integrations',
      '/api-keys',
      '/audit-log',
      '/webhooks',
      '/webhooks/0b5c1f0e-9d1e-4a6b-8c55-0f5a3c2f9e11',
      '/events',
      '/api-host/',
    ]) {
      const res = await fetch(`${server.url}${page}`);
      if (page === '/api-host/') {
        assert.equal(res.status, 404, 'the dashboard is not under the /api-host prefix');
        continue;
      }
      assert.equal(res.status, 200, page);
      assert.match(res.headers.get('content-type') ?? '', /text\/html/);
      assert.match(await res.text(), /<title>Berth<\/title>/);
      const policy = res.headers.get('content-security-policy') ?? '';
      assert.match(policy, /default-src 'self'/);
      assert.match(policy, /script-src 'self'(;|$)/, 'no inline or remote script');
      assert.match(policy, /frame-ancestors 'none'/);
      assert.equal(res.headers.get('cache-control'), 'no-cache');
    }
  });

  test('assets are served with a cache for good; a missing one is 404', async () => {
    const asset = await fetch(`${server.url}/assets/index-abc123.js`);
    assert.equal(asset.status, 200);
    assert.match(asset.headers.get('cache-control') ?? '', /immutable/);
    assert.equal(await asset.text(), SCRIPT);
    assert.equal((await fetch(`${server.url}/assets/absent.js`)).status, 404);
    assert.equal((await fetch(`${server.url}/assets/..%2findex.html`)).status, 404);
  });

  test('assets go compressed to a browser that takes brotli or gzip, as they are to one that takes neither', async () => {
    for (const [accepted, sent] of [
      ['br, gzip', 'br'],
      ['gzip', 'gzip'],
      ['identity', null],
    ] as const) {
      // fetch decodes what it is sent, so the text read is the script whichever encoding came.
      const res = await fetch(`${server.url}/assets/index-abc123.js`, { headers: { 'accept-encoding': accepted } });
      assert.equal(res.status, 200, accepted);
      assert.equal(res.headers.get('content-encoding'), sent, accepted);
      assert.match(res.headers.get('vary') ?? '', /accept-encoding/i, accepted);
      assert.equal(await res.text(), SCRIPT, accepted);
    }
  });

  test('the API, its reference and unknown API paths answer as before', async () => {
    const unknown = await fetch(`${server.url}/v9/nowhere`, { headers: { accept: 'text/html' } });
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { code: string }).code, 'route_not_found');
    const anonymous = await fetch(`${server.url}/v2/deployments`, { headers: { accept: 'text/html' } });
    assert.equal(anonymous.status, 401);
    assert.equal(((await anonymous.json()) as { code: string }).code, 'api_key_missing');
    const document = await fetch(`${server.url}/openapi.json`);
    assert.equal(document.status, 200);
    const paths = Object.keys(((await document.json()) as { paths: object }).paths);
    assert.ok(paths.includes('/v1/sessions'));
    assert.ok(!paths.includes('/') && !paths.some((p) => p.startsWith('/deployments') || p.startsWith('/assets')), 'the pages are not API operations');
    assert.equal((await fetch(`${server.url}/docs/`)).status, 200);
    assert.equal((await fetch(`${server.url}/ok`)).status, 200);
  });

  test('without a build, the pages say how to build it and the API is unaffected', async () => {
    const res = await fetch(`${unbuilt.url}/`);
    assert.equal(res.status, 404);
    assert.match(((await res.json()) as { detail: string }).detail, /npm run build/);
    assert.equal((await fetch(`${unbuilt.url}/ok`)).status, 200);
  });
});
