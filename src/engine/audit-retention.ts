import type { Logger } from 'pino';
import type { Db } from '../store/database.js';
import { deleteAuditRowsBefore } from '../store/repositories/audit.js';

const PRUNE_MS = 60 * 60_000;
const DAY_MS = 86_400_000;

/** Removes audit rows past BERTH_AUDIT_RETENTION_DAYS, at start and hourly, beside the engine. */
export function startAuditRetention(db: Db, days: number, logger: Logger): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const prune = () => {
    running ??= deleteAuditRowsBefore(db, new Date(Date.now() - days * DAY_MS).toISOString())
      .then((removed) => {
        if (removed > 0) logger.info({ removed, days }, 'removed audit log rows past their retention');
      })
      .catch((error: unknown) => logger.warn({ err: error }, 'pruning the audit log failed'))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(prune, PRUNE_MS);
  timer.unref();
  prune();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
