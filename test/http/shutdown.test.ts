import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { spawnBerth, stopBerth } from '../support/process.js';
import { eventually } from '../support/runtimes.js';
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

/** A `podman` that never answers: it records its pid and sleeps, as one blocked on the image store's lock does. */
function stuckPodman(): { dir: string; pid: () => number | undefined } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-stuck-podman-'));
  fs.writeFileSync(path.join(dir, 'podman'), `#!/bin/sh\necho $$ > '${dir}/pid'\nexec sleep 600\n`, { mode: 0o755 });
  const file = path.join(dir, 'pid');
  return { dir, pid: () => (fs.existsSync(file) && fs.readFileSync(file, 'utf8').trim() ? Number(fs.readFileSync(file, 'utf8')) : undefined) };
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('SIGTERM while the engine still waits on a tool at start stops the server, and the tool does not outlive it', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-shutdown-'));
  const podman = stuckPodman();
  t.after(() => {
    const pid = podman.pid();
    if (pid !== undefined && running(pid)) process.kill(pid, 'SIGKILL');
    fs.rmSync(podman.dir, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const berth = await spawnBerth({ BERTH_DATA_DIR: dataDir, BERTH_CONTAINER_RUNTIME: 'podman', PATH: `${podman.dir}:${process.env.PATH}` });
  t.after(() => stopBerth(berth, 'SIGKILL'));
  // The API answers; the engine's start waits on `podman info`, which never comes.
  await eventually(async () => podman.pid() !== undefined, 'the runtime probe');
  const pid = podman.pid() as number;

  berth.child.kill('SIGTERM');
  // Before, the signal came before any handler: node died at once and the probe ran on, for its 60 s timeout.
  assert.equal(await berth.exited, 0, berth.output.join(''));
  assert.match(berth.output.join(''), /"msg":"stopped"/);
  assert.equal(running(pid), false, 'the probe outlived the server');
});
