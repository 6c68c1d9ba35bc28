import type { Logger } from 'pino';
import type { PreviewService } from './previews.js';

/** Idle time is counted in minutes: looking once a minute removes a preview at most a minute late. */
const SWEEP_MS = 60_000;

/**
 * Removes idle previews (no new commit for longer than their parent's `idle_minutes`) with
 * the engine's other loops, so that it runs where the engine runs. One sweep at a time.
 */
export function startPreviewSweep(previews: PreviewService, logger: Logger, everyMs = SWEEP_MS): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const sweep = () => {
    if (running) return;
    running = previews
      .removeIdle()
      .then((removed) => {
        if (removed > 0) logger.info({ removed }, 'removed idle previews');
      })
      .catch((error: unknown) => logger.warn({ err: error }, 'removing idle previews failed'))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(sweep, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
