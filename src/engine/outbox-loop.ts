import type { Logger } from 'pino';
import type { EventBus } from '../events/bus.js';

export interface OutboxLoop {
  /**
   * One pass over what is due; answers when the next row is due (ISO time), for the next
   * wake-up, or undefined when none waits (the pass read the rows last, so it knows).
   */
  pass: () => Promise<string | undefined>;
  bus: EventBus;
  logger: Logger;
  /** What the loop sends, for its log line when a pass fails. */
  what: string;
  /** The longest sleep between passes when nothing wakes the loop. */
  sweepMs: number;
  now: () => number;
}

/**
 * Works off an outbox (webhook deliveries, GitHub notices): a pass on each `webhooks`
 * message of the bus (written after the commit that filled the outbox), at the next row's
 * time, and every `sweepMs` at the latest. Passes never overlap; a wake-up during one runs
 * another after it. Everything else is in rows, so a restart loses nothing.
 */
export function startOutboxLoop(loop: OutboxLoop): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const schedule = (delayMs: number) => {
    clearTimeout(timer);
    if (stopped) return;
    timer = setTimeout(pass, Math.max(0, Math.min(delayMs, loop.sweepMs)));
    timer.unref();
  };
  const pass = () => {
    if (running) {
      again = true;
      return;
    }
    running = loop
      .pass()
      .then((next) => schedule(next ? Date.parse(next) - loop.now() : loop.sweepMs))
      .catch((error: unknown) => {
        loop.logger.warn({ err: error }, `${loop.what} failed`);
        schedule(loop.sweepMs);
      })
      .finally(() => {
        running = undefined;
        if (again && !stopped) {
          again = false;
          pass();
        }
      });
  };
  const unsubscribe = loop.bus.subscribe((message) => {
    if (message.topic === 'webhooks') pass();
  });
  pass();
  return {
    async stop() {
      stopped = true;
      unsubscribe();
      clearTimeout(timer);
      await running;
    },
  };
}
