import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { registerDatabaseMetrics } from '../../src/observability/database-metrics.js';
import { processMetrics, setListenerSightingsReader } from '../../src/observability/metrics.js';
import { client } from '../support/http.js';
import { freePort, spawnBerth, stopBerth } from '../support/process.js';
import { eventually } from '../support/runtimes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { spawn } from 'node:child_process';
import { nodeArguments } from '../support/entry.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Samples of a Prometheus text exposition (the subset prom-client writes: no timestamps, no escapes in our labels). */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(match, `not a sample line: ${line}`);
    const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

async function scrape(url: string, headers: Record<string, string> = {}): Promise<Sample[]> {
  const response = await fetch(`${url}/metrics`, { headers });
  assert.equal(response.status, 200, await response.clone().text());
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseExposition(await response.text());
}

describe('GET /metrics on the server', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite');
  });
  after(() => server.close());

  test('counts requests by route pattern and status, never by raw URL', async () => {
    const api = client(server.url, { key: server.adminKey });
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: `metrics-${randomBytes(3).toString('hex')}`,
        source: 'external_docker',
        source_config: {},
        source_revision_config: { image_uri: 'localhost/agent:v1' },
        secrets: [],
      },
    });
    assert.equal(created.status, 201, created.text);
    for (let i = 0; i < 3; i += 1) assert.equal((await api('GET', `/v2/deployments/${created.body.id}`)).status, 200);
    assert.equal((await api('GET', `/v2/deployments/${created.body.id}/nothing-here`)).status, 404);

    const text = await (await fetch(`${server.url}/metrics`)).text();
    assert.ok(!text.includes(created.body.id), 'a deployment id appears in the metrics');
    const samples = parseExposition(text);
    const gets = { method: 'GET', route: '/v2/deployments/:deployment_id', status_code: '200' };
    assert.equal(value(samples, 'berth_http_request_duration_seconds_count', gets), 3);
    assert.ok((value(samples, 'berth_http_request_duration_seconds_sum', gets) ?? 0) > 0);
    assert.equal(value(samples, 'berth_http_request_duration_seconds_count', { method: 'POST', route: '/v2/deployments', status_code: '201' }), 1);
    assert.equal(value(samples, 'berth_http_request_duration_seconds_count', { route: 'unmatched', status_code: '404' }), 1);
    // Node's own figures come along.
    assert.ok((value(samples, 'process_resident_memory_bytes') ?? 0) > 0);
  });

  test('reports revisions by status, the queue depth and the deploy step the engine ran', async () => {
    const api = client(server.url, { key: server.adminKey });
    const before = await scrape(server.url);
    const deploysBefore = value(before, 'berth_engine_step_duration_seconds_count', { step: 'deploy', outcome: 'succeeded' }) ?? 0;
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: `metrics-${randomBytes(3).toString('hex')}`,
        source: 'external_docker',
        source_config: {},
        source_revision_config: { image_uri: 'localhost/agent:v1' },
        secrets: [],
      },
    });
    assert.equal(created.status, 201, created.text);
    await eventually(async () => {
      const revision = await api('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}`);
      return revision.body.status === 'DEPLOYED';
    }, 'the revision to be DEPLOYED');

    // The database figures are cached for a few seconds: wait for a scrape that has both revisions.
    const samples = await eventually(async () => {
      const current = await scrape(server.url);
      return value(current, 'berth_revisions', { status: 'DEPLOYED' }) === 2 ? current : undefined;
    }, 'both revisions to be reported DEPLOYED');
    assert.equal(value(samples, 'berth_revisions', { status: 'QUEUED' }), 0);
    assert.equal(value(samples, 'berth_engine_queue_depth'), 0);
    assert.equal(value(samples, 'berth_engine_step_duration_seconds_count', { step: 'deploy', outcome: 'succeeded' }), deploysBefore + 1);
    assert.equal(value(samples, 'berth_engine_slots'), 4);
  });

  test("reports the event loop's delay and garbage-collection pauses, so a stall can be attributed", async () => {
    // Allocate until a young-generation collection has been seen.
    const kept: unknown[] = [];
    const collected = await eventually(async () => {
      for (let i = 0; i < 50_000; i += 1) kept.push({ i, padding: `x${i}` });
      kept.length = 0;
      const current = await scrape(server.url);
      return (value(current, 'berth_gc_pause_seconds_count', { kind: 'minor' }) ?? 0) > 0 ? current : undefined;
    }, 'a minor collection to be reported');
    for (const name of ['nodejs_eventloop_lag_p50_seconds', 'nodejs_eventloop_lag_p99_seconds', 'nodejs_eventloop_lag_max_seconds']) {
      const seconds = value(collected, name);
      assert.ok(seconds !== undefined && Number.isFinite(seconds) && seconds >= 0, `${name}: ${seconds}`);
    }
    assert.ok((value(collected, 'berth_gc_pause_seconds_sum', { kind: 'minor' }) ?? 0) > 0);
    assert.ok((value(collected, 'berth_gc_pause_seconds_bucket', { kind: 'minor', le: '+Inf' }) ?? 0) > 0);
    assert.ok(value(collected, 'berth_gc_pause_max_seconds') !== undefined);
  });

  test('a synchronous stall of the event loop shows at its length in the delay maximum and the stall counter', async () => {
    const stallsOver = (samples: Sample[]) => value(samples, 'berth_event_loop_stalls_total', { over: '50ms' }) ?? 0;
    const before = stallsOver(await scrape(server.url));
    // The server runs in this process: hold its event loop the way a synchronous step on a request would,
    // then scrape at once (the scrape's request waits behind the stall, where prom-client's max loses it).
    const stallMs = 100;
    const started = performance.now();
    while (performance.now() - started < stallMs) {
      // busy: nothing else runs on the loop meanwhile
    }
    const after = await scrape(server.url);
    const maxSeconds = value(after, 'berth_event_loop_delay_max_seconds') ?? 0;
    assert.ok(maxSeconds >= stallMs / 1000, `berth_event_loop_delay_max_seconds ${maxSeconds} after a ${stallMs} ms stall`);
    assert.ok(stallsOver(after) >= before + 1, `berth_event_loop_stalls_total{over="50ms"} ${before} → ${stallsOver(after)}`);
    for (const quantile of ['0.5', '0.9', '0.99']) {
      const seconds = value(after, 'berth_event_loop_delay_seconds', { quantile });
      assert.ok(seconds !== undefined && Number.isFinite(seconds) && seconds >= 0, `quantile ${quantile}: ${seconds}`);
    }
  });

  test('reports listener ages once a reader is given, each listener apart only to scrapes with the token', async () => {
    assert.equal(value(await scrape(server.url), 'berth_listener_last_seen_max_age_seconds'), undefined);
    const lastSeenAt = new Date(Date.now() - 90_000);
    setListenerSightingsReader(async () => [
      { listenerId: 'listener-a', lastSeenAt },
      { listenerId: 'listener-b', lastSeenAt: new Date() },
    ]);
    try {
      const samples = await scrape(server.url);
      const age = value(samples, 'berth_listener_last_seen_max_age_seconds') ?? 0;
      assert.ok(age >= 90 && age < 3600, `age ${age}`);
      assert.equal(value(samples, 'berth_listeners'), 2);
      assert.equal(value(samples, 'berth_listener_last_seen_age_seconds', { listener_id: 'listener-a' }), undefined, 'no token set: no listener ids');
      // A reader that fails (the database is away) leaves the gauges empty; the scrape still answers.
      setListenerSightingsReader(async () => Promise.reject(new Error('database unreachable')));
      const failed = await scrape(server.url);
      assert.equal(value(failed, 'berth_listeners'), undefined);
      assert.equal(value(failed, 'berth_listener_last_seen_max_age_seconds'), undefined);
      assert.notEqual(value(failed, 'berth_engine_slots'), undefined);
    } finally {
      setListenerSightingsReader(undefined);
    }
  });
});

