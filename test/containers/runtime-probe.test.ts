import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { LocalContainerRuntime } from '../../src/containers/runtime/index.js';
import { eventually } from '../support/runtimes.js';

/**
 * A `podman` that answers `info` only when the test says so, as a real one does when a
 * build holds the image store's lock, and counts how often it was asked.
 */
function heldPodman(): { dir: string; asked: () => number; release: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-held-podman-'));
  const script = ['#!/bin/sh', `echo "$*" >> '${dir}/asked'`, `while [ ! -e '${dir}/released' ]; do sleep 0.05; done`, 'echo crun'].join('\n');
  fs.writeFileSync(path.join(dir, 'podman'), `${script}\n`, { mode: 0o755 });
  return {
    dir,
    asked: () => (fs.existsSync(path.join(dir, 'asked')) ? fs.readFileSync(path.join(dir, 'asked'), 'utf8').split('\n').filter(Boolean).length : 0),
    release: () => fs.writeFileSync(path.join(dir, 'released'), ''),
  };
}

test('steps started together on a busy host share one runtime probe, and a slow answer still finds the runtime', async (t) => {
  const podman = heldPodman();
  t.after(() => {
    podman.release();
    fs.rmSync(podman.dir, { recursive: true, force: true });
  });
  const runtime = new LocalContainerRuntime({ runtime: 'podman', env: { PATH: `${podman.dir}:/usr/bin:/bin` } });
  const found = Promise.all([runtime.resolvedRuntime(), runtime.resolvedRuntime(), runtime.resolvedRuntime()]);
  await eventually(async () => podman.asked() > 0, 'the first probe');
  podman.release();
  const resolved = await found;
  assert.deepEqual(
    resolved.map((r) => r?.kind),
    ['podman', 'podman', 'podman'],
  );
  assert.equal(podman.asked(), 1, 'one `podman info` for the three steps');
  assert.equal((await runtime.resolvedRuntime())?.kind, 'podman');
  assert.equal(podman.asked(), 1, 'a found runtime is not probed again');
});
