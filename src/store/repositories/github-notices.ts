import { type ExpressionBuilder, type Selectable, sql } from 'kysely';
import type { RevisionStatus } from '../../domain/revision-status.js';
import type { Executor } from '../database.js';
import type { Database } from '../schema.js';

export type NoticeRow = Selectable<Database['github_notices']>;

type QueuedFields = Partial<Pick<NoticeRow, 'kind' | 'revision_id' | 'commit_sha' | 'status'>> & Pick<NoticeRow, 'id' | 'message'>;

/**
 * Queues one notice about `deploymentId` when that deployment is on a `github` integration
 * (the insert selects nothing otherwise): true when queued. Written in the caller's
 * transaction, so the notice commits with what it tells or not at all.
 *
 * A revision's notice takes the position after its revision's pending ones: that, not the
 * time, orders a revision's notices. Two changes can share a millisecond, and replicas'
 * clocks disagree, so a later change may carry an earlier time. The revision's
 * compare-and-set holds its row until commit, so its changes queue one after another and
 * each sees the notices of the one before.
 */
async function queueNotice(db: Executor, deploymentId: string, fields: QueuedFields, at: string): Promise<boolean> {
  const values = { ...fields, created_at: at, state: 'pending', steps_done: 0, attempts: 0, next_attempt_at: at };
  const columns = Object.keys(values) as (keyof typeof values)[];
  const revisionId = fields.revision_id ?? null;
  const result = await db
    .insertInto('github_notices')
    .columns([...columns, 'position', 'deployment_id'])
    .expression((eb) =>
      eb
        .selectFrom('deployments')
        .innerJoin('codehost_integrations', 'codehost_integrations.id', 'deployments.integration_id')
        .select([
          ...columns.map((column) => eb.val(values[column]).as(column)),
          revisionId === null
            ? eb.val(0).as('position')
            : eb
                .selectFrom('github_notices as queued')
                .select(sql<number>`coalesce(max(queued.position), -1) + 1`.as('next'))
                .where('queued.revision_id', '=', revisionId)
                .as('position'),
          'deployments.id as deployment_id',
        ])
        .where('deployments.id', '=', deploymentId)
        .where('codehost_integrations.provider', '=', 'github'),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/** Queues the notices of one status change, in its transaction, for a deployment on a `github` integration only. True when queued. */
export async function insertGitHubNotices(
  db: Executor,
  revision: { id: string; deployment_id: string },
  notices: { id: string; status: RevisionStatus; message: string | null }[],
  at: string,
): Promise<boolean> {
  let queued = false;
  for (const notice of notices) {
    const fields = { id: notice.id, revision_id: revision.id, status: notice.status, message: notice.message };
    if (await queueNotice(db, revision.deployment_id, fields, at)) queued = true;
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
  const fields = { id: refusal.id, kind: 'preview_refused' as const, commit_sha: refusal.commitSha, message: refusal.reason };
  return queueNotice(db, refusal.parentDeploymentId, fields, at);
}

/**
 * The first pending notice of each sequence, oldest first: only it may be sent. A sequence is
 * a revision's notices, sent one after another, or a refusal's parent and commit. A revision's
 * first is its lowest position (queueNotice); notices of equal position (a refusal's, or those
 * queued before positions ran on) go by time, then id. The heads are
 * chosen in the query, not among the oldest rows read: a sequence's first notice can carry a
 * later time than its second (clocks disagree), and past the rows read it would be missed.
 */
async function sequenceHeads(db: Executor): Promise<NoticeRow[]> {
  // One condition for each kind of sequence, so that each looks for an earlier notice by an
  // equality the revision index serves: a condition covering both made SQLite read every
  // pending notice for each pending notice.
  return db
    .selectFrom('github_notices as n')
    .selectAll('n')
    .where('n.state', '=', 'pending')
    .where((n) =>
      n.or([
        n.and([n('n.revision_id', 'is not', null), n.not(n.exists(earlierPending(n).where('o.revision_id', '=', n.ref('n.revision_id'))))]),
        n.and([
          n('n.revision_id', 'is', null),
          n.not(
            n.exists(
              earlierPending(n)
                .where('o.revision_id', 'is', null)
                .where('o.deployment_id', '=', n.ref('n.deployment_id'))
                .where(sql<boolean>`coalesce(o.commit_sha, '') = coalesce(n.commit_sha, '')`),
            ),
          ),
        ]),
      ]),
    )
    .orderBy('n.created_at')
    .orderBy('n.id')
    .limit(500)
    .execute();
}

/** Pending notices that go before `n` in a sequence they share: lower position, then earlier time, then lower id. */
function earlierPending(n: ExpressionBuilder<Database & { n: NoticeRow }, 'n'>) {
  return (
    n
      .selectFrom('github_notices as o')
      .select(sql`1`.as('one'))
      // An expression of the column keeps PostgreSQL without statistics off the due index, which
      // would read every pending notice again for each one instead of a sequence's few.
      .where(sql<boolean>`(o.state || '') = 'pending'`)
      .where((o) =>
        o.or([
          o('o.position', '<', o.ref('n.position')),
          o.and([o('o.position', '=', o.ref('n.position')), o('o.created_at', '<', o.ref('n.created_at'))]),
          o.and([o('o.position', '=', o.ref('n.position')), o('o.created_at', '=', o.ref('n.created_at')), o('o.id', '<', o.ref('n.id'))]),
        ]),
      )
  );
}

/** When a head can be sent next: at its attempt's time, or when its sender's lease runs out. */
function sendableAt(row: NoticeRow): string | null {
  if (row.next_attempt_at === null) return null;
  return row.leased_until !== null && row.leased_until > row.next_attempt_at ? row.leased_until : row.next_attempt_at;
}

/**
 * From one read of the pending notices: those due now (at most `limit`), at most one per
 * sequence and only its oldest, since GitHub shows a commit's latest status and a revision's
 * notices are sent in the order they happened; and when the next of the others can be sent
 * (a later notice of a sequence waits for its head, and a leased one for its lease, so
 * neither may wake the sender before then: it would find nothing to send, again and again).
 * `limit` 0 answers only the time.
 */
export async function githubNoticeSchedule(db: Executor, now: string, limit: number): Promise<{ due: NoticeRow[]; nextDueAt: string | undefined }> {
  const due: NoticeRow[] = [];
  let nextDueAt: string | undefined;
  for (const row of await sequenceHeads(db)) {
    const at = sendableAt(row);
    if (at === null) continue;
    if (at <= now && due.length < limit) due.push(row);
    // Those due now beyond the limit count too: the sender comes back for them at once.
    else if (nextDueAt === undefined || at < nextDueAt) nextDueAt = at;
  }
  return { due, nextDueAt };
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