/**
 * Issue 20: anonymous GET /metrics listed listener ids. Without BERTH_METRICS_TOKEN the
 * endpoint is open to whoever reaches it, so it names no tenant (listener, workspace,
 * organization or deployment ids, nor names); with the token, scrapes that present it
 * see each listener apart.
 */
describe('tenant identifiers in /metrics', () => {
  /** A member of a new workspace with a listener that has reported, and a deployment placed on it. */
  async function tenantWithListener(server: TestServer) {
    const admin = client(server.url, { key: server.adminKey });
    const workspace = await admin('POST', '/v1/workspaces', { body: { name: `tenant-${randomBytes(4).toString('hex')}` } });
    const key = await admin('POST', '/v1/api-keys', { body: { name: 'member', workspace_id: workspace.body.id } });
    const member = client(server.url, { key: key.body.key });
    const listener = await member('POST', '/v2/listeners', {
      body: { compute_type: 'podman', compute_id: `host-${randomBytes(4).toString('hex')}`, compute_config: {} },
    });
    assert.equal(listener.status, 201, listener.text);
    const agent = client(server.url, { key: listener.body.listener_key });
    const beat = await agent('POST', '/v1/listener-protocol/heartbeat', { body: { version: '1' }, headers: { 'x-berth-listener-protocol': '1' } });
    assert.equal(beat.status, 200, beat.text);
    const name = `secret-project-${randomBytes(4).toString('hex')}`;
    const deployment = await member('POST', '/v2/deployments', {
      body: {
        name,
        source: 'external_docker',
        source_config: { listener_id: listener.body.id },
        source_revision_config: { image_uri: 'localhost/agent:v1' },
        secrets: [],
      },
    });
    assert.equal(deployment.status, 201, deployment.text);
    return {
      identifiers: [workspace.body.id, listener.body.id, deployment.body.id, name, server.workspaceId, server.organizationId] as string[],
      listenerId: listener.body.id as string,
    };
  }

  test('without the token, an anonymous scrape names no tenant', async () => {
    const server = await startTestServer('sqlite');
    try {
      const { identifiers } = await tenantWithListener(server);
      const text = await (await fetch(`${server.url}/metrics`)).text();
      for (const identifier of identifiers) assert.ok(!text.includes(identifier), `'${identifier}' is not in the anonymous scrape`);
      const samples = parseExposition(text);
      assert.equal(value(samples, 'berth_listeners'), 1, 'listeners are counted');
      assert.notEqual(value(samples, 'berth_listener_last_seen_max_age_seconds'), undefined);
      assert.ok(!samples.some((sample) => 'listener_id' in sample.labels));
    } finally {
      await server.close();
    }
  });

  test('with the token, scrapes that present it see each listener apart; others are refused', async () => {
    const token = randomBytes(24).toString('hex');
    const server = await startTestServer('sqlite', { metricsToken: token });
    try {
      const { listenerId } = await tenantWithListener(server);
      assert.equal((await fetch(`${server.url}/metrics`)).status, 401);
      const samples = await scrape(server.url, { authorization: `Bearer ${token}` });
      const age = value(samples, 'berth_listener_last_seen_age_seconds', { listener_id: listenerId });
      assert.ok(age !== undefined && age < 3600, `age ${age}`);
      assert.equal(value(samples, 'berth_listeners'), 1);
    } finally {
      await server.close();
    }
  });
});

