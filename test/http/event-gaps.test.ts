import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { announce, recordLog } from '../../src/events/recorder.js';
import type { Db } from '../../src/store/database.js';
import { describeEachDatabase } from '../support/database.js';
import { deadline } from '../support/deadline.js';
import { type Client, client } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/*
 * On PostgreSQL event ids are drawn at insert time and transactions commit in any order. The
 * test holds writers open by hand to make the order that lost events: an id drawn before
 * another (T1's) still uncommitted while the later one (T2's) is committed and read. Every
 * reader of ids (both streams, the page, a stream starting from now) must then wait for T1
 * and give both, in order, once. SQLite has one writer at a time, so the order cannot happen
 * there (and a writer held open would block the others).
 */

interface StreamEvent {
  id: number;
  message: string;
}

/** A Server-Sent Events answer as the test's own log lines (the token marks them). */
async function* messages(body: ReadableStream<Uint8Array>, token: string): AsyncGenerator<StreamEvent> {
  const parsed = body.pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>).pipeThrough(new EventSourceParserStream());
  for await (const message of parsed) {
    const data = JSON.parse(message.data) as { message?: string | null };
    if (data.message?.startsWith(token)) yield { id: Number(message.id), message: data.message.slice(token.length + 1) };
  }
}

/** Events of the stream up to the one with this message (the stream stays open). */
async function upTo(stream: AsyncGenerator<StreamEvent>, message: string): Promise<StreamEvent[]> {
  const seen: StreamEvent[] = [];
  for (;;) {
    const next = await stream.next();
    if (next.done) throw new Error(`the stream ended before "${message}"; saw ${JSON.stringify(seen)}`);
    seen.push(next.value);
    if (next.value.message === message) return seen;
  }
}

/** A writer's transaction held open after its event is written, until `commit` is called. */
async function heldWriter(db: Db, line: Parameters<typeof recordLog>[1]): Promise<{ id: number; commit: () => Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let written!: (id: number) => void;
  const drawn = new Promise<number>((resolve) => (written = resolve));
  const done = db.transaction().execute(async (trx) => {
    written(await recordLog(trx, line));
    await released;
  });
  // A failed write fails the wait for its id instead of hanging it.
  const id = await Promise.race([drawn, done.then(() => Promise.reject(new Error('the writer ended before writing')))]);
  return {
    id,
    commit: async () => {
      release();
      await done;
    },
  };
}

describeEachDatabase(
  'event ids committed out of order',
  () => {
    let server: TestServer;
    let api: Client;
    before(async () => {
      // No engine: the test's writers are the only ones, so the ids it waits on are its own.
      server = await startTestServer('postgres', { engine: false });
      api = client(server.url, { key: server.adminKey });
    });
    after(async () => {
      await server?.close();
    });

    test('streams, pages and a stream from now give an id committed late, in order, once', { timeout: deadline(60_000) }, async () => {
      const made = await api('POST', '/v2/deployments', {
        body: {
          name: `gaps-${randomUUID().slice(0, 8)}`,
          source: 'external_docker',
          source_config: null,
          source_revision_config: { image_uri: 'localhost/x:v1' },
          secrets: [],
        },
      });
      assert.equal(made.status, 201, made.text);
      const deploymentId: string = made.body.id;
      const token = `tok${randomUUID().slice(0, 8)}`;
      const line = (message: string) => ({
        deploymentId,
        revisionId: made.body.latest_revision_id as string,
        logType: 'build' as const,
        level: 'INFO',
        message: `${token} ${message}`,
      });
      const { db, bus } = server.berth;
      const write = async (message: string) => {
        const id = await recordLog(db, line(message));
        announce(bus, deploymentId);
        return id;
      };

      const start = await write('start');
      const abort = new AbortController();
      const open = async (path: string, lastEventId?: number) => {
        const res = await fetch(`${server.url}${path}`, {
          headers: { 'X-Api-Key': server.adminKey, ...(lastEventId === undefined ? {} : { 'Last-Event-ID': String(lastEventId) }) },
          signal: abort.signal,
        });
        assert.equal(res.status, 200, path);
        return messages(res.body!, token);
      };
      const held: { commit: () => Promise<void> }[] = [];
      try {
        const streams = {
          deployment: await open(`/v2/deployments/${deploymentId}/events`, start),
          workspace: await open(`/v2/events/stream?deployment_id=${deploymentId}`, start),
        };

        // T0 and T1 draw ids in that order and stay open; T2 draws after them and commits.
        const t0 = await heldWriter(db, line('t0'));
        held.push(t0);
        const t1 = await heldWriter(db, line('t1'));
        held.push(t1);
        const t2 = await write('t2');
        assert.ok(start < t0.id && t0.id < t1.id && t1.id < t2, 'ids drawn in the order of the writers');
        // T0 commits after T2: a read that returns T0's event began after T2 had committed,
        // so without the fix the same read returns T2's too, and T1's is then passed over.
        await t0.commit();
        announce(bus, deploymentId);
        for (const stream of Object.values(streams))
          assert.deepEqual(
            (await upTo(stream, 't0')).map((e) => e.message),
            ['t0'],
          );

        const asc = await api('GET', `/v2/events?deployment_id=${deploymentId}&order=asc&cursor=${start}&limit=100`);
        assert.equal(asc.status, 200, asc.text);
        assert.deepEqual(
          asc.body.resources.map((e: { id: number }) => e.id),
          [t0.id],
          'a page stops below the id still being written',
        );
        const desc = await api('GET', `/v2/events?deployment_id=${deploymentId}&limit=1`);
        assert.equal(desc.body.resources[0]?.id, t0.id, 'newest first, the newest is below the id still being written');
        const logs = await api('GET', `/v2/deployments/${deploymentId}/revisions/${made.body.latest_revision_id}/logs?type=build&order=asc`);
        assert.equal(logs.status, 200, logs.text);
        assert.deepEqual(
          logs.body.logs.map((l: { message: string }) => l.message),
          [`${token} start`, `${token} t0`],
          'a page of log lines stops there too',
        );
        // Without Last-Event-ID a stream goes on from the newest event a page could show.
        const fromNow = await open(`/v2/events/stream?deployment_id=${deploymentId}`);

        await t1.commit();
        announce(bus, deploymentId);
        const end = await write('end');

        const expected = [
          { id: t0.id, message: 't0' },
          { id: t1.id, message: 't1' },
          { id: t2, message: 't2' },
          { id: end, message: 'end' },
        ];
        assert.deepEqual(await upTo(streams.deployment, 'end'), expected.slice(1), "the deployment's stream");
        assert.deepEqual(await upTo(streams.workspace, 'end'), expected.slice(1), "the workspace's stream");
        assert.deepEqual(await upTo(fromNow, 'end'), expected.slice(1), 'the stream opened while T1 was open');

        // The page's cursor goes on from where the first page stopped.
        const next = await api('GET', `/v2/events?deployment_id=${deploymentId}&order=asc&cursor=${t0.id}&limit=100`);
        assert.deepEqual(
          next.body.resources.map((e: { id: number }) => e.id),
          expected.slice(1).map((e) => e.id),
        );
      } finally {
        abort.abort();
        // A failed assertion must not leave a writer (and its connection) open.
        await Promise.allSettled(held.map((writer) => writer.commit()));
      }
    });
  },
  { kinds: ['postgres'] },
);
