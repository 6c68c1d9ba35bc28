import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { BerthApiError, createBerthClient, type WorkspaceEvent } from '../../src/client/index.js';
import { announce, recordLog, recordStatus } from '../../src/events/recorder.js';
import { deadline } from '../support/deadline.js';
import { eventually } from '../support/runtimes.js';
import { describeOnEachDatabase, otherTenants, type SuiteContext } from '../support/suite.js';

/*
 * The engine runs in the test server and writes events of its own for the deployments made
 * here; every line the test writes carries a token, and the assertions look at those only.
 */

async function createDeployment(ctx: SuiteContext, key = ctx.server.adminKey): Promise<{ id: string; revisionId: string }> {
  const res = await ctx.api('POST', '/v2/deployments', {
    key,
    body: {
      name: `ws-events-${randomUUID().slice(0, 8)}`,
      source: 'external_docker',
      source_config: null,
      source_revision_config: { image_uri: 'localhost/x:v1' },
      secrets: [],
    },
  });
  assert.equal(res.status, 201, res.text);
  return { id: res.body.id, revisionId: res.body.latest_revision_id };
}

async function writeLine(ctx: SuiteContext, deployment: { id: string; revisionId: string }, message: string): Promise<number> {
  const id = await recordLog(ctx.server.berth.db, { deploymentId: deployment.id, revisionId: deployment.revisionId, logType: 'build', level: 'INFO', message });
  announce(ctx.server.berth.bus, deployment.id);
  return id;
}

/**
 * Waits until the pages show events up to `id`: on PostgreSQL a page holds only settled ids
 * (docs/architecture.md, "Event ids without gaps"), and while the engine beside the test has a
 * transaction in flight, what the test wrote after it began waits for it.
 */
async function settledPast(ctx: SuiteContext, id: number): Promise<void> {
  await eventually(async () => {
    const newest = await ctx.api('GET', '/v2/events?limit=1');
    return Number((newest.body as { resources?: { id: number }[] }).resources?.[0]?.id ?? 0) >= id;
  }, `the events up to ${id} to be settled`);
}

/** Events of the stream until one matches, failing after a deadline. */
async function until(stream: AsyncGenerator<WorkspaceEvent>, match: (event: WorkspaceEvent) => boolean): Promise<WorkspaceEvent[]> {
  const seen: WorkspaceEvent[] = [];
  for await (const event of stream) {
    seen.push(event);
    if (match(event)) return seen;
  }
  throw new Error(`the stream ended before the expected event; saw ${seen.length}`);
}

/** A Server-Sent Events body as events. */
async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<WorkspaceEvent> {
  const messages = body.pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>).pipeThrough(new EventSourceParserStream());
  for await (const message of messages) yield { id: message.id ?? '', event: message.event, data: JSON.parse(message.data) } as WorkspaceEvent;
}

const messageOf = (event: WorkspaceEvent) => ('message' in event.data ? event.data.message : null);

