import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ProtocolClient, ProtocolError } from '../../../src/agent/protocol.js';
import { ProtocolStandIn } from './protocol-stand-in.js';

describe('the protocol client against the stand-in', () => {
  const berth = new ProtocolStandIn();
  let url = '';
  const signal = new AbortController().signal;
  before(async () => {
    url = await berth.start();
  });
  after(() => berth.stop());

  test('heartbeat names the listener; a long poll answers as soon as the state changes', async () => {
    const client = new ProtocolClient(url, berth.key, 'test/1');
    const heartbeat = await client.heartbeat(signal);
    assert.equal(heartbeat.listener_id, berth.listenerId);
    const first = await client.state(undefined, 0, signal);
    assert.equal(first.deployments.length, 0);
    const waiting = client.state(first.generation, 30, signal);
    const placed = berth.place('polled', 'localhost/agent:v1');
    const next = await waiting;
    assert.ok(next.generation > first.generation);
    assert.deepEqual(
      next.deployments.map((deployment) => deployment.revision_id),
      [placed.revision_id],
    );
  });

  test('reports get their outcome: applied, then unchanged when repeated, fenced for a revision that is not the target', async () => {
    const client = new ProtocolClient(url, berth.key, 'test/1');
    const placed = berth.place('reported', 'localhost/agent:v1');
    const report = { deployment_id: placed.deployment_id, revision_id: placed.revision_id, status: 'DEPLOYING' as const };
    assert.equal((await client.reports({ revisions: [report] }, signal)).revisions[0]?.outcome, 'applied');
    assert.equal((await client.reports({ revisions: [report] }, signal)).revisions[0]?.outcome, 'unchanged');
    const stale = { ...report, revision_id: randomUUID() };
    assert.equal((await client.reports({ revisions: [stale] }, signal)).revisions[0]?.outcome, 'fenced');
  });

  test('a refused key is worth retrying (it may be a proxy or a restart); a refused body is not; neither echoes the key', async () => {
    const wrong = `lk_wrong_${randomUUID()}`;
    const refused = await new ProtocolClient(url, wrong, 'test/1').heartbeat(signal).catch((error: unknown) => error);
    assert.ok(refused instanceof ProtocolError && refused.status === 401 && refused.retryable);
    assert.ok(!refused.message.includes(wrong));

    const client = new ProtocolClient(url, berth.key, 'test/1');
    const invalid = { revisions: [{ deployment_id: 'not-a-uuid', revision_id: randomUUID(), status: 'RUNNING' }] };
    const rejected = await client.reports(invalid as never, signal).catch((error: unknown) => error);
    assert.ok(rejected instanceof ProtocolError && rejected.status === 422 && !rejected.retryable);
  });

  test('heardAt counts a long poll from its start while it waits, and never a refused call: a polling agent needs no heartbeat', async () => {
    const client = new ProtocolClient(url, berth.key, 'test/1');
    assert.equal(client.heardAt(), 0);
    const first = await client.state(undefined, 0, signal);
    const answered = client.heardAt();
    assert.ok(answered > 0);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const sentAt = Date.now();
    const waiting = client.state(first.generation, 30, signal);
    assert.ok(client.heardAt() >= sentAt, 'a poll in flight counts from its start');
    berth.place('heard', 'localhost/agent:v1');
    await waiting;
    assert.ok(client.heardAt() >= sentAt, 'and keeps counting once answered');

    const refused = new ProtocolClient(url, `lk_wrong_${randomUUID()}`, 'test/1');
    await refused.heartbeat(signal).catch(() => undefined);
    assert.equal(refused.heardAt(), 0, 'a refused call is not being heard');
  });

  test('an unreachable server is a retryable network failure', async () => {
    const down = new ProtocolStandIn();
    const downUrl = await down.start();
    await down.stop();
    const failure = await new ProtocolClient(downUrl, berth.key, 'test/1').state(undefined, 0, signal).catch((error: unknown) => error);
    assert.ok(failure instanceof ProtocolError && failure.retryable && failure.status === null);
  });
});
