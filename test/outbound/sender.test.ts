import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { isPublicAddress } from '../../src/outbound/addresses.js';
import { postOnce, targetRefusal } from '../../src/outbound/sender.js';

test('only global unicast addresses are public', () => {
  for (const address of ['8.8.8.8', '93.184.215.14', '2606:4700::1111', '::ffff:8.8.8.8']) assert.ok(isPublicAddress(address), address);
  for (const address of [
    '127.0.0.1',
    '127.8.9.10',
    '::1',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '100.64.0.1',
    '169.254.169.254',
    '0.0.0.0',
    '0.1.2.3',
    '224.0.0.1',
    '255.255.255.255',
    'fd00::1',
    'fe80::1',
    'ff02::1',
    '::',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '64:ff9b::7f00:1',
    '2002:7f00:1::1',
    'not an address',
  ]) {
    assert.ok(!isPublicAddress(address), address);
  }
});

test('a target is refused by name, literal or scheme, and allowed with BERTH_OUTBOUND_ALLOW_PRIVATE', async () => {
  assert.match((await targetRefusal('http://localhost:1/', { allowPrivate: false }))!, /resolves to/);
  assert.match((await targetRefusal('http://[::ffff:7f00:1]/', { allowPrivate: false }))!, /resolves to/);
  assert.match((await targetRefusal('file:///etc/passwd', { allowPrivate: true }))!, /only http/);
  assert.equal(await targetRefusal('http://localhost:1/', { allowPrivate: true }), null);
  assert.equal(await targetRefusal('http://93.184.215.14/', { allowPrivate: false }), null);
});

test('an attempt is cut off at its timeout, and keeps at most the excerpt of an answer', async (t) => {
  const server = http.createServer((req, res) => {
    if (req.url === '/slow') return; // never answers
    res.writeHead(200);
    res.end('y'.repeat(100_000));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const policy = { allowPrivate: true, timeoutMs: 300, excerptBytes: 1024 };
  const started = Date.now();
  assert.deepEqual(await postOnce(`${base}/slow`, '{}', {}, policy), { error: 'no answer within 0.3 s' });
  assert.ok(Date.now() - started < 5000);
  const big = await postOnce(`${base}/big`, '{}', {}, policy);
  assert.ok('statusCode' in big);
  assert.equal(big.statusCode, 200);
  assert.equal(big.excerpt.length, 1024);
  const refused = await postOnce(`${base}/big`, '{}', {}, { ...policy, allowPrivate: false });
  assert.ok('error' in refused && /127\.0\.0\.1/.test(refused.error));
});
