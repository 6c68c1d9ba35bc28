import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type BusMessage, PostgresEventBus } from '../../src/events/bus.js';
import { throughCutProxy } from '../support/cut-proxy.js';
import { skippedWithout } from '../support/database.js';
import { eventually } from '../support/runtimes.js';
import { createPostgresDatabase } from '../support/server.js';

test('the events’ LISTEN connection comes back after PostgreSQL was unreachable for several tries, and hears each message once', async (t) => {
  if (await skippedWithout('postgres', t)) return;
  const database = await createPostgresDatabase();
  const { url: throughProxy, proxy } = await throughCutProxy(database.url);
  const listening = await PostgresEventBus.connect(throughProxy);
  // Another process's bus, on PostgreSQL directly: what it publishes reaches every process.
  const other = await PostgresEventBus.connect(database.url);
  t.after(async () => {
    await listening.close();
    await other.close();
    await proxy.close();
    await database.drop();
  });
  const heard: BusMessage[] = [];
  listening.subscribe((message) => heard.push(message));

  proxy.cut();
  // Its first tries to listen again fail: before the fix, the first failure was the last try.
  await eventually(async () => proxy.refused >= 2, 'two tries to listen again refused', 60_000);
  proxy.restore();

  let sent = 0;
  await eventually(
    async () => {
      other.publish({ topic: 'work', deploymentId: `after-the-cut-${++sent}` });
      return heard.length > 0;
    },
    'a message published by another process, heard again',
    120_000,
  );
  // Each message once: one listening connection, however many tries it took.
  const ids = heard.map((message) => message.deploymentId);
  assert.equal(new Set(ids).size, ids.length, `heard twice: ${ids.join(', ')}`);
});