describeOnEachDatabase("the workspace's events", (ctx) => {
  test('a page holds every deployment of the workspace, filtered and paged', async () => {
    const token = `tok${randomUUID().slice(0, 8)}`;
    const [one, two] = [await createDeployment(ctx()), await createDeployment(ctx())];
    await writeLine(ctx(), one, `${token} one`);
    await writeLine(ctx(), two, `${token} two`);
    const last = await recordStatus(ctx().server.berth.db, {
      deploymentId: two.id,
      revisionId: two.revisionId,
      status: 'DEPLOYED',
      message: `${token} done`,
      at: new Date().toISOString(),
    });
    await settledPast(ctx(), last);

    const newest = await ctx().api('GET', '/v2/events?event=log&limit=500');
    assert.equal(newest.status, 200, newest.text);
    const mine = newest.body.resources.filter((e: WorkspaceEvent) => messageOf(e)?.startsWith(token));
    assert.deepEqual(
      mine.map((e: WorkspaceEvent) => [e.event, e.data.deployment_id, messageOf(e)]),
      [
        ['log', two.id, `${token} two`],
        ['log', one.id, `${token} one`],
      ],
      'newest first, each with its deployment',
    );
    assert.ok(newest.body.resources.every((e: WorkspaceEvent) => e.event === 'log'));

    const ofTwo = await ctx().api('GET', `/v2/events?deployment_id=${two.id}&order=asc&limit=500`);
    assert.ok(ofTwo.body.resources.every((e: WorkspaceEvent) => e.data.deployment_id === two.id));
    assert.ok(ofTwo.body.resources.some((e: WorkspaceEvent) => e.event === 'status' && e.data.message === `${token} done`));

    // One event a page: the cursor walks through them without a gap or a repeat. The engine
    // may still add events of its own while the walk goes on; they can only come after.
    const whole = await ctx().api('GET', `/v2/events?deployment_id=${one.id}&order=asc&limit=500`);
    const before: number[] = whole.body.resources.map((e: WorkspaceEvent) => e.id);
    const walked: number[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page: { status: number; text: string; body: any } = await ctx().api(
        'GET',
        `/v2/events?deployment_id=${one.id}&order=asc&limit=1${cursor ? `&cursor=${cursor}` : ''}`,
      );
      assert.equal(page.status, 200, page.text);
      walked.push(...page.body.resources.map((e: WorkspaceEvent) => e.id));
      cursor = page.body.next_cursor;
    }
    assert.deepEqual(walked.slice(0, before.length), before, 'every event of the page, in order');
    assert.deepEqual(
      [...walked].sort((a, b) => a - b),
      walked,
      'ascending',
    );
    assert.equal(new Set(walked).size, walked.length, 'no event twice');

    const bad = await ctx().api('GET', '/v2/events?cursor=soon');
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['query', 'cursor']);
  });

  test('the stream goes on from now, resumes after Last-Event-ID, and filters', { timeout: deadline(60_000) }, async () => {
    const token = `tok${randomUUID().slice(0, 8)}`;
    const deployment = await createDeployment(ctx());
    await writeLine(ctx(), deployment, `${token} before`);
    // The stream goes on from the newest settled id, where a page read just before it ends. On
    // PostgreSQL an event committed before the stream opened is still sent when an id below it
    // was being written then (the engine writes beside this test; test/http/event-gaps.test.ts):
    // so "before it opened" is what a page had shown, not every line committed.
    const page = await ctx().api('GET', '/v2/events?limit=1');
    assert.equal(page.status, 200, page.text);
    const shown = Number(page.body.resources[0]?.id ?? 0);
    const berth = createBerthClient({ baseUrl: ctx().server.url, apiKey: ctx().server.adminKey });
    const abort = new AbortController();
    try {
      // By hand, to know when the answer began: the stream goes on from that moment.
      const opened = await fetch(`${ctx().server.url}/v2/events/stream?event=log`, { headers: { 'X-Api-Key': ctx().server.adminKey }, signal: abort.signal });
      assert.equal(opened.status, 200);
      assert.match(opened.headers.get('content-type') ?? '', /^text\/event-stream/);
      await writeLine(ctx(), deployment, `${token} live`);
      const seen = await until(sseEvents(opened.body!), (e) => messageOf(e) === `${token} live`);
      assert.ok(
        seen.every((e) => e.event === 'log' && Number(e.id) > shown),
        'nothing a page had shown before it opened, only logs',
      );
      const live = seen.at(-1)!;
      assert.equal(live.data.deployment_id, deployment.id);
      abort.abort();

      // Written while nobody listened: a stream that resumes gets it, and only what came after.
      await writeLine(ctx(), deployment, `${token} missed`);
      const resumed = new AbortController();
      try {
        const again = await until(
          berth.followWorkspaceEvents({ signal: resumed.signal, lastEventId: live.id, deployment_id: deployment.id }),
          (e) => messageOf(e) === `${token} missed`,
        );
        assert.ok(again.every((e) => Number(e.id) > Number(live.id) && e.data.deployment_id === deployment.id));
      } finally {
        resumed.abort();
      }
    } finally {
      abort.abort();
    }
    const bad = await ctx().api('GET', '/v2/events/stream', { headers: { 'Last-Event-ID': 'x' } });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['header', 'last-event-id']);
  });

  test("another workspace's events never appear, and its deployments are not found", { timeout: deadline(60_000) }, async () => {
    const token = `tok${randomUUID().slice(0, 8)}`;
    const victim = await createDeployment(ctx());
    const others = await otherTenants(ctx());
    const intruderDeployment = await createDeployment(ctx(), others.otherWorkspaceKey);
    for (const key of [others.otherWorkspaceKey, others.otherOrganizationKey]) {
      const intruder = createBerthClient({ baseUrl: ctx().server.url, apiKey: key });
      const abort = new AbortController();
      try {
        await writeLine(ctx(), victim, `${token} secret of the victim`);
        // The intruder's own event, written after the victim's: once it arrives, the victim's would have.
        const own = key === others.otherWorkspaceKey ? intruderDeployment : await createDeployment(ctx(), key);
        await writeLine(ctx(), own, `${token} own`);
        const seen = await until(intruder.followWorkspaceEvents({ signal: abort.signal, lastEventId: '0' }), (e) => messageOf(e) === `${token} own`);
        assert.ok(
          seen.every((e) => e.data.deployment_id !== victim.id),
          'nothing of the victim',
        );
      } finally {
        abort.abort();
      }
      const page = await ctx().api('GET', '/v2/events?limit=500', { key });
      assert.equal(page.status, 200, page.text);
      assert.ok(!page.body.resources.some((e: WorkspaceEvent) => e.data.deployment_id === victim.id));
      for (const path of [`/v2/events?deployment_id=${victim.id}`, `/v2/events/stream?deployment_id=${victim.id}`]) {
        const refused = await ctx().api('GET', path, { key });
        assert.equal(refused.status, 404, `${path}: ${refused.text}`);
        assert.equal(refused.body.code, 'deployment_not_found');
      }
    }
  });

  test('deployer keys, which see only their own deployments, may not read the whole workspace', async () => {
    const deployment = await createDeployment(ctx());
    const made = await ctx().api('POST', '/v1/api-keys', {
      body: { name: 'shipper', role: 'deployer', workspace_id: ctx().server.workspaceId, deployment_ids: [deployment.id] },
    });
    assert.equal(made.status, 201, made.text);
    const deployer = createBerthClient({ baseUrl: ctx().server.url, apiKey: made.body.key });
    await assert.rejects(deployer.events.list(), (error: unknown) => error instanceof BerthApiError && error.status === 403);
    assert.equal((await ctx().api('GET', '/v2/events/stream', { key: made.body.key })).status, 403);
  });
});