test('a database that does not answer leaves its figures out and the scrape still works', async () => {
  const registry = new Registry();
  registerDatabaseMetrics(registry, async () => {
    throw new Error('connection refused');
  });
  const samples = parseExposition(`${await processMetrics().metrics()}\n${await registry.metrics()}`);
  // One failed read, shared by every figure of the scrape.
  assert.equal(value(samples, 'berth_metrics_database_read_failures_total'), 1);
  assert.equal(value(samples, 'berth_revisions'), undefined);
  assert.equal(value(samples, 'berth_engine_queue_depth'), undefined);
  assert.ok((value(samples, 'process_resident_memory_bytes') ?? 0) > 0);
});

test('BERTH_METRICS_TOKEN protects /metrics with a bearer token; /ok and the API are unchanged', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-metrics-'));
  const token = randomBytes(24).toString('hex');
  const key = `berth_metrics_test_${randomBytes(16).toString('hex')}`;
  const berth = await spawnBerth({ BERTH_DATA_DIR: dataDir, BERTH_METRICS_TOKEN: token, BERTH_BOOTSTRAP_API_KEY: key, BERTH_CONTAINER_RUNTIME: 'none' });
  try {
    const anonymous = await fetch(`${berth.url}/metrics`);
    assert.equal(anonymous.status, 401);
    assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Bearer/);
    assert.match((await anonymous.json()).detail, /BERTH_METRICS_TOKEN/);
    assert.equal((await fetch(`${berth.url}/metrics`, { headers: { authorization: `Bearer ${token}x` } })).status, 401);
    // An API key is not the metrics token.
    assert.equal((await fetch(`${berth.url}/metrics`, { headers: { authorization: `Bearer ${key}` } })).status, 401);
    const samples = await scrape(berth.url, { authorization: `Bearer ${token}` });
    assert.equal(value(samples, 'berth_engine_queue_depth'), 0);
    assert.equal((await fetch(`${berth.url}/ok`)).status, 200);
    assert.equal((await fetch(`${berth.url}/v2/deployments`, { headers: { 'x-api-key': key } })).status, 200);
  } finally {
    await stopBerth(berth);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

test('berth engine serves its metrics and /ok on BERTH_ENGINE_METRICS_PORT', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-engine-metrics-'));
  const port = await freePort();
  const root = path.resolve(import.meta.dirname, '../..');
  const child = spawn(process.execPath, [...nodeArguments('src/main.ts'), 'engine'], {
    cwd: root,
    env: { ...process.env, BERTH_DATA_DIR: dataDir, BERTH_ENGINE_METRICS_PORT: String(port), HOST: '127.0.0.1', BERTH_CONTAINER_RUNTIME: 'none' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const url = `http://127.0.0.1:${port}`;
  try {
    await eventually(
      () =>
        fetch(`${url}/ok`).then(
          (r) => r.status === 200,
          () => false,
        ),
      `berth engine to answer /ok:\n${output.join('')}`,
      30_000,
    );
    const samples = await scrape(url);
    assert.equal(value(samples, 'berth_engine_slots'), 4);
    assert.equal(value(samples, 'berth_engine_busy_slots'), 0);
    assert.equal(value(samples, 'berth_revisions', { status: 'DEPLOYED' }), 0);
    assert.equal((await fetch(`${url}/v2/deployments`)).status, 404);
  } finally {
    child.kill('SIGTERM');
    assert.equal(await exited, 0, output.join(''));
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
