import { waitingForShareMessage } from '../domain/fair-share.js';
import { moveRevision } from '../lifecycle/revisions.js';
import { waitingForShare } from '../store/repositories/leases.js';
import type { EngineDeps, EngineSettings } from './context.js';

/** Enough for any backlog a sweep meets; the next sweep takes the rest. */
const MARKED_PER_SWEEP = 100;

/**
 * A revision whose workspace holds its share of engine slots is not claimed (leases.ts);
 * rather than let it sit in CREATING without a word, it moves to QUEUED with the reason.
 * No worker holds its deployment, so the move is fenced on that (`unleased`): a worker
 * that leases the deployment meanwhile wins, and this move is simply refused. From QUEUED
 * the engine carries on as from any queued revision once the workspace has a slot free.
 */
export async function markWaitingForShare(deps: Pick<EngineDeps, 'db' | 'bus'>, settings: Pick<EngineSettings, 'workspaceSlots' | 'workerId'>): Promise<void> {
  const now = new Date().toISOString();
  const message = waitingForShareMessage(settings.workspaceSlots);
  for (const revision of await waitingForShare(deps.db, now, settings.workspaceSlots, MARKED_PER_SWEEP)) {
    await moveRevision(deps, { ...revision, status: 'CREATING' }, 'QUEUED', {
      message,
      fence: { kind: 'unleased', now },
      origin: settings.workerId,
      listenerId: revision.listener_id,
    });
  }
}
