import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { RevisionStatus } from '../../src/domain/revision-status.js';
import { announce, recordLog, recordStatus } from '../../src/events/recorder.js';
import { insertEvent } from '../../src/store/repositories/events.js';
import { revisionRow } from '../support/rows.js';
import { describeOnEachDatabase, type SuiteContext } from '../support/suite.js';
import { deadline } from '../support/deadline.js';
import { eventually } from '../support/runtimes.js';

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const LEVELS = ['DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'];

/*
 * An engine may run inside the test server and write events for the deployments created
 * here. Lines go to revisions inserted by the test (older than any real one, in statuses
 * the engine leaves alone) and carry a unique token, so the assertions see only them.
 */

async function createDeployment(ctx: SuiteContext): Promise<{ id: string; latestRevisionId: string }> {
  const res = await ctx.api('POST', '/v2/deployments', {
    body: {
      name: `logs-${randomUUID().slice(0, 8)}`,
      source: 'external_docker',
      source_config: { resource_spec: {} },
      source_revision_config: { image_uri: 'localhost/x:v1' },
      secrets: [],
    },
  });
  assert.equal(res.status, 201, res.text);
  return { id: res.body.id, latestRevisionId: res.body.latest_revision_id };
}

let seq = 0;
async function addRevision(ctx: SuiteContext, deploymentId: string, status: RevisionStatus = 'DEPLOYED'): Promise<string> {
  const db = ctx.server.berth.db;
  // The configuration of the API-created revision, so the row reads back like a real one.
  const real = await db.selectFrom('revisions').select('source_revision_config').where('deployment_id', '=', deploymentId).executeTakeFirstOrThrow();
  const row = revisionRow(deploymentId, -++seq, { source_revision_config: real.source_revision_config, status });
  await db.insertInto('revisions').values(row).execute();
  return row.id;
}

/** A deployment plus a revision of the test's own. */
async function fixture(ctx: SuiteContext, status?: RevisionStatus) {
  const deployment = await createDeployment(ctx);
  const revisionId = await addRevision(ctx, deployment.id, status);
  return { deploymentId: deployment.id, revisionId, token: `tok${randomUUID().slice(0, 8)}` };
}

async function writeLines(
  ctx: SuiteContext,
  f: { deploymentId: string; revisionId: string },
  messages: string[],
  options: { logType?: 'build' | 'deploy'; level?: string } = {},
): Promise<number[]> {
  const ids: number[] = [];
  for (const message of messages) {
    ids.push(
      await recordLog(ctx.server.berth.db, {
        deploymentId: f.deploymentId,
        revisionId: f.revisionId,
        logType: options.logType ?? 'build',
        level: options.level ?? 'INFO',
        message,
      }),
    );
  }
  announce(ctx.server.berth.bus, f.deploymentId);
  // On PostgreSQL a page holds only settled ids (docs/architecture.md, "Event ids without gaps"):
  // while the engine has a transaction in flight, lines written after it began wait for it.
  // A test reads once its lines are settled, whatever the machine's load makes that wait.
  const last = ids.at(-1);
  const logType = options.logType ?? 'build';
  if (last !== undefined) {
    await eventually(async () => {
      const newest = await ctx.api('GET', logsPath(f, `type=${logType}&order=desc&limit=1`));
      const id = (newest.body as { logs?: { id: string }[] }).logs?.[0]?.id;
      return id !== undefined && Number(id) >= last;
    }, 'the lines written to be settled');
  }
  return ids;
}

const logsPath = (f: { deploymentId: string; revisionId: string }, query: string) =>
  `/v2/deployments/${f.deploymentId}/revisions/${f.revisionId}/logs?${query}`;

const messages = (res: { body: { logs: { message: string }[] } }) => res.body.logs.map((l) => l.message);

