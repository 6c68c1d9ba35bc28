import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { lockDataDir, readState, writeState } from '../../../src/agent/state-file.js';

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'berth-agent-state-'));
}

test('the state file round-trips, is private, and leaves no temporary file behind', async () => {
  const dir = tempDir();
  try {
    assert.deepEqual(await readState(dir), { listener_id: null, failed_revisions: [] });
    await writeState(dir, { listener_id: 'l-1', failed_revisions: ['r-1'] });
    await writeState(dir, { listener_id: 'l-1', failed_revisions: ['r-1', 'r-2'] });
    assert.deepEqual(await readState(dir), { listener_id: 'l-1', failed_revisions: ['r-1', 'r-2'] });
    assert.deepEqual(fs.readdirSync(dir), ['state.json']);
    assert.equal(fs.statSync(path.join(dir, 'state.json')).mode & 0o777, 0o600);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('one agent per data directory: a running listener keeps it, a dead one’s lock is taken over', async () => {
  const dir = tempDir();
  // A live process whose command line says `listener`, as `berth listener`'s does.
  const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', 'listener'], { stdio: 'ignore' });
  try {
    fs.writeFileSync(path.join(dir, 'agent.pid'), `${holder.pid}\n`);
    await assert.rejects(lockDataDir(dir), /Another berth listener \(process \d+\) uses the data directory/);

    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    const unlock = await lockDataDir(dir);
    assert.equal(fs.readFileSync(path.join(dir, 'agent.pid'), 'utf8').trim(), String(process.pid));
    await unlock();
    assert.equal(fs.existsSync(path.join(dir, 'agent.pid')), false);
  } finally {
    holder.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
