import { open, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { lastOutputLine, runTool } from '../containers/commands.js';
import type { BuildUser } from './build-user.js';
import { ensureDir, runHostProgram, SYSTEM_PATH } from './host.js';

const MB = 1024 * 1024;

/**
 * One directory per workspace for everything its builds write (image store, caches,
 * exports). With a size set, the directory is a file system of its own: an ext4 image file
 * of that size (sparse: it takes only what is written), loop-mounted there, so the kernel
 * stops a workspace's builds at its size and no workspace can fill the host's disk. Files
 * deleted inside give their space back (`discard`).
 */
export class WorkspaceDisks {
  readonly #pending = new Map<string, Promise<string>>();

  constructor(private readonly options: { dir: string; sizeMb: number; user: BuildUser }) {}

  async ensure(workspaceId: string): Promise<string> {
    if (!/^[A-Za-z0-9-]{1,64}$/.test(workspaceId)) throw new Error(`invalid workspace id ${workspaceId}`);
    const mountDir = path.join(this.options.dir, 'workspaces', workspaceId);
    if (this.options.sizeMb === 0) {
      await ensureDir(mountDir, 0o700, this.options.user);
      return mountDir;
    }
    // One mount at a time per workspace in this process; mount itself refuses a second one across processes.
    let pending = this.#pending.get(workspaceId);
    if (!pending) {
      pending = this.#mount(workspaceId, mountDir).finally(() => this.#pending.delete(workspaceId));
      this.#pending.set(workspaceId, pending);
    }
    return pending;
  }

  /** Unmounts the workspace's file system and removes it with everything its builds kept. */
  async remove(workspaceId: string): Promise<void> {
    const mountDir = path.join(this.options.dir, 'workspaces', workspaceId);
    if (await isMountPoint(mountDir)) await runHostProgram('umount', ['--lazy', mountDir]);
    await rm(mountDir, { recursive: true, force: true });
    await rm(this.#imageFile(workspaceId), { force: true });
  }

  async #mount(workspaceId: string, mountDir: string): Promise<string> {
    if (await isMountPoint(mountDir)) return mountDir;
    const image = this.#imageFile(workspaceId);
    await ensureDir(path.dirname(image), 0o700);
    if (!(await stat(image).catch(() => null))) {
      const partial = `${image}.${process.pid}.new`;
      const file = await open(partial, 'w', 0o600);
      try {
        await file.truncate(this.options.sizeMb * MB);
      } finally {
        await file.close();
      }
      const { uid, gid } = this.options.user;
      await runHostProgram('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', `root_owner=${uid}:${gid},lazy_itable_init=1,lazy_journal_init=1,nodiscard`, partial]);
      await runHostProgram('mv', ['-f', partial, image]);
    }
    await ensureDir(mountDir, 0o700);
    const mounted = await runTool({ binary: 'mount', env: { PATH: SYSTEM_PATH } }, ['-o', 'loop,nosuid,nodev,noatime,discard', image, mountDir]);
    // Another process may have mounted it meanwhile.
    if (mounted.code !== 0 && !(await isMountPoint(mountDir))) {
      throw new Error(
        `could not mount the build disk of workspace ${workspaceId} (${lastOutputLine(mounted)}); loop devices are needed to bound builds' disk, or set BERTH_BUILD_DISK_MB=0 to leave it unbounded`,
      );
    }
    await ensureDir(mountDir, 0o700, this.options.user);
    return mountDir;
  }

  #imageFile(workspaceId: string): string {
    return path.join(this.options.dir, 'disks', `${workspaceId}.ext4`);
  }
}

/** Whether `dir` is a mount point, from this process's mount table. */
export async function isMountPoint(dir: string): Promise<boolean> {
  const table = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const wanted = path.resolve(dir);
  // Field 5 is the mount point, with spaces and other bytes escaped as octal.
  return table
    .split('\n')
    .some((line) => (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_, code: string) => String.fromCharCode(parseInt(code, 8))) === wanted);
}