describeOnEachDatabase('revision logs', (ctx) => {
  test('GET logs in both orders, with string ids, epoch-ms timestamps and next_offset', async () => {
    const f = await fixture(ctx());
    const lines = ['one', 'two', 'three'].map((m) => `${f.token} ${m}`);
    await writeLines(ctx(), f, lines);

    const asc = await ctx().api('GET', logsPath(f, 'type=build'));
    assert.equal(asc.status, 200, asc.text);
    assert.deepEqual(messages(asc), lines);
    assert.equal(asc.body.next_offset, null);
    for (const line of asc.body.logs) {
      assert.equal(typeof line.id, 'string');
      assert.match(line.id, /^\d+$/);
      assert.equal(typeof line.timestamp, 'number');
      assert.ok(Math.abs(line.timestamp - Date.now()) < 60_000);
      assert.equal(line.level, 'INFO');
      assert.equal(line.revision_id, f.revisionId);
    }

    const desc = await ctx().api('GET', logsPath(f, 'type=build&order=desc&limit=2'));
    assert.deepEqual(messages(desc), [lines[2], lines[1]]);
    assert.equal(typeof desc.body.next_offset, 'string');
    const rest = await ctx().api('GET', logsPath(f, `type=build&order=desc&limit=2&offset=${desc.body.next_offset}`));
    assert.deepEqual(messages(rest), [lines[0]]);
    assert.equal(rest.body.next_offset, null);

    // Build and deploy lines are kept apart.
    assert.deepEqual(messages(await ctx().api('GET', logsPath(f, 'type=deploy'))), []);
    assert.equal((await ctx().api('GET', `/api-host${logsPath(f, 'type=build&run_id=abc')}`)).status, 200);
  });

  test('paging through next_offset visits every line once, in order, in both directions', async () => {
    const f = await fixture(ctx());
    const ids = await writeLines(
      ctx(),
      f,
      Array.from({ length: 7 }, (_, i) => `${f.token} line ${i}`),
    );
    for (const order of ['asc', 'desc'] as const) {
      const seen: string[] = [];
      let offset: string | null = null;
      let pages = 0;
      do {
        const query: string = `type=build&order=${order}&limit=3${offset === null ? '' : `&offset=${offset}`}`;
        const page = await ctx().api('GET', logsPath(f, query));
        assert.equal(page.status, 200, page.text);
        seen.push(...page.body.logs.map((l: { id: string }) => l.id));
        offset = page.body.next_offset;
        pages += 1;
      } while (offset !== null && pages < 10);
      const expected = ids.map(String);
      assert.deepEqual(seen, order === 'asc' ? expected : expected.reverse());
      assert.equal(pages, 3);
    }
  });

  test('level, query and time filters', async () => {
    const f = await fixture(ctx());
    for (const level of LEVELS) await writeLines(ctx(), f, [`${f.token} at ${level}`], { level });
    const warnings = await ctx().api('GET', logsPath(f, 'type=build&level=WARNING'));
    assert.deepEqual(
      messages(warnings),
      ['WARNING', 'ERROR', 'CRITICAL'].map((l) => `${f.token} at ${l}`),
    );
    assert.deepEqual(messages(await ctx().api('GET', logsPath(f, 'type=build&level=error'))).length, 2);
    assert.equal((await ctx().api('GET', logsPath(f, 'type=build&level=LOUD'))).status, 422);

    const query = await ctx().api('GET', logsPath(f, `type=build&query=${encodeURIComponent('AT crit')}`));
    assert.deepEqual(messages(query), [`${f.token} at CRITICAL`]);

    // Lines with known times, written directly.
    const times = ['2001-01-01T00:00:00.000Z', '2001-01-02T00:00:00.000Z', '2001-01-03T00:00:00.000Z'];
    for (const [i, created_at] of times.entries()) {
      await insertEvent(ctx().server.berth.db, {
        deployment_id: f.deploymentId,
        revision_id: f.revisionId,
        kind: 'log',
        log_type: 'deploy',
        level: 'INFO',
        status: null,
        message: `${f.token} day ${i + 1}`,
        created_at,
      });
    }
    // On PostgreSQL a page shows only settled ids (below any event a transaction in flight may
    // still commit): the engine working on this server's deployments holds lines above its
    // bound back for as long as its transaction lasts. A fence that never moves fails here.
    await eventually(
      async () => messages(await ctx().api('GET', logsPath(f, 'type=deploy'))).filter((m) => m.startsWith(`${f.token} day `)).length === times.length,
      'the lines written directly to be settled',
      10_000,
    );
    const between = await ctx().api('GET', logsPath(f, `type=deploy&start_time=2001-01-02T00:00:00Z&end_time=2001-01-03T00:00:00Z`));
    assert.deepEqual(messages(between), [`${f.token} day 2`, `${f.token} day 3`]);
    assert.equal(between.body.logs[0].timestamp, Date.parse(times[1] as string));
    const zoned = await ctx().api('GET', logsPath(f, `type=deploy&end_time=${encodeURIComponent('2001-01-02T01:00:00+01:00')}`));
    assert.deepEqual(messages(zoned), [`${f.token} day 1`, `${f.token} day 2`]);
    const badTime = await ctx().api('GET', logsPath(f, 'type=deploy&start_time=yesterday'));
    assert.equal(badTime.status, 422);
    assert.deepEqual(badTime.body.detail[0].loc, ['query', 'start_time']);
  });

  test('validation: type is required, limit is 1..1000, offset must be a cursor', async () => {
    const f = await fixture(ctx());
    const missing = await ctx().api('GET', logsPath(f, 'order=asc'));
    assert.equal(missing.status, 422);
    assert.deepEqual(missing.body.detail[0].loc, ['query', 'type']);
    assert.equal(missing.body.detail[0].type, 'missing');
    assert.equal((await ctx().api('GET', logsPath(f, 'type=runtime'))).status, 422);
    const tooMany = await ctx().api('GET', logsPath(f, 'type=build&limit=1001'));
    assert.equal(tooMany.status, 422);
    assert.deepEqual(tooMany.body.detail[0].loc, ['query', 'limit']);
    assert.equal((await ctx().api('GET', logsPath(f, 'type=build&limit=0'))).status, 422);
    assert.equal((await ctx().api('GET', logsPath(f, 'type=build&limit=1000'))).status, 200);
    for (const bad of ['abc', '-1', '1.5']) {
      const res = await ctx().api('GET', logsPath(f, `type=build&offset=${bad}`));
      assert.equal(res.status, 422, bad);
      assert.deepEqual(res.body.detail[0].loc, ['query', 'offset']);
    }
    assert.equal((await ctx().api('GET', `/v2/deployments/${f.deploymentId}/revisions/nope/logs?type=build`)).status, 422);
  });

  test('unknown deployment or revision is 404', async () => {
    const f = await fixture(ctx());
    const noDeployment = await ctx().api('GET', logsPath({ ...f, deploymentId: UNKNOWN_ID }, 'type=build'));
    assert.equal(noDeployment.status, 404);
    assert.equal(noDeployment.body.detail, `Deployment ID ${UNKNOWN_ID} not found.`);
    const noRevision = await ctx().api('GET', logsPath({ ...f, revisionId: UNKNOWN_ID }, 'type=build'));
    assert.equal(noRevision.status, 404);
    assert.equal(typeof noRevision.body.detail, 'string');
    // A revision of another deployment is not found under this one.
    const other = await fixture(ctx());
    assert.equal((await ctx().api('GET', logsPath({ ...f, revisionId: other.revisionId }, 'type=build'))).status, 404);
    assert.equal((await ctx().api('POST', `/v1/projects/${UNKNOWN_ID}/deploy_logs`)).status, 404);
  });

  test('the POST forms: build_logs, deploy_logs of a revision and of all revisions', async () => {
    const f = await fixture(ctx());
    const second = { ...f, revisionId: await addRevision(ctx(), f.deploymentId) };
    const build = Array.from({ length: 60 }, (_, i) => `${f.token} build ${i}`);
    const buildIds = await writeLines(ctx(), f, build);
    await writeLines(ctx(), f, [`${f.token} deploy a`], { logType: 'deploy' });
    await writeLines(ctx(), second, [`${f.token} deploy b`], { logType: 'deploy', level: 'ERROR' });
    const base = `/v1/projects/${f.deploymentId}`;

    // CLI --verbose: ascending pages of 50, then the same with the cursor.
    const first = await ctx().api('POST', `${base}/revisions/${f.revisionId}/build_logs`, { body: { order: 'asc', limit: 50 } });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(messages(first), build.slice(0, 50));
    assert.equal(first.body.next_offset, String(buildIds[49]));
    const next = await ctx().api('POST', `${base}/revisions/${f.revisionId}/build_logs`, {
      body: { order: 'asc', limit: 50, offset: first.body.next_offset },
    });
    assert.deepEqual(messages(next), build.slice(50));
    assert.equal(next.body.next_offset, null);

    // CLI after BUILD_FAILED: the last 30 lines, newest first.
    const tail = await ctx().api('POST', `${base}/revisions/${f.revisionId}/build_logs`, { body: { order: 'desc', limit: 30 } });
    assert.deepEqual(messages(tail), build.slice(30).reverse());
    assert.equal(typeof tail.body.logs[0].id, 'string');
    assert.equal(typeof tail.body.logs[0].timestamp, 'number');

    // No body at all: limit 50, newest first.
    const noBody = await ctx().api('POST', `${base}/revisions/${f.revisionId}/build_logs`);
    assert.equal(noBody.status, 200, noBody.text);
    assert.deepEqual(messages(noBody), build.slice(10).reverse());
    const emptyJson = await ctx().api('POST', `${base}/revisions/${f.revisionId}/build_logs`, { rawBody: '' });
    assert.equal(emptyJson.status, 200);

    const perRevision = await ctx().api('POST', `${base}/revisions/${f.revisionId}/deploy_logs`, { body: { limit: 100, order: 'desc' } });
    assert.deepEqual(
      messages(perRevision).filter((m) => m.startsWith(f.token)),
      [`${f.token} deploy a`],
    );

    // All revisions; other lines (an engine's) are filtered out with the query.
    const all = await ctx().api('POST', `${base}/deploy_logs`, { body: { limit: 100, order: 'desc', query: f.token } });
    assert.deepEqual(messages(all), [`${f.token} deploy b`, `${f.token} deploy a`]);
    assert.deepEqual(
      all.body.logs.map((l: { revision_id: string }) => l.revision_id),
      [second.revisionId, f.revisionId],
    );
    const errors = await ctx().api('POST', `${base}/deploy_logs`, { body: { level: 'ERROR', query: f.token } });
    assert.deepEqual(messages(errors), [`${f.token} deploy b`]);
    const later = await ctx().api('POST', `${base}/deploy_logs`, { body: { query: f.token, start_time: '2999-01-01T00:00:00' } });
    assert.deepEqual(messages(later), []);
  });

  test('POST bodies are validated, with body locations', async () => {
    const f = await fixture(ctx());
    const path = `/v1/projects/${f.deploymentId}/revisions/${f.revisionId}/build_logs`;
    const tooMany = await ctx().api('POST', path, { body: { limit: 1001 } });
    assert.equal(tooMany.status, 422);
    assert.deepEqual(tooMany.body.detail[0].loc, ['body', 'limit']);
    const badCursor = await ctx().api('POST', path, { body: { offset: 'not-a-cursor' } });
    assert.equal(badCursor.status, 422);
    assert.deepEqual(badCursor.body.detail[0].loc, ['body', 'offset']);
    assert.equal((await ctx().api('POST', path, { body: { order: 'sideways' } })).status, 422);
    assert.equal((await ctx().api('POST', path, { body: { level: 'LOUD' } })).status, 422);
    const ok = await ctx().api('POST', path, { body: { offset: null, level: null, query: null, extra: true } });
    assert.equal(ok.status, 200, ok.text);
  });

  test('timeline lists status changes of the revision, oldest first', async () => {
    const f = await fixture(ctx());
    const db = ctx().server.berth.db;
    const at = (s: number) => new Date(Date.UTC(2020, 0, 1, 0, 0, s)).toISOString();
    await recordStatus(db, { deploymentId: f.deploymentId, revisionId: f.revisionId, status: 'QUEUED', message: null, at: at(1) });
    await writeLines(ctx(), f, [`${f.token} not a status`]);
    await recordStatus(db, { deploymentId: f.deploymentId, revisionId: f.revisionId, status: 'DEPLOYED', message: f.token, at: at(2) });
    const res = await ctx().api('GET', `/v2/deployments/${f.deploymentId}/revisions/${f.revisionId}/timeline`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {
      resources: [
        { status: 'QUEUED', message: null, at: at(1) },
        { status: 'DEPLOYED', message: f.token, at: at(2) },
      ],
    });
    assert.equal((await ctx().api('GET', `/v2/deployments/${f.deploymentId}/revisions/${UNKNOWN_ID}/timeline`)).status, 404);
  });

  test('wait_for_terminal answers as soon as the revision is terminal', async () => {
    const f = await fixture(ctx(), 'UNKNOWN');
    const started = Date.now();
    const waiting = ctx().api('GET', `/v2/deployments/${f.deploymentId}/revisions/${f.revisionId}?wait_for_terminal=60`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await ctx().server.berth.db.updateTable('revisions').set({ status: 'DEPLOYED' }).where('id', '=', f.revisionId).execute();
    announce(ctx().server.berth.bus, f.deploymentId);
    const res = await waiting;
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'DEPLOYED');
    assert.ok(Date.now() - started < Math.min(deadline(15_000), 45_000), 'answered long before the 60 s deadline');

    // Already terminal: answers at once.
    const again = await ctx().api('GET', `/v2/deployments/${f.deploymentId}/revisions/${f.revisionId}?wait_for_terminal=300`);
    assert.equal(again.body.status, 'DEPLOYED');
  });

  test('wait_for_terminal answers at the deadline with the current state', async () => {
    const f = await fixture(ctx(), 'UNKNOWN');
    const started = Date.now();
    const res = await ctx().api('GET', `/v2/deployments/${f.deploymentId}/revisions/${f.revisionId}?wait_for_terminal=1`);
    const elapsed = Date.now() - started;
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'UNKNOWN');
    assert.equal(res.body.id, f.revisionId);
    assert.ok(elapsed >= 900 && elapsed < deadline(15_000), `waited ${elapsed} ms`);

    const plain = await ctx().api('GET', `/v2/deployments/${f.deploymentId}/revisions/${f.revisionId}`);
    assert.equal(plain.body.status, 'UNKNOWN');
    const tooLong = await ctx().api('GET', `/v2/deployments/${f.deploymentId}/revisions/${f.revisionId}?wait_for_terminal=301`);
    assert.equal(tooLong.status, 422);
    assert.deepEqual(tooLong.body.detail[0].loc, ['query', 'wait_for_terminal']);
    assert.equal((await ctx().api('GET', `/v2/deployments/${f.deploymentId}/revisions/${UNKNOWN_ID}?wait_for_terminal=5`)).status, 404);
  });

  test('a client that hangs up stops waiting', async () => {
    const f = await fixture(ctx(), 'UNKNOWN');
    const controller = new AbortController();
    const url = `${ctx().server.url}/v2/deployments/${f.deploymentId}/revisions/${f.revisionId}?wait_for_terminal=300`;
    const request = fetch(url, { headers: { 'X-Api-Key': ctx().server.adminKey }, signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    await assert.rejects(request);
    // The server keeps answering normally.
    assert.equal((await ctx().api('GET', `/v2/deployments/${f.deploymentId}/revisions/${f.revisionId}`)).status, 200);
  });

  test('the event stream sends new events and resumes after Last-Event-ID', async () => {
    const f = await fixture(ctx());
    const db = ctx().server.berth.db;
    const first = await openStream(ctx(), f.deploymentId);
    assert.equal(first.status, 200);
    assert.match(first.contentType ?? '', /^text\/event-stream/);

    await writeLines(ctx(), f, [`${f.token} one`], { logType: 'deploy', level: 'WARNING' });
    await recordStatus(db, {
      deploymentId: f.deploymentId,
      revisionId: f.revisionId,
      status: 'DEPLOYED',
      message: `${f.token} done`,
      at: new Date().toISOString(),
    });
    announce(ctx().server.berth.bus, f.deploymentId);
    const received = await first.until((e) => e.data?.message === `${f.token} done`);
    first.close();
    const log = received.find((e) => e.data?.message === `${f.token} one`);
    assert.ok(log, 'the log line arrived before the status');
    assert.equal(log.event, 'log');
    assert.deepEqual(
      { ...log.data, timestamp: typeof log.data.timestamp },
      {
        revision_id: f.revisionId,
        type: 'deploy',
        level: 'WARNING',
        message: `${f.token} one`,
        timestamp: 'number',
      },
    );
    const status = received.at(-1)!;
    assert.equal(status.event, 'status');
    assert.equal(status.data.status, 'DEPLOYED');
    assert.equal(status.data.revision_id, f.revisionId);
    assert.equal(typeof status.data.at, 'string');
    const ids = received.map((e) => Number(e.id));
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => a - b),
      'ids increase',
    );

    // Written while nobody listens; a reconnect with Last-Event-ID gets only what came after.
    await writeLines(ctx(), f, [`${f.token} two`], { logType: 'deploy' });
    for (const resume of [{ 'Last-Event-ID': status.id as string }, undefined]) {
      const second = await openStream(ctx(), f.deploymentId, resume, resume ? '' : `?last_event_id=${status.id}`);
      const more = await second.until((e) => e.data?.message === `${f.token} two`);
      second.close();
      assert.ok(more.every((e) => Number(e.id) > Number(status.id)));
      assert.ok(!more.some((e) => e.data?.message === `${f.token} one`));
    }

    const bad = await ctx().api('GET', `/v2/deployments/${f.deploymentId}/events`, { headers: { 'Last-Event-ID': 'x' } });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['header', 'last-event-id']);
    assert.equal((await ctx().api('GET', `/v2/deployments/${UNKNOWN_ID}/events`)).status, 404);
  });

  test('the event stream ends when its deployment is deleted', async () => {
    const f = await fixture(ctx());
    const stream = await openStream(ctx(), f.deploymentId);
    await ctx().server.berth.db.deleteFrom('revisions').where('deployment_id', '=', f.deploymentId).execute();
    await ctx().server.berth.db.deleteFrom('deployments').where('id', '=', f.deploymentId).execute();
    announce(ctx().server.berth.bus, f.deploymentId);
    await stream.ended();
  });
});

