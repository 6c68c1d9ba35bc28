import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BuildSandbox } from '../../src/sandbox/sandbox.js';
import { buildSandboxUnavailable, type TestBuildDir, tempBuildDir } from '../support/build-sandbox.js';

/**
 * A runner's job may bound its build tighter than the sandbox does (docs/build-runners.md,
 * "The runner's build sandbox"): the control group a build joins carries the job's memory
 * and CPU, a fraction of a core included, and the sandbox's process limit.
 */
describe("a build's control group with a job's limits", async () => {
  const unavailable = await buildSandboxUnavailable();
  if (unavailable) {
    process.stdout.write(`# SKIP a build's control group with a job's limits: ${unavailable}\n`);
    return;
  }
  let dir: TestBuildDir;
  let sandbox: BuildSandbox;
  before(async () => {
    dir = await tempBuildDir();
    const prepared = await BuildSandbox.prepare({
      user: process.env.BERTH_BUILD_USER ?? 'berth-build',
      dir: dir.path,
      memoryMb: 2048,
      cpus: 2,
      pids: 300,
      diskMb: 0,
      denyNetworks: [],
    });
    assert.ok(typeof prepared !== 'string', String(prepared));
    sandbox = prepared;
  });
  after(async () => {
    await dir?.remove();
  });

  test('the limits given are the ones the kernel enforces; without them the sandbox settings', async (t) => {
    const limited = await sandbox.cgroupFor(`job-limits-${randomBytes(4).toString('hex')}`, { memoryMb: 300, cpus: 0.3 });
    t.after(() => limited.destroy());
    const plain = await sandbox.cgroupFor(`job-limits-${randomBytes(4).toString('hex')}`);
    t.after(() => plain.destroy());
    // cgroup v2: one directory; v1: memory, pids, cpu and freezer, each its own.
    const dirs = (group: typeof plain) => {
      const [memory, pids = memory, cpu = memory] = group.procsFiles.map((file) => path.dirname(file));
      assert.ok(memory);
      return { memory, pids: pids ?? memory, cpu: cpu ?? memory };
    };
    const read = async (dir: string, v2: string, v1: string) =>
      (await readFile(path.join(dir, v2), 'utf8').catch(() => readFile(path.join(dir, v1), 'utf8'))).trim();
    const job = dirs(limited);
    assert.equal(await read(job.memory, 'memory.max', 'memory.limit_in_bytes'), String(300 * 1024 * 1024));
    assert.equal((await read(job.cpu, 'cpu.max', 'cpu.cfs_quota_us')).split(' ')[0], '30000', 'a third of a core, in whole microseconds');
    assert.equal(await read(job.pids, 'pids.max', 'pids.max'), '300', "the sandbox's process limit");
    const own = dirs(plain);
    assert.equal(await read(own.memory, 'memory.max', 'memory.limit_in_bytes'), String(2048 * 1024 * 1024));
    assert.equal((await read(own.cpu, 'cpu.max', 'cpu.cfs_quota_us')).split(' ')[0], '200000');
  });
});
