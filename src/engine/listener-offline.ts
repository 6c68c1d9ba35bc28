import { randomUUID } from 'node:crypto';
import { OFFLINE_AFTER_SECONDS } from '../domain/listener-status.js';
import type { Db } from '../store/database.js';
import { insertWebhookEvent, markOfflineAnnounced, silentListeners } from '../store/repositories/webhooks.js';

/**
 * A listener has no OFFLINE status to move into: it shows OFFLINE once its agent has been
 * silent for OFFLINE_AFTER_SECONDS (domain/listener-status.ts). This finds the ones that went
 * silent since the last look and writes their `listener.offline` events, each in the
 * transaction that marks the silence announced, so it is announced once per silence, by one
 * process. Answers whether an event was written.
 */
export async function announceOfflineListeners(db: Db, now: number): Promise<boolean> {
  const at = new Date(now).toISOString();
  const silent = await silentListeners(db, new Date(now - OFFLINE_AFTER_SECONDS * 1000).toISOString());
  let written = false;
  for (const listener of silent) {
    const lastSeenAt = listener.last_seen_at as string;
    written =
      (await db.transaction().execute(async (trx) => {
        if (!(await markOfflineAnnounced(trx, listener.id, lastSeenAt, at))) return false;
        return insertWebhookEvent(trx, listener.workspace_id, {
          id: randomUUID(),
          type: 'listener.offline',
          occurredAt: at,
          payload: { listener: { id: listener.id, compute_id: listener.compute_id, status: 'OFFLINE', last_seen_at: lastSeenAt } },
        });
      })) || written;
  }
  return written;
}
