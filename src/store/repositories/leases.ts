import { IN_PROGRESS_STATUSES } from '../../domain/revision-status.js';
import { LISTENER_OWNED_STATUSES } from '../../domain/queue-policy.js';
import { type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import { type Db, type Executor, isSqlite } from '../database.js';
import { escapeLike } from '../like.js';
import { preparedQuery } from '../prepared.js';
import type { Database } from '../schema.js';

const IN_PROGRESS = [...IN_PROGRESS_STATUSES];

/** A deployment the engine could lease, and the workspace whose share it would use. */
export interface ClaimCandidate {
  id: string;
  workspaceId: string;
}

/**
 * Unleased deployments with engine work, to be leased with `takeFairLease`: a revision in
 * progress that the engine can move on, or a pending delete (first). The lease is the unit
 * of exclusion: one worker per deployment at a time, which also keeps one revision per
 * deployment in flight. The compare-and-set on the lease columns makes a double claim
 * impossible on either database; losing the race just means trying the next candidate.
 *
 * Fair shares: workspaces that hold `share` live leases already are left out, and the rest
 * come in rounds: every workspace's oldest candidate first, the workspace that least
 * recently got a slot (`engine_turns`) before the others, then every workspace's second
 * oldest, and so on. So the next free slot goes to the workspace that waited longest, not
 * to the oldest revision overall, and one workspace with many revisions cannot fill the
 * list ahead of the others. A workspace that fills its share while its candidates are
 * being tried is refused by `takeFairLease`, and the engine drops the rest of them.
 *
 * `skip` names deployments this worker found idle and parked (see Engine); they are left
 * out so that they cannot crowd others out of the candidates.
 */
export async function claimCandidates(db: Executor, now: string, skip: readonly string[] = [], limit = 8, share = 64): Promise<ClaimCandidate[]> {
  const pending = await pendingInRounds(db, now, skip, limit, share);
  let deletingQuery = db
    .selectFrom('deployments as d')
    .select(['d.id', 'd.workspace_id'])
    .where('d.status', '=', 'AWAITING_DELETE')
    // On a listener, the listener removes what runs and reports it (which releases the deployment).
    .where('d.listener_id', 'is', null)
    .where((eb) => eb.or([eb('d.lease_expires_at', 'is', null), eb('d.lease_expires_at', '<', now)]))
    .where('d.workspace_id', 'not in', fullWorkspaces(db, now, share));
  if (skip.length > 0) deletingQuery = deletingQuery.where('d.id', 'not in', skip);
  const deleting = await deletingQuery.limit(limit).execute();
  const seen = new Set<string>();
  const candidates: ClaimCandidate[] = [];
  for (const row of [...deleting, ...pending]) {
    if (seen.has(row.id)) continue;
    seen.add(row.id);
    candidates.push({ id: row.id, workspaceId: row.workspace_id });
  }
  return candidates;
}

interface RankedCandidate {
  id: string;
  workspace_id: string;
  oldest: string;
  round: number;
  turn: string;
}

/**
 * The first `limit` revisions in progress in rounds: each workspace's candidates oldest
 * first, numbered 1, 2, ..., then ordered by round, by the workspace's last turn (never
 * served first) and by age. A deployment with several revisions in progress may take
 * several places; the caller merges them.
 *
 * Everything is read through the partial index of migration 032, so the cost follows the
 * number of workspaces with work, not the length of their queues: one statement gives each
 * workspace's first candidate; when `limit` workspaces or more have one, the first round
 * fills the list and nothing more is read. Otherwise the few workspaces with work are read
 * again, at most `limit` candidates each, for the later rounds.
 */
async function pendingInRounds(db: Executor, now: string, skip: readonly string[], limit: number, share: number): Promise<RankedCandidate[]> {
  const firsts: RankedCandidate[] = [];
  for (const { workspace_id, turn_at, first } of await workspacesWithWork(db, now, skip, share)) {
    if (first === null) continue;
    const split = first.indexOf('|');
    // '' before any timestamp: a workspace never served goes first.
    firsts.push({ workspace_id, turn: turn_at ?? '', oldest: first.slice(0, split), id: first.slice(split + 1), round: 1 });
  }
  let ranked = firsts;
  if (firsts.length < limit) {
    ranked = [];
    for (const { workspace_id, turn } of firsts) {
      const rows = await claimableOf(db, now, skip)
        .select(['d.id', 'd.workspace_id', 'r.created_at as oldest'])
        .where('r.workspace_id', '=', workspace_id)
        .orderBy('r.created_at')
        .limit(limit)
        .execute();
      rows.forEach((row, index) => ranked.push({ ...row, round: index + 1, turn }));
    }
  }
  ranked.sort((a, b) => a.round - b.round || compareText(a.turn, b.turn) || compareText(a.oldest, b.oldest));
  return ranked.slice(0, limit);
}

/** Orders as both databases order these ASCII keys (timestamps, ids), whatever the locale. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The statuses of revisions in progress as literals, which both databases need to see that migration 032's partial index covers a query. */
const IN_PROGRESS_LITERALS = sql.join(IN_PROGRESS.map((status) => sql.lit(status)));

interface WorkspaceWithWork {
  workspace_id: string;
  turn_at: string | null;
  /** Its oldest candidate, `created_at|deployment id`; null when none can be moved on now. */
  first: string | null;
}

/**
 * Every workspace with a revision in progress, but those that hold their share of live
 * leases already, with its last turn and its first candidate: a skip scan of the partial
 * index written out (one seek per workspace, which neither database does by itself here),
 * and one walk of each workspace's queue until its first candidate.
 */
async function workspacesWithWork(db: Executor, now: string, skip: readonly string[], share: number): Promise<WorkspaceWithWork[]> {
  // SQLite, without statistics, prefers six seeks of the status index (every revision in
  // progress) to this range of the partial index; INDEXED BY also fails loudly should the
  // index ever stop covering the query.
  const byIndex = sql.raw(isSqlite(db) ? ' INDEXED BY revisions_in_progress_by_workspace' : '');
  const first = claimableOf(db, now, skip)
    .select(sql<string>`r.created_at || '|' || d.id`.as('first'))
    .where('r.workspace_id', '=', sql.ref<string>('ws.workspace_id'))
    .orderBy('r.created_at')
    .limit(1);
  const { rows } = await sql<WorkspaceWithWork>`
    WITH RECURSIVE ws(workspace_id) AS (
      SELECT (SELECT f.workspace_id FROM revisions AS f${byIndex} WHERE f.status IN (${IN_PROGRESS_LITERALS}) AND f.workspace_id >= '' ORDER BY f.workspace_id LIMIT 1)
      UNION ALL
      SELECT (SELECT n.workspace_id FROM revisions AS n${byIndex} WHERE n.status IN (${IN_PROGRESS_LITERALS}) AND n.workspace_id > ws.workspace_id ORDER BY n.workspace_id LIMIT 1)
      FROM ws WHERE ws.workspace_id IS NOT NULL
    )
    SELECT ws.workspace_id, t.turn_at, (${first}) AS first FROM ws LEFT JOIN engine_turns t ON t.workspace_id = ws.workspace_id
    WHERE ws.workspace_id IS NOT NULL AND ws.workspace_id NOT IN (${fullWorkspaces(db, now, share)})`.execute(db);
  return rows;
}

/**
 * Revisions in progress that the engine can move on now, through the partial index (with a
 * condition on `r.workspace_id`). What the engine "can move on" mirrors `planQueue`
 * (domain/queue-policy.ts): on a listener, a revision handed over or being deployed is the
 * listener's, and a revision queued behind one the listener is deploying waits for the
 * listener's report. A deployment claimed with nothing to do would be claimed again at
 * once, forever.
 */
function claimableOf(db: Executor, now: string, skip: readonly string[]) {
  let query = db
    .selectFrom('revisions as r')
    .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
    .where(sql<SqlBool>`r.status IN (${IN_PROGRESS_LITERALS})`)
    .where((eb) =>
      eb.or([
        eb('d.listener_id', 'is', null),
        eb.and([
          eb('r.status', 'not in', LISTENER_OWNED_STATUSES),
          eb.not(
            eb.and([
              eb('r.status', '=', 'QUEUED'),
              eb.exists(
                eb.selectFrom('revisions as busy').select('busy.id').whereRef('busy.deployment_id', '=', 'd.id').where('busy.status', '=', 'DEPLOYING'),
              ),
            ]),
          ),
        ]),
      ]),
    )
    // A placed deployment being deleted waits for its listener's report, revisions and all.
    .where((eb) => eb.or([eb('d.listener_id', 'is', null), eb('d.status', '!=', 'AWAITING_DELETE')]))
    .where((eb) => eb.or([eb('d.lease_expires_at', 'is', null), eb('d.lease_expires_at', '<', now)]));
  if (skip.length > 0) query = query.where('d.id', 'not in', skip);
  return query;
}

/**
 * The workspaces of live leases, one row per lease, for the counts below: found through the
 * lease index alone, so they cost the number of live leases (a few per engine slot), not
 * the number of deployments. Asked directly, SQLite counted a workspace's leases through the
 * workspace's unique index on (workspace_id, lower(name)) and grouped leases by workspace by
 * scanning that index whole: ~300 ms of the event loop each at 100,000 deployments, two or
 * more per claim (bench/results.md, issue 24). Materialized, the CTE is planned alone, where
 * the lease index is the only one that serves it.
 */
function withLiveLeases(db: Executor, now: string) {
  return db.with(
    (wb) => wb('live_leases').materialized(),
    (qb) => qb.selectFrom('deployments').select('workspace_id').where('lease_expires_at', '>=', now),
  );
}

/** Workspaces holding `share` live leases or more: they get no further slot until one ends. */
function fullWorkspaces(db: Executor, now: string, share: number) {
  return withLiveLeases(db, now)
    .selectFrom('live_leases')
    .select('workspace_id')
    .groupBy('workspace_id')
    .having((eb) => eb.fn.countAll(), '>=', share);
}

/** How many live leases a workspace holds. */
function liveLeaseCount(db: Executor, workspaceId: string, now: string) {
  return withLiveLeases(db, now)
    .selectFrom('live_leases')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('workspace_id', '=', workspaceId);
}

/** `leased`: ours now. `taken`: another worker was first. `full`: its workspace holds its share already. */
export type FairLease = 'leased' | 'taken' | 'full';

const stampTurn = preparedQuery((db: Executor, workspaceId: string, now: string) =>
  db
    .insertInto('engine_turns')
    .values({ workspace_id: workspaceId, turn_at: now })
    .onConflict((oc) => oc.column('workspace_id').doUpdateSet({ turn_at: now })),
);

const leaseWithinShare = preparedQuery((db: Executor, id: string, workspaceId: string, worker: string, now: string, expiresAt: string, share: number) =>
  db
    .updateTable('deployments')
    .set({ lease_owner: worker, lease_expires_at: expiresAt })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', now)]))
    .where((eb) => eb(liveLeaseCount(db, workspaceId, now), '<', share))
    .returning('id'),
);

const liveLeasesOf = preparedQuery((db: Executor, workspaceId: string, now: string) => liveLeaseCount(db, workspaceId, now));

class NotLeased extends Error {
  constructor(readonly why: Exclude<FairLease, 'leased'>) {
    super(why);
  }
}

/**
 * Leases a deployment unless its workspace already holds `share` live leases, and stamps
 * the workspace's turn. The stamp comes first and is a write of the workspace's
 * `engine_turns` row: on PostgreSQL it locks that row, so claims of one workspace from any
 * engine process take turns there, and the count that follows (a statement of its own, so
 * it sees what the claim before committed) cannot be passed by two claims at once. SQLite
 * runs one write transaction at a time. Refused, the transaction rolls back: a workspace
 * that got no slot keeps its place in the order.
 */
export async function takeFairLease(db: Db, candidate: ClaimCandidate, worker: string, now: string, expiresAt: string, share: number): Promise<FairLease> {
  try {
    return await db.transaction().execute(async (trx): Promise<FairLease> => {
      await stampTurn(trx, candidate.workspaceId, now);
      if ((await leaseWithinShare(trx, candidate.id, candidate.workspaceId, worker, now, expiresAt, share)).length > 0) return 'leased';
      const [live] = await liveLeasesOf(trx, candidate.workspaceId, now);
      throw new NotLeased(Number(live?.n ?? 0) >= share ? 'full' : 'taken');
    });
  } catch (error) {
    if (error instanceof NotLeased) return error.why;
    throw error;
  }
}

/** A revision that waits only because its workspace holds its share of engine slots. */
export interface WaitingForShare {
  id: string;
  deployment_id: string;
  listener_id: string | null;
}

/**
 * Revisions not started (CREATING) of unleased deployments whose workspace holds its share:
 * the engine shows them QUEUED with the reason (engine/fair-share.ts) rather than let them
 * wait without a word.
 */
export async function waitingForShare(db: Executor, now: string, share: number, limit: number): Promise<WaitingForShare[]> {
  return (
    db
      .selectFrom('revisions as r')
      .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
      .select(['r.id', 'r.deployment_id', 'd.listener_id'])
      .where('r.status', '=', 'CREATING')
      .where((eb) => eb.or([eb('d.lease_expires_at', 'is', null), eb('d.lease_expires_at', '<', now)]))
      // The revision's own workspace (migration 032): a revision of a workspace not at its share
      // is passed over without reading its deployment, ~3 times faster with 20,000 queued.
      .where('r.workspace_id', 'in', fullWorkspaces(db, now, share))
      .orderBy('r.created_at')
      .limit(limit)
      .execute()
  );
}

/** Extends a lease we hold; false means it was lost (expired and taken, or deleted). */
export async function renewLease(db: Executor, deploymentId: string, worker: string, expiresAt: string): Promise<boolean> {
  const result = await db
    .updateTable('deployments')
    .set({ lease_expires_at: expiresAt })
    .where('id', '=', deploymentId)
    .where('lease_owner', '=', worker)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function releaseLease(db: Executor, deploymentId: string, worker: string): Promise<void> {
  await db
    .updateTable('deployments')
    .set({ lease_owner: null, lease_expires_at: null })
    .where('id', '=', deploymentId)
    .where('lease_owner', '=', worker)
    .execute();
}

/**
 * Only leased deployments, found through the lease index: a lease sets its owner and its
 * expiry together and a release clears both, so these are every row with an owner. A range
 * on the expiry (every timestamp sorts after '') is what SQLite, without statistics, takes
 * the index for; asked by owner alone, the statements below read every deployment (128 ms
 * at 100,000 on the event loop of an engine starting up; bench/results.md).
 */
function leasedOnly(eb: ExpressionBuilder<Database, 'deployments'>) {
  return eb('lease_expires_at', '>', '');
}

/** Lease holders whose worker id names this host, e.g. `host/1234/ab12cd`. */
export async function leaseHoldersOn(db: Executor, host: string): Promise<string[]> {
  const rows = await db
    .selectFrom('deployments')
    .where(leasedOnly)
    .select('lease_owner')
    .distinct()
    // Explicit ESCAPE: SQLite has no default escape character for LIKE.
    .where(sql<boolean>`lease_owner like ${`${escapeLike(host)}/%`} escape '\\'`)
    .execute();
  return rows.flatMap((row) => (row.lease_owner ? [row.lease_owner] : []));
}

/** Releases every lease a worker holds (one that is gone for good). */
export async function releaseLeasesOf(db: Executor, worker: string): Promise<void> {
  await db.updateTable('deployments').set({ lease_owner: null, lease_expires_at: null }).where('lease_owner', '=', worker).where(leasedOnly).execute();
}
