import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * The agent's memory across restarts, beside what the containers' labels already say:
 * which listener it served and which revisions it reported failed (so a restart does not
 * try them again while Berth still lists them). Written atomically: a new file renamed over
 * the old, so a SIGKILL leaves either version, never half of one.
 */
export interface AgentState {
  listener_id: string | null;
  failed_revisions: string[];
}

const FILE = 'state.json';
const LOCK = 'agent.pid';
/** Revisions stop being listed once Berth has recorded the failure; the newest few are plenty. */
const MAX_FAILED = 200;

export async function readState(dataDir: string): Promise<AgentState> {
  try {
    const parsed = JSON.parse(await fs.readFile(path.join(dataDir, FILE), 'utf8')) as Partial<AgentState>;
    return {
      listener_id: typeof parsed.listener_id === 'string' ? parsed.listener_id : null,
      failed_revisions: Array.isArray(parsed.failed_revisions) ? parsed.failed_revisions.filter((id) => typeof id === 'string') : [],
    };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { listener_id: null, failed_revisions: [] };
    throw new Error(`Cannot read the agent's state file ${path.join(dataDir, FILE)}: ${(error as Error).message}; remove it to start afresh`);
  }
}

export async function writeState(dataDir: string, state: AgentState): Promise<void> {
  const trimmed: AgentState = { ...state, failed_revisions: state.failed_revisions.slice(-MAX_FAILED) };
  const target = path.join(dataDir, FILE);
  const temporary = `${target}.${randomUUID()}.tmp`;
  const handle = await fs.open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(trimmed, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(temporary, target);
}

/**
 * One agent per data directory: two would start the same revisions twice. The lock is a
 * file holding the process id; one whose process is gone (SIGKILL, reboot) is taken over.
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  const lockPath = path.join(dataDir, LOCK);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await fs.writeFile(lockPath, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return async () => {
        await fs.rm(lockPath, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number((await fs.readFile(lockPath, 'utf8').catch(() => '')).trim());
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && (await aliveAgent(holder))) {
      throw new Error(`Another berth listener (process ${holder}) uses the data directory ${dataDir}`);
    }
    await fs.rm(lockPath, { force: true });
  }
  throw new Error(`Could not take the lock ${lockPath}`);
}

/** After a reboot the id may belong to another program: where /proc tells, it must be a listener. */
async function aliveAgent(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const commandLine = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => null);
  return commandLine === null || commandLine.includes('listener');
}
