import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { StopSignal, type EngineDeps, type EngineSettings } from './context.js';
import { claimDeployment } from '../store/repositories/leases.js';
import { workOnDeployment } from './worker.js';

export const DEFAULT_ENGINE_SETTINGS: Omit<EngineSettings, 'workerId'> = {
  leaseMs: 15_000,
  concurrency: 4,
  sweepMs: 2_000,
  buildTimeoutMs: 15 * 60_000,
  deployTimeoutMs: 5 * 60_000,
};

export function newWorkerId(): string {
  return `${os.hostname()}/${process.pid}/${randomBytes(3).toString('hex')}`;
}

/**
 * Carries revisions from CREATING to a final status. Runs inside the server or alone
 * (`berth engine`); any number of engines may share one database. New work arrives on
 * the bus and is claimed at once; a periodic sweep takes over expired leases (a crashed
 * process) and catches wake-ups that could not reach this process.
 */
export class Engine {
  readonly settings: EngineSettings;
  #slots = 0;
  #wanted = false;
  #stopped = true;
  #sweep: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  readonly #work = new Set<AbortController>();
  readonly #running = new Set<Promise<void>>();

  constructor(
    private readonly deps: EngineDeps,
    settings: Partial<EngineSettings> = {},
  ) {
    this.settings = { ...DEFAULT_ENGINE_SETTINGS, workerId: newWorkerId(), ...settings };
  }

  async start(): Promise<void> {
    this.#stopped = false;
    await this.#releaseOrphanedLeases();
    this.#unsubscribe = this.deps.bus.subscribe((message) => {
      if (message.topic === 'work') this.wake();
    });
    this.#sweep = setInterval(() => this.wake(), this.settings.sweepMs);
    this.#sweep.unref();
    this.wake();
  }

  /** Stops claiming, pauses running steps (their revisions resume elsewhere) and releases leases. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#sweep);
    this.#unsubscribe?.();
    for (const controller of this.#work) controller.abort(new StopSignal('shutdown'));
    await Promise.allSettled([...this.#running]);
  }

  wake(): void {
    if (this.#stopped) return;
    this.#wanted = true;
    if (this.#slots >= this.settings.concurrency) return;
    this.#slots += 1;
    const slot = this.#slot().finally(() => {
      this.#slots -= 1;
      this.#running.delete(slot);
    });
    this.#running.add(slot);
  }

  async #slot(): Promise<void> {
    while (!this.#stopped) {
      this.#wanted = false;
      let claimed;
      try {
        const now = new Date();
        claimed = await claimDeployment(
          this.deps.db,
          this.settings.workerId,
          now.toISOString(),
          new Date(now.getTime() + this.settings.leaseMs).toISOString(),
        );
      } catch (error) {
        this.deps.logger.error({ err: error }, 'engine could not claim work');
        return;
      }
      if (!claimed) {
        // A wake-up that came while we looked may be for work our query missed: look again.
        if (this.#wanted) continue;
        return;
      }
      const work = new AbortController();
      this.#work.add(work);
      try {
        await workOnDeployment({ ...this.deps, settings: this.settings, deploymentId: claimed.id, work });
      } catch (error) {
        this.deps.logger.error({ err: error, deploymentId: claimed.id }, 'engine work failed');
      } finally {
        this.#work.delete(work);
      }
    }
  }

  /**
   * Leases held by a process of this host that no longer exists (killed, crashed) are
   * released at once, so a restart continues its revisions without waiting for expiry.
   */
  async #releaseOrphanedLeases(): Promise<void> {
    const host = os.hostname();
    const holders = await this.deps.db
      .selectFrom('deployments')
      .select('lease_owner')
      .distinct()
      .where('lease_owner', 'like', `${host}/%`)
      .execute();
    for (const { lease_owner: owner } of holders) {
      const pid = Number(owner?.split('/')[1]);
      if (!owner || !Number.isInteger(pid) || processAlive(pid)) continue;
      await this.deps.db
        .updateTable('deployments')
        .set({ lease_owner: null, lease_expires_at: null })
        .where('lease_owner', '=', owner)
        .execute();
      this.deps.logger.info({ worker: owner }, 'released the leases of a Berth process that is gone');
    }
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