interface SseEvent {
  id?: string;
  event?: string;
  data?: any;
}

/** A tiny SSE reader: enough to check the wire format by hand. */
async function openStream(ctx: SuiteContext, deploymentId: string, headers: Record<string, string> = {}, query = '') {
  const controller = new AbortController();
  const res = await fetch(`${ctx.server.url}/v2/deployments/${deploymentId}/events${query}`, {
    headers: { 'X-Api-Key': ctx.server.adminKey, ...headers },
    signal: controller.signal,
  });
  assert.ok(res.body);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let done = false;

  /** Next complete block (an event or a comment); undefined at the end of the stream. */
  async function block(): Promise<string | undefined> {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const text = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        return text;
      }
      if (done) return undefined;
      const chunk = await reader.read();
      if (chunk.done) done = true;
      else buffer += chunk.value;
    }
  }

  function parse(text: string): SseEvent | undefined {
    const event: SseEvent = {};
    for (const line of text.split('\n')) {
      if (line.startsWith(':')) continue;
      const [field, ...rest] = line.split(': ');
      const value = rest.join(': ');
      if (field === 'id') event.id = value;
      else if (field === 'event') event.event = value;
      else if (field === 'data') event.data = JSON.parse(value);
    }
    return event.id ? event : undefined;
  }

  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    /** Events up to and including the first that matches; fails after deadline(15 s). */
    async until(match: (event: SseEvent) => boolean): Promise<SseEvent[]> {
      const events: SseEvent[] = [];
      const timer = setTimeout(() => controller.abort(), deadline(15_000));
      try {
        for (;;) {
          const text = await block();
          assert.ok(text !== undefined, 'stream ended before the expected event');
          const event = parse(text);
          if (!event) continue;
          events.push(event);
          if (match(event)) return events;
        }
      } finally {
        clearTimeout(timer);
      }
    },
    async ended(): Promise<void> {
      const timer = setTimeout(() => controller.abort(), deadline(15_000));
      try {
        while ((await block()) !== undefined);
      } finally {
        clearTimeout(timer);
      }
    },
    close(): void {
      controller.abort();
    },
  };
}
