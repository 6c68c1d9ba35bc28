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

/**
 * The in-process runtime, holding the starts of chosen deployments (by name, so a test can
 * choose before the deployment exists) at a gate until the test releases them (or their
 * step is aborted); others start at once. For tests where one workspace's slow work must
 * not hold up another's.
 */
export class HeldRuntime extends InProcessRuntime {
  readonly #held = new Set<string>();
  readonly #waiters: (() => void)[] = [];
  /** Deployments whose start waits at the gate now. */
  readonly waiting = new Set<string>();
  /** The most starts that waited at the gate at once. */
  mostWaiting = 0;

  hold(deploymentName: string): void {
    this.#held.add(deploymentName.toLowerCase());
  }

  releaseAll(): void {
    this.#held.clear();
    for (const wake of this.#waiters.splice(0)) wake();
  }

  override async start(request: RunRequest, context: StepContext): Promise<RunningRevision> {
    if (this.#held.has(request.instanceName)) {
      this.waiting.add(request.deploymentId);
      this.mostWaiting = Math.max(this.mostWaiting, this.waiting.size);
      try {
        await new Promise<void>((resolve, reject) => {
          this.#waiters.push(resolve);
          context.signal.addEventListener('abort', () => reject(context.signal.reason), { once: true });
        });
      } finally {
        this.waiting.delete(request.deploymentId);
      }
    }
    return super.start(request, context);
  }
}
