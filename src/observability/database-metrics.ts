import { Counter, Gauge, type Registry } from 'prom-client';
import { REVISION_STATUSES, type RevisionStatus } from '../domain/revision-status.js';

export type RevisionCounts = Partial<Record<RevisionStatus, number>>;

/** Statuses in which a revision waits for an engine (or, placed on a listener, for it) to move it on. */
const WAITING: readonly RevisionStatus[] = ['CREATING', 'QUEUED', 'AWAITING_BUILD', 'AWAITING_DEPLOY'];

/** Scrapes within this long share one database read. */
export const COUNTS_TTL_MS = 5_000;

/**
 * Revisions by status and the engine queue depth, read from the database on scrape: one
 * grouped count over the revisions' status index, kept for a few seconds so that several
 * scrapers (or a quick one) cost one query. Every replica reports the same figures; they
 * describe the database, not the process (aggregate with max, not sum).
 */
export function registerDatabaseMetrics(registry: Registry, readCounts: () => Promise<RevisionCounts>, ttlMs = COUNTS_TTL_MS): void {
  const failures = new Counter({
    name: 'berth_metrics_database_read_failures_total',
    help: 'Reads of the database figures that failed (those figures are then left out of the scrape).',
    registers: [registry],
    async collect() {
      await current();
    },
  });
  // A database that does not answer leaves its figures out of the scrape rather than
  // failing it: the process figures matter most exactly then. A failure is kept as long
  // as a result would be, so a database in trouble gets no more than one query per ttl.
  const current = cached(async (): Promise<RevisionCounts | undefined> => {
    try {
      return await readCounts();
    } catch {
      failures.inc();
      return undefined;
    }
  }, ttlMs);
  new Gauge({
    name: 'berth_revisions',
    help: 'Revisions by status (whole database).',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const read = await current();
      if (read) for (const status of REVISION_STATUSES) this.set({ status }, read[status] ?? 0);
    },
  });
  new Gauge({
    name: 'berth_engine_queue_depth',
    help: 'Revisions waiting to be moved on: CREATING, QUEUED, AWAITING_BUILD and AWAITING_DEPLOY (whole database).',
    registers: [registry],
    async collect() {
      const read = await current();
      // remove(), not reset(): a reset gauge without labels reports 0, which would claim an empty queue.
      if (read) this.set(WAITING.reduce((sum, status) => sum + (read[status] ?? 0), 0));
      else this.remove();
    },
  });
}

/** The loader's last result while younger than ttlMs; concurrent callers share one load. */
function cached<T>(load: () => Promise<T>, ttlMs: number): () => Promise<T> {
  let value: { at: number; result: Promise<T> } | undefined;
  return () => {
    const now = Date.now();
    if (!value || now - value.at >= ttlMs) value = { at: now, result: load() };
    return value.result;
  };
}
