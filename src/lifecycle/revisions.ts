import { randomUUID } from 'node:crypto';
import { noticeWanted } from '../domain/commit-status.js';
import { canonicalSource } from '../domain/deployment-config.js';
import { canTransition, type RevisionStatus } from '../domain/revision-status.js';
import type { EventBus } from '../events/bus.js';
import { announce, announceListener, announceWebhooks, type LogLine, recordEvents } from '../events/recorder.js';
import { bumpGenerationOfDeployment } from '../store/repositories/listeners.js';
import { type Db, type Executor, nowIso } from '../store/database.js';
import { insertGitHubNotices } from '../store/repositories/github-notices.js';
import { insertWebhookEvent } from '../store/repositories/webhooks.js';
import { compareAndSetRevisionStatus, currentRevisionStatus, type RevisionFence, type TransitionSet } from '../store/repositories/revisions.js';

export interface LifecycleDeps {
  db: Db;
  bus: EventBus;
}

export type { RevisionFence } from '../store/repositories/revisions.js';

/**
 * `ok`: the revision moved. `moved`: another writer changed its status first (a lost
 * race, which is fine: re-read and decide again). `fenced`: the status was as expected
 * but the writer may no longer change it (an engine worker that lost its lease, a
 * listener the deployment is not placed on).
 */
export type RevisionTransition = { outcome: 'ok'; at: string } | { outcome: 'moved'; current: RevisionStatus | undefined } | { outcome: 'fenced' };

export interface RevisionMove {
  message: string | null;
  fence: RevisionFence;
  /** Columns the new status brings along (the built image, where it serves …). */
  set?: TransitionSet;
  /** More writes that belong to the same change, run in its transaction only if it succeeds. */
  alongside?: (trx: Executor, at: string) => Promise<void>;
  /** Who announces the change, so a worker need not react to its own news. */
  origin?: string;
  /**
   * Statuses passed through on the way to `to`, oldest first: each must be an allowed step
   * from the one before, and each gets its event in the timeline, but the revision moves
   * with one compare-and-set from its status to `to`. For steps that need nothing from
   * outside (the engine's CREATING → QUEUED → AWAITING_DEPLOY → DEPLOYING).
   */
  via?: { status: RevisionStatus; message: string | null; at: string }[];
  /** Log lines of the revision that come before the change, written with its events in one insert. */
  logs?: LogLine[];
  /**
   * The deployment's listener as the writer read it. A deployment never gains a listener,
   * so `null` (not placed) means no listener's desired state can change and none is looked up.
   */
  listenerId?: string | null;
}

/**
 * The only way a revision's status changes. Checks the transition table (an illegal
 * move is a bug in Berth and throws), then in one transaction: the compare-and-set under
 * the writer's fence, the status event of the revision's timeline, and whatever belongs
 * to the change; the news goes out on the bus only after commit.
 */
export async function moveRevision(
  deps: LifecycleDeps,
  revision: { id: string; deployment_id: string; status: RevisionStatus; source?: string },
  to: RevisionStatus,
  move: RevisionMove,
): Promise<RevisionTransition> {
  const via = move.via ?? [];
  let from = revision.status;
  for (const step of [...via.map((v) => v.status), to]) {
    if (!canTransition(from, step)) throw new Error(`revision ${revision.id}: ${from} → ${step} is not an allowed transition`);
    from = step;
  }
  const at = nowIso();
  let listenerId: string | undefined;
  let outboxed = false;
  const result = await deps.db.transaction().execute(async (trx): Promise<RevisionTransition> => {
    const changed = await compareAndSetRevisionStatus(trx, {
      revisionId: revision.id,
      deploymentId: revision.deployment_id,
      from: revision.status,
      to,
      message: move.message,
      now: at,
      fence: move.fence,
      set: move.set,
    });
    if (!changed) {
      const current = await currentRevisionStatus(trx, revision.id);
      return current === revision.status ? { outcome: 'fenced' } : { outcome: 'moved', current };
    }
    const statuses = [...via, { status: to, message: move.message, at }];
    await recordEvents(trx, revision.deployment_id, revision.id, move.logs ?? [], statuses);
    await move.alongside?.(trx, at);
    // The outbox row commits with the change or not at all (docs/webhooks.md); where nobody
    // listens (as the compare-and-set answered), there is no statement to send.
    if (changed.webhookWorkspaceId !== null) {
      outboxed = await insertWebhookEvent(trx, changed.webhookWorkspaceId, {
        id: randomUUID(),
        type: 'revision.status_changed',
        occurredAt: at,
        payload: {
          revision: { id: revision.id, deployment_id: revision.deployment_id, status: to, status_message: move.message, updated_at: at },
          previous_status: revision.status,
          passed_through: via.map((step) => step.status),
        },
      });
    }
    // So is what GitHub is told of it (commit status, GitHub deployment), for a deployment on a `github` integration.
    // A revision known not to come from a code host (an image, an upload) costs no statement.
    const fromCodehost = revision.source === undefined || canonicalSource(revision.source) === 'codehost';
    const told = fromCodehost ? statuses.filter((step) => noticeWanted(step.status)) : [];
    if (told.length > 0) {
      const notices = told.map((step) => ({ id: randomUUID(), status: step.status, message: step.message }));
      if (await insertGitHubNotices(trx, revision, notices, at)) outboxed = true;
    }
    // A placed revision's status is in its listener's desired state.
    if (move.listenerId !== null) listenerId = await bumpGenerationOfDeployment(trx, revision.deployment_id);
    return { outcome: 'ok', at };
  });
  if (result.outcome === 'ok') {
    announce(deps.bus, revision.deployment_id, move.origin);
    if (listenerId) announceListener(deps.bus, listenerId);
    if (outboxed) announceWebhooks(deps.bus);
  }
  return result;
}

/**
 * Says what a revision waits for in its `status_message` (a build waiting for a runner),
 * leaving its status as it is: a compare-and-set on that status under the writer's fence,
 * with no timeline event, since nothing moved. False when the revision moved meanwhile or
 * the writer lost its right.
 */
export async function noteRevision(
  deps: LifecycleDeps,
  revision: { id: string; deployment_id: string; status: RevisionStatus },
  message: string | null,
  fence: RevisionFence,
  origin?: string,
): Promise<boolean> {
  const changed = await compareAndSetRevisionStatus(deps.db, {
    revisionId: revision.id,
    deploymentId: revision.deployment_id,
    from: revision.status,
    to: revision.status,
    message,
    now: nowIso(),
    fence,
  });
  if (changed) announce(deps.bus, revision.deployment_id, origin);
  return changed !== undefined;
}
