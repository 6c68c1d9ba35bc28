import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { spawnBerth, stopBerth } from '../support/process.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

test('SIGTERM stops the server cleanly while a client holds a connection that never sent a request, and one between requests', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-shutdown-'));
  try {
    const berth = await spawnBerth({ BERTH_DATA_DIR: dataDir, BERTH_CONTAINER_RUNTIME: 'none' });
    // Killed if an assertion fails before the SIGTERM under test (a no-op once it has exited).
    t.after(() => stopBerth(berth, 'SIGKILL'));
    const { port } = new URL(berth.url);
    const silent = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => silent.once('connect', resolve));
    // A keep-alive connection that answered one request and waits for the next.
    const kept = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => kept.once('connect', resolve));
    kept.write('GET /ok HTTP/1.1\r\nHost: berth\r\nConnection: keep-alive\r\n\r\n');
    await new Promise((resolve) => kept.once('data', resolve));
    const closed = Promise.all([silent, kept].map((socket) => new Promise((resolve) => socket.once('close', resolve))));

    berth.child.kill('SIGTERM');
    // Without closing them itself the server waited for the headers timeout, gave up after
    // its 15 s grace and exited 1.
    assert.equal(await berth.exited, 0, berth.output.join(''));
    await closed;
    assert.match(berth.output.join(''), /"msg":"stopped"/);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
