import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { BuildSandbox } from '../../src/sandbox/sandbox.js';

const execFileAsync = promisify(execFile);

/**
 * A build directory of its own for a Berth under test (BERTH_BUILD_DIR), removed with
 * whatever its builds left: the workspaces' file systems are unmounted first. Its base
 * images are copied in by the first build.
 */
export interface TestBuildDir {
  path: string;
  /** The settings that point Berth at it (disk unbounded unless `diskMb` is given). */
  env: Record<string, string>;
  remove(): Promise<void>;
}

export async function tempBuildDir(options: { diskMb?: number } = {}): Promise<TestBuildDir> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'berth-builds-'));
  return {
    path: dir,
    env: { BERTH_BUILD_DIR: dir, BERTH_BUILD_DISK_MB: String(options.diskMb ?? 0) },
    remove: async () => {
      for (const mount of await mountsUnder(dir)) await execFileAsync('umount', ['--lazy', mount]).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Why builds cannot be sandboxed here (tests that need it skip, saying so), or null. */
export async function buildSandboxUnavailable(): Promise<string | null> {
  const probe = await tempBuildDir();
  try {
    const sandbox = await BuildSandbox.prepare({
      user: process.env.BERTH_BUILD_USER ?? 'berth-build',
      dir: probe.path,
      memoryMb: 512,
      cpus: 1,
      pids: 256,
      diskMb: 0,
      denyNetworks: [],
    });
    return typeof sandbox === 'string' ? sandbox : null;
  } finally {
    await probe.remove();
  }
}

async function mountsUnder(dir: string): Promise<string[]> {
  const table = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  return table
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((mount) => mount.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}
