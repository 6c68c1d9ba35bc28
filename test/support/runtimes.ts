import { deadline } from './deadline.js';
import { InProcessRuntime } from './drivers/in-process.js';
import type { RunRequest, RunningRevision, StepContext } from '../../src/engine/drivers/types.js';

/**
 * The in-process runtime, but every `start` waits until the test opens the gate (or the
 * step is aborted), so tests can act while a revision is DEPLOYING.
 */
export class GatedRuntime extends InProcessRuntime {
  #open = false;
  #waiters: (() => void)[] = [];
  /** Revision ids whose start is waiting at the gate now. */
  readonly waiting = new Set<string>();
  /** Starts that saw their step aborted. */
  readonly aborted: string[] = [];

  open(): void {
    this.#open = true;
    for (const wake of this.#waiters.splice(0)) wake();
  }

  close(): void {
    this.#open = false;
  }

  override async start(request: RunRequest, context: StepContext): Promise<RunningRevision> {
    if (!this.#open) {
      this.waiting.add(request.revisionId);
      try {
        await new Promise<void>((resolve, reject) => {
          this.#waiters.push(resolve);
          context.signal.addEventListener('abort', () => reject(context.signal.reason), { once: true });
        });
      } catch (error) {
        this.aborted.push(request.revisionId);
        throw error;
      } finally {
        this.waiting.delete(request.revisionId);
      }
    }
    return super.start(request, context);
  }
}

/**
 * Polls `probe` until it answers a truthy value. `timeoutMs` is a base for an idle machine,
 * scaled by BERTH_TEST_DEADLINE_FACTOR: it only bounds a wait that will not end.
 */
export async function eventually<T>(probe: () => Promise<T | undefined | false>, what: string, timeoutMs = 30_000): Promise<T> {
  const limitMs = deadline(timeoutMs);
  const until = Date.now() + limitMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what} (${limitMs / 1000} s)`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
