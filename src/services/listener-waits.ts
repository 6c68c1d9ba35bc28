import type { BusMessage, EventBus } from '../events/bus.js';

/** One waiting desired-state request, between its reads of the generation. */
export interface ListenerWatch {
  /**
   * Resolves at once if the listener was announced since the last call, else when it is,
   * when the safety-net read finds its generation past `since`, after `ms`, or on abort.
   */
  next(ms: number, since: number): Promise<void>;
  close(): void;
}

interface Waiter {
  announced: boolean;
  /** Set while the request waits: the generation it waits to see grow, and how to wake it. */
  waiting?: { since: number; wake: () => void };
}

/** The current generation of each listener asked about; a listener absent from the answer is gone. */
export type ReadGenerations = (listenerIds: string[]) => Promise<Map<string, number>>;

/**
 * The desired-state requests waiting in this process, by listener. A thousand agents in
 * their long polls cost one bus subscription (an announcement wakes only its listener's
 * requests) and, as the safety net for a missed announcement (a PostgreSQL notification
 * lost while its connection was down), one read of every waited-on generation per
 * `recheckMs`, not a read per request: so idle agents cost next to nothing.
 */
export class ListenerWaits {
  readonly #byListener = new Map<string, Set<Waiter>>();
  #unsubscribe: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #sweeping = false;

  constructor(
    private readonly bus: EventBus,
    private readonly readGenerations: ReadGenerations,
    private readonly recheckMs: number,
  ) {}

  /** Call before the first read of the generation, so a change committed in between is not missed. */
  watch(listenerId: string, signal: AbortSignal): ListenerWatch {
    const waiter: Waiter = { announced: false };
    this.#add(listenerId, waiter);
    const onAbort = () => waiter.waiting?.wake();
    signal.addEventListener('abort', onAbort);
    return {
      next: async (ms, since) => {
        if (!waiter.announced && !signal.aborted) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(() => waiter.waiting?.wake(), ms);
            waiter.waiting = {
              since,
              wake: () => {
                clearTimeout(timer);
                waiter.waiting = undefined;
                resolve();
              },
            };
          });
        }
        waiter.announced = false;
      },
      close: () => {
        signal.removeEventListener('abort', onAbort);
        waiter.waiting?.wake();
        this.#remove(listenerId, waiter);
      },
    };
  }

  /** Requests waiting now (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const waiters of this.#byListener.values()) n += waiters.size;
    return n;
  }

  #add(listenerId: string, waiter: Waiter): void {
    let waiters = this.#byListener.get(listenerId);
    if (!waiters) this.#byListener.set(listenerId, (waiters = new Set()));
    waiters.add(waiter);
    // Subscribed and ticking only while someone waits: an idle server (and a closed one) holds nothing.
    this.#unsubscribe ??= this.bus.subscribe((message) => this.#announced(message));
    this.#timer ??= setInterval(() => void this.#sweep(), this.recheckMs).unref();
  }

  #remove(listenerId: string, waiter: Waiter): void {
    const waiters = this.#byListener.get(listenerId);
    if (!waiters?.delete(waiter) || waiters.size > 0) return;
    this.#byListener.delete(listenerId);
    if (this.#byListener.size > 0) return;
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #announced(message: BusMessage): void {
    if (message.topic !== 'listener' || message.listenerId === undefined) return;
    for (const waiter of this.#byListener.get(message.listenerId) ?? []) {
      waiter.announced = true;
      waiter.waiting?.wake();
    }
  }

  async #sweep(): Promise<void> {
    if (this.#sweeping) return;
    const ids = [...this.#byListener].filter(([, waiters]) => [...waiters].some((w) => w.waiting)).map(([id]) => id);
    if (ids.length === 0) return;
    this.#sweeping = true;
    try {
      const generations = await this.readGenerations(ids);
      for (const id of ids) {
        const generation = generations.get(id);
        for (const waiter of this.#byListener.get(id) ?? []) {
          // Gone, or grown past what the request has: it reads again and answers.
          if (waiter.waiting && (generation === undefined || generation > waiter.waiting.since)) {
            waiter.announced = true;
            waiter.waiting.wake();
          }
        }
      }
    } catch {
      // The database did not answer this time; the next tick reads again, and every wait ends at its deadline anyway.
    } finally {
      this.#sweeping = false;
    }
  }
}
