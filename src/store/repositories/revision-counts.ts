import type { RevisionStatus } from '../../domain/revision-status.js';
import type { Executor } from '../database.js';

/** Revisions by status: one grouped count, answered from the status index. */
export async function countRevisionsByStatus(db: Executor): Promise<Partial<Record<RevisionStatus, number>>> {
  const rows = await db
    .selectFrom('revisions')
    .select(['status', (eb) => eb.fn.countAll().as('count')])
    .groupBy('status')
    .execute();
  // PostgreSQL answers count(*) as a bigint string.
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.count)]));
}
