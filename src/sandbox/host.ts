import { constants } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { lastOutputLine, runTool } from '../containers/commands.js';

/** The system's programs only: a build user's environment never names another PATH. */
export const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Creates a directory (and its parents) with this mode and owner, correcting them if it
 * exists. Mode and owner are set through a handle opened without following links, so a
 * build user who put a link where a directory was expected cannot turn root's chown
 * elsewhere: that fails instead.
 */
export async function ensureDir(dir: string, mode: number, owner?: { uid: number; gid: number }): Promise<void> {
  await mkdir(dir, { recursive: true, mode });
  const handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    await handle.chmod(mode);
    if (owner) await handle.chown(owner.uid, owner.gid);
  } finally {
    await handle.close();
  }
}

/** Runs a system program as root (or as `runAs`); throws with its last line of output when it fails. */
export async function runHostProgram(program: string, args: string[], runAs?: { uid: number; gid: number }, timeoutMs = 60_000): Promise<string> {
  const result = await runTool({ binary: program, env: { PATH: SYSTEM_PATH }, ...(runAs ? { runAs } : {}) }, args, { timeoutMs });
  if (result.code !== 0) throw new Error(`${program} failed: ${lastOutputLine(result)}`);
  return result.stdout;
}
