import type { BusMessage, EventBus } from './bus.js';

export interface BusWatch {
  /** Resolves at once if something was announced since the last call, else at the next announcement, after `ms`, or on abort. */
  next(ms: number): Promise<void>;
  close(): void;
}

/**
 * Follows the bus announcements of one deployment between reads of the database, so an
 * announcement that arrives while a read is under way is not lost. Announcements only say
 * "look again": readers always read what changed from the database. Event streams, long
 * polls and the listener protocol's desired-state polls are built on it.
 */
export function watchDeployment(bus: EventBus, deploymentId: string, signal: AbortSignal): BusWatch {
  return watchBus(bus, (message) => message.deploymentId === deploymentId, signal);
}

/** The same for any announcements the predicate selects. */
export function watchBus(bus: EventBus, selects: (message: BusMessage) => boolean, signal: AbortSignal): BusWatch {
  let announced = false;
  let wake: (() => void) | undefined;
  const unsubscribe = bus.subscribe((message) => {
    if (!selects(message)) return;
    announced = true;
    wake?.();
  });
  const onAbort = () => wake?.();
  signal.addEventListener('abort', onAbort);
  return {
    async next(ms: number): Promise<void> {
      if (!announced && !signal.aborted) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => wake?.(), ms);
          wake = () => {
            clearTimeout(timer);
            wake = undefined;
            resolve();
          };
        });
      }
      announced = false;
    },
    close(): void {
      unsubscribe();
      signal.removeEventListener('abort', onAbort);
      wake?.();
    },
  };
}
