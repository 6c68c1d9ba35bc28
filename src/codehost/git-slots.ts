/**
 * How many git processes this Berth process runs at once. Every git command takes a slot
 * for as long as it runs (with the helpers it starts: git-remote-https, ssh, index-pack);
 * the others wait in turn. Starting a process blocks Node's event loop (fork and exec run
 * synchronously, longer as the heap grows) and each costs memory and a connection: 60
 * listings that started four processes each against a remote that never answered stalled
 * `/ok` for seconds. It is a bound on the process, so there is one pool per process, sized
 * at start (`setGitConcurrency`, from BERTH_GIT_CONCURRENCY).
 */
class Slots {
  #limit: number;
  #running = 0;
  readonly #waiting: { grant: () => void }[] = [];

  constructor(limit: number) {
    this.#limit = limit;
  }

  set limit(limit: number) {
    this.#limit = limit;
    this.#grantWaiting();
  }

  /**
   * Resolves with the function that gives the slot back once one is free; rejects with
   * `signal`'s reason if it aborts first (the waiter then holds nothing).
   */
  acquire(signal: AbortSignal | undefined): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          this.#running += 1;
          resolve(this.#releaser());
        },
      };
      const onAbort = () => {
        const index = this.#waiting.indexOf(waiter);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
      this.#grantWaiting();
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#running -= 1;
      this.#grantWaiting();
    };
  }

  #grantWaiting(): void {
    while (this.#running < this.#limit && this.#waiting.length > 0) this.#waiting.shift()?.grant();
  }
}

const DEFAULT_GIT_CONCURRENCY = 8;

export const gitSlots = new Slots(DEFAULT_GIT_CONCURRENCY);

/** Sets how many git processes run at once in this process (BERTH_GIT_CONCURRENCY). */
export function setGitConcurrency(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) throw new Error(`git concurrency must be a positive integer, not ${limit}`);
  gitSlots.limit = limit;
}
