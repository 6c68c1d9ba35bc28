import type { Selectable } from 'kysely';
import type { RevisionStatus } from '../../domain/revision-status.js';
import type { Executor } from '../database.js';
import type { Database } from '../schema.js';

export type NoticeRow = Selectable<Database['github_notices']>;

/**
 * Queues the notices of one status change, in its transaction, for a deployment on a
 * `github` integration only (the insert selects nothing otherwise). True when queued.
 */
export async function insertGitHubNotices(
  db: Executor,
  revision: { id: string; deployment_id: string },
  notices: { id: string; status: RevisionStatus; message: string | null }[],
  at: string,
): Promise<boolean> {
  let queued = false;
  for (const [position, notice] of notices.entries()) {
    const result = await db
      .insertInto('github_notices')
      .columns(['id', 'revision_id', 'deployment_id', 'position', 'status', 'message', 'created_at', 'state', 'steps_done', 'attempts', 'next_attempt_at'])
      .expression((eb) =>
        eb
          .selectFrom('deployments')
          .innerJoin('codehost_integrations', 'codehost_integrations.id', 'deployments.integration_id')
          .select([
            eb.val(notice.id).as('id'),
            eb.val(revision.id).as('revision_id'),
            'deployments.id',
            eb.val(position).as('position'),
            eb.val(notice.status).as('status'),
            eb.val(notice.message).as('message'),
            eb.val(at).as('created_at'),
            eb.val('pending').as('state'),
            eb.val(0).as('steps_done'),
            eb.val(0).as('attempts'),
            eb.val(at).as('next_attempt_at'),
          ])
          .where('deployments.id', '=', revision.deployment_id)
          .where('codehost_integrations.provider', '=', 'github'),
      )
      .executeTakeFirst();
    queued ||= Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }
  return queued;
}

/**
 * Queues a pull request's refusal of a preview (docs/previews.md), in the transaction that
 * decided it, for a parent on a `github` integration only. `reason` is Berth's own text. True
 * when queued.
 */
export async function insertPreviewRefusalNotice(
  db: Executor,
  refusal: { id: string; parentDeploymentId: string; commitSha: string; reason: string },
  at: string,
): Promise<boolean> {
  const result = await db
    .insertInto('github_notices')
    .columns(['id', 'kind', 'deployment_id', 'commit_sha', 'position', 'message', 'created_at', 'state', 'steps_done', 'attempts', 'next_attempt_at'])
    .expression((eb) =>
      eb
        .selectFrom('deployments')
        .innerJoin('codehost_integrations', 'codehost_integrations.id', 'deployments.integration_id')
        .select([
          eb.val(refusal.id).as('id'),
          eb.val('preview_refused').as('kind'),
          'deployments.id',
          eb.val(refusal.commitSha).as('commit_sha'),
          eb.val(0).as('position'),
          eb.val(refusal.reason).as('message'),
          eb.val(at).as('created_at'),
          eb.val('pending').as('state'),
          eb.val(0).as('steps_done'),
          eb.val(0).as('attempts'),
          eb.val(at).as('next_attempt_at'),
        ])
        .where('deployments.id', '=', refusal.parentDeploymentId)
        .where('codehost_integrations.provider', '=', 'github'),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/** What orders notices: a revision's are sent one after another; a refusal's order is its parent's and commit's. */
function noticeSequence(row: Pick<NoticeRow, 'revision_id' | 'deployment_id' | 'commit_sha'>): string {
  return row.revision_id ?? `refused:${row.deployment_id}:${row.commit_sha ?? ''}`;
}

/**
 * Notices due now, at most one per sequence (noticeSequence) and only its oldest: GitHub
 * shows a commit's latest status, so a revision's notices are sent in the order they happened.
 */
export async function dueGitHubNotices(db: Executor, now: string, limit: number): Promise<NoticeRow[]> {
  const rows = await db.selectFrom('github_notices').selectAll().where('state', '=', 'pending').orderBy('created_at').orderBy('position').limit(500).execute();
  const seen = new Set<string>();
  const due: NoticeRow[] = [];
  for (const row of rows) {
    const sequence = noticeSequence(row);
    if (seen.has(sequence)) continue;
    seen.add(sequence);
    const free = row.leased_until === null || row.leased_until < now;
    if (free && row.next_attempt_at !== null && row.next_attempt_at <= now) due.push(row);
    if (due.length === limit) break;
  }
  return due;
}

export async function updateGitHubNotice(
  db: Executor,
  id: string,
  set: Partial<Pick<NoticeRow, 'steps_done' | 'attempts' | 'next_attempt_at' | 'leased_until' | 'last_error'>>,
): Promise<void> {
  await db.updateTable('github_notices').set(set).where('id', '=', id).execute();
}

/** A notice is done with (sent, or given up on after its retries, or about a revision that is gone). */
export async function deleteGitHubNotice(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('github_notices').where('id', '=', id).execute();
}

export async function findGitHubDeployment(db: Executor, revisionId: string): Promise<string | undefined> {
  const row = await db.selectFrom('github_deployments').select('github_deployment_id').where('revision_id', '=', revisionId).executeTakeFirst();
  return row?.github_deployment_id;
}

export async function saveGitHubDeployment(db: Executor, revisionId: string, githubDeploymentId: string, now: string): Promise<void> {
  await db.insertInto('github_deployments').values({ revision_id: revisionId, github_deployment_id: githubDeploymentId, created_at: now }).execute();
}
