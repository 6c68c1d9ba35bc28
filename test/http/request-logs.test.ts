import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLogger } from '../../src/logger.js';
import { lazyRequestLogger } from '../../src/http/request-logger.js';
import { deadline } from '../support/deadline.js';
import { startTestServer } from '../support/server.js';

function capture(): { lines: () => Record<string, unknown>[]; sink: Writable } {
  const written: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      written.push(String(chunk));
      callback();
    },
  });
  return { sink, lines: () => written.flatMap((text) => text.trim().split('\n')).map((line) => JSON.parse(line) as Record<string, unknown>) };
}

test('every request still logs its arrival and its answer under its request id, the key kept out', { timeout: deadline(60 * 1000) }, async (t) => {
  const server = await startTestServer('sqlite', { engine: false, env: { LOG_LEVEL: 'info' } });
  t.after(() => server.close());
  const response = await fetch(`${server.url}/v2/deployments`, { headers: { 'x-api-key': server.adminKey, 'x-request-id': 'logs-check-1' } });
  assert.equal(response.status, 200);
  await response.arrayBuffer();
  const lines = server.logs.flatMap((text) => text.trim().split('\n')).map((line) => JSON.parse(line) as Record<string, unknown>);
  const mine = lines.filter((line) => line.reqId === 'logs-check-1');
  assert.deepEqual(
    mine.map((line) => line.msg),
    ['incoming request', 'request completed'],
  );
  assert.equal((mine[1]?.res as { statusCode?: number } | undefined)?.statusCode, 200);
  assert.ok(!server.logs.some((text) => text.includes(server.adminKey)), 'the key is never logged');
});

test("a request's logger writes what its level lets through, with the request id and a child's own bindings", () => {
  const { sink, lines } = capture();
  const root = createLogger('warn', sink);
  const log = lazyRequestLogger(root, { reqId: 'r-1' }, {});
  log.info('not written at warn');
  log.debug('nor this');
  assert.equal(log.level, 'warn');
  log.warn({ attempt: 2 }, 'written');
  log.error(new Error('boom'), 'failed');
  log.child({ step: 'inner' }).warn('from a child');
  assert.deepEqual(
    lines().map((line) => [line.msg, line.reqId, line.attempt ?? line.step ?? (line.err as { message?: string } | undefined)?.message]),
    [
      ['written', 'r-1', 2],
      ['failed', 'r-1', 'boom'],
      ['from a child', 'r-1', 'inner'],
    ],
  );
  const secret = capture();
  lazyRequestLogger(createLogger('info', secret.sink), { reqId: 'r-2' }, {}).info({ secret: { value: 'hunter2' } }, 'with a secret field');
  assert.deepEqual(
    secret.lines().map((line) => [line.msg, line.reqId, (line.secret as { value?: string }).value]),
    [['with a secret field', 'r-2', '[redacted]']],
  );
  // A route's own log level (fastify's logLevel) wins over the root's.
  const route = capture();
  lazyRequestLogger(createLogger('warn', route.sink), { reqId: 'r-3' }, { level: 'debug' }).debug('debug for this route');
  assert.deepEqual(
    route.lines().map((line) => [line.msg, line.reqId]),
    [['debug for this route', 'r-3']],
  );
});
