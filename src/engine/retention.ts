import type { Logger } from 'pino';
import type { Db } from '../store/database.js';
import { deleteAuditRowsBefore } from '../store/repositories/audit.js';
import { deleteWebhookDeliveriesBefore } from '../store/repositories/webhooks.js';

const PRUNE_MS = 60 * 60_000;
const DAY_MS = 86_400_000;

export interface RetentionDays {
  /** BERTH_AUDIT_RETENTION_DAYS. */
  audit: number;
  /** BERTH_WEBHOOK_DELIVERY_RETENTION_DAYS. */
  webhookDeliveries: number;
}

/** A kind of row kept for a number of days, and how rows older than a time are removed (answering how many). */
interface Kept {
  what: string;
  days: number;
  prune: (before: string) => Promise<number>;
}

/**
 * Removes rows past their retention beside the engine, at start and hourly: audit log rows,
 * and finished webhook deliveries with their attempts. One pass at a time; each kind is
 * pruned on its own, so one failing leaves the others pruned.
 */
export function startRetention(db: Db, days: RetentionDays, logger: Logger, now: () => number = Date.now): { stop(): Promise<void> } {
  const kept: Kept[] = [
    { what: 'audit log rows', days: days.audit, prune: (before) => deleteAuditRowsBefore(db, before) },
    { what: 'webhook deliveries', days: days.webhookDeliveries, prune: (before) => deleteWebhookDeliveriesBefore(db, before) },
  ];
  let running: Promise<void> | undefined;
  const pruneOne = async ({ what, days: kept, prune }: Kept) => {
    try {
      const removed = await prune(new Date(now() - kept * DAY_MS).toISOString());
      if (removed > 0) logger.info({ removed, days: kept }, `removed ${what} past their retention`);
    } catch (error) {
      logger.warn({ err: error }, `pruning ${what} failed`);
    }
  };
  const pass = () => {
    running ??= (async () => {
      for (const each of kept) await pruneOne(each);
    })().finally(() => {
      running = undefined;
    });
  };
  const timer = setInterval(pass, PRUNE_MS);
  timer.unref();
  pass();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
