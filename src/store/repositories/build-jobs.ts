import { randomBytes } from 'node:crypto';
import type { RevisionBuild } from '../../domain/build-inputs.js';
import type { Executor } from '../database.js';
import type { Database } from '../schema.js';

/** A build job as stored (migration 021), its JSON columns decoded. */
export type BuildJobRecord = Omit<Database['build_jobs'], 'request' | 'required_labels' | 'result' | 'inputs'> & {
  request: Record<string, unknown>;
  required_labels: string[];
  result: Record<string, unknown> | null;
  /** The build's inputs as its runner reported them, with the control plane's key (migration 030). */
  inputs: RevisionBuild | null;
};

export interface LogLine {
  level: string;
  message: string;
}

/** A log batch of a job: the claim (attempts) whose runner sent it, and its number within the claim. */
export interface RelayPosition {
  attempt: number;
  seq: number;
}

function decode(row: Database['build_jobs']): BuildJobRecord {
  return {
    ...row,
    request: JSON.parse(row.request) as Record<string, unknown>,
    required_labels: JSON.parse(row.required_labels) as string[],
    result: row.result === null ? null : (JSON.parse(row.result) as Record<string, unknown>),
    inputs: row.inputs === null ? null : (JSON.parse(row.inputs) as RevisionBuild),
  };
}

export async function insertBuildJob(
  db: Executor,
  job: Pick<BuildJobRecord, 'id' | 'organization_id' | 'workspace_id' | 'deployment_id' | 'revision_id' | 'request' | 'required_labels' | 'deadline_at'> & {
    source_encrypted: string | null;
  },
  now: string,
): Promise<void> {
  await db
    .insertInto('build_jobs')
    .values({
      ...job,
      request: JSON.stringify(job.request),
      required_labels: JSON.stringify(job.required_labels),
      status: 'queued',
      lease_token: null,
      lease_expires_at: null,
      runner_key_id: null,
      attempts: 0,
      result: null,
      env_encrypted: null,
      error: null,
      relayed_attempt: 0,
      relayed_seq: -1,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

export async function findBuildJob(db: Executor, id: string): Promise<BuildJobRecord | undefined> {
  const row = await db.selectFrom('build_jobs').selectAll().where('id', '=', id).executeTakeFirst();
  return row && decode(row);
}

/**
 * The job of a revision an engine resuming its build waits for rather than queueing another:
 * one still open (queued or claimed), or one its runner ended while no engine watched it
 * (succeeded or failed, not yet answered), whose outcome is still to be taken.
 */
export async function findBuildJobToAnswer(db: Executor, revisionId: string): Promise<BuildJobRecord | undefined> {
  const row = await db
    .selectFrom('build_jobs')
    .selectAll()
    .where('revision_id', '=', revisionId)
    .where((eb) => eb.or([eb('status', 'in', ['queued', 'claimed']), eb.and([eb('status', 'in', ['succeeded', 'failed']), eb('answered_at', 'is', null)])]))
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  return row && decode(row);
}

/** The engine has taken the job's outcome: a later resume of the revision does not take it again. */
export async function markBuildJobAnswered(db: Executor, jobId: string, now: string): Promise<void> {
  await db.updateTable('build_jobs').set({ answered_at: now }).where('id', '=', jobId).execute();
}

/**
 * Claims the oldest job of the organization that these labels satisfy: a queued one, or a
 * claimed one whose lease has expired (its runner is gone or cut off). Compare-and-set on
 * what was read, so two runners never hold one job; the winner gets a new lease token and
 * every report of the loser is refused.
 */
export async function claimBuildJob(
  db: Executor,
  claimer: { organizationId: string; keyId: string; labels: readonly string[] },
  leaseMs: number,
  now: Date,
): Promise<BuildJobRecord | null> {
  const at = now.toISOString();
  const candidates = await db
    .selectFrom('build_jobs')
    .selectAll()
    .where('organization_id', '=', claimer.organizationId)
    .where((eb) => eb.or([eb('status', '=', 'queued'), eb.and([eb('status', '=', 'claimed'), eb('lease_expires_at', '<', at)])]))
    .orderBy('created_at')
    .limit(50)
    .execute();
  for (const row of candidates) {
    const job = decode(row);
    if (!job.required_labels.every((label) => claimer.labels.includes(label))) continue;
    const token = randomBytes(24).toString('base64url');
    const expires = new Date(now.getTime() + leaseMs).toISOString();
    let update = db
      .updateTable('build_jobs')
      .set({ status: 'claimed', lease_token: token, lease_expires_at: expires, runner_key_id: claimer.keyId, attempts: job.attempts + 1, updated_at: at })
      .where('id', '=', job.id)
      .where('status', '=', job.status)
      .where('attempts', '=', job.attempts);
    update = job.lease_token === null ? update.where('lease_token', 'is', null) : update.where('lease_token', '=', job.lease_token);
    const result = await update.executeTakeFirst();
    if (Number(result.numUpdatedRows) === 1)
      return { ...job, status: 'claimed', lease_token: token, lease_expires_at: expires, runner_key_id: claimer.keyId, attempts: job.attempts + 1 };
  }
  return null;
}

/**
 * Extends the lease of the holder of `token`; answers the job as it is now (a cancelled job
 * tells its runner to stop), or null when the token is not the job's lease any more.
 */
export async function extendBuildJobLease(db: Executor, id: string, token: string, leaseMs: number, now: Date): Promise<BuildJobRecord | null> {
  const expires = new Date(now.getTime() + leaseMs).toISOString();
  await db
    .updateTable('build_jobs')
    .set({ lease_expires_at: expires, updated_at: now.toISOString() })
    .where('id', '=', id)
    .where('lease_token', '=', token)
    .where('status', '=', 'claimed')
    .execute();
  const job = await findBuildJob(db, id);
  return job && job.lease_token === token ? job : null;
}

/** Stores one batch of log lines; a batch with a sequence number already stored is not stored again. Answers whether it was new. */
export async function insertBuildJobLogs(db: Executor, jobId: string, attempt: number, seq: number, lines: LogLine[], now: string): Promise<boolean> {
  const result = await db
    .insertInto('build_job_logs')
    .values({ job_id: jobId, attempt, seq, lines: JSON.stringify(lines), created_at: now })
    .onConflict((oc) => oc.columns(['job_id', 'attempt', 'seq']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

/** The batches stored after the cursor (attempt, seq), in the order they were built. */
export async function buildJobLogsAfter(db: Executor, jobId: string, after: RelayPosition): Promise<{ attempt: number; seq: number; lines: LogLine[] }[]> {
  const rows = await db
    .selectFrom('build_job_logs')
    .select(['attempt', 'seq', 'lines'])
    .where('job_id', '=', jobId)
    .where((eb) => eb.or([eb('attempt', '>', after.attempt), eb.and([eb('attempt', '=', after.attempt), eb('seq', '>', after.seq)])]))
    .orderBy('attempt')
    .orderBy('seq')
    .execute();
  return rows.map((row) => ({ attempt: row.attempt, seq: row.seq, lines: JSON.parse(row.lines) as LogLine[] }));
}

/**
 * Moves the job's relay position from `from` to `to` (compare-and-set), in the transaction
 * that writes the relayed lines: false when another engine moved it first, and then this
 * one writes nothing. Each batch reaches the build log once, whichever engine relays it.
 */
export async function advanceBuildJobRelay(db: Executor, jobId: string, from: RelayPosition, to: RelayPosition): Promise<boolean> {
  const result = await db
    .updateTable('build_jobs')
    .set({ relayed_attempt: to.attempt, relayed_seq: to.seq })
    .where('id', '=', jobId)
    .where('relayed_attempt', '=', from.attempt)
    .where('relayed_seq', '=', from.seq)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Ends a job the holder of `token` built; false when the token no longer holds it (fenced). */
export async function finishBuildJob(
  db: Executor,
  id: string,
  token: string,
  outcome: { status: 'succeeded'; result: Record<string, unknown>; envEncrypted: string | null; inputs?: RevisionBuild } | { status: 'failed'; error: string },
  now: string,
): Promise<boolean> {
  const result = await db
    .updateTable('build_jobs')
    .set({
      ...(outcome.status === 'succeeded' && outcome.inputs ? { inputs: JSON.stringify(outcome.inputs) } : {}),
      status: outcome.status,
      result: outcome.status === 'succeeded' ? JSON.stringify(outcome.result) : null,
      env_encrypted: outcome.status === 'succeeded' ? outcome.envEncrypted : null,
      error: outcome.status === 'failed' ? outcome.error : null,
      source_encrypted: null,
      lease_expires_at: null,
      updated_at: now,
    })
    .where('id', '=', id)
    .where('lease_token', '=', token)
    .where('status', '=', 'claimed')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Keeps the inputs a claimed job's runner reported (and langgraph.json's env, sealed) until the job ends; false when the claim no longer holds it. */
export async function recordBuildJobInputs(
  db: Executor,
  id: string,
  token: string,
  inputs: RevisionBuild,
  envEncrypted: string | null,
  now: string,
): Promise<boolean> {
  const result = await db
    .updateTable('build_jobs')
    .set({ inputs: JSON.stringify(inputs), env_encrypted: envEncrypted, updated_at: now })
    .where('id', '=', id)
    .where('lease_token', '=', token)
    .where('status', '=', 'claimed')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Ends an open job from Berth's side (the build was stopped, timed out, or found no runner); its runner hears "cancel". */
export async function cancelBuildJob(db: Executor, id: string, reason: string, now: string): Promise<boolean> {
  const result = await db
    .updateTable('build_jobs')
    .set({ status: 'cancelled', error: reason, source_encrypted: null, updated_at: now })
    .where('id', '=', id)
    .where('status', 'in', ['queued', 'claimed'])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function removeBuildJobLogs(db: Executor, jobId: string): Promise<void> {
  await db.deleteFrom('build_job_logs').where('job_id', '=', jobId).execute();
}

/** Records that a runner asked for work now, with the labels it advertised. */
export async function touchBuildRunner(db: Executor, runner: { keyId: string; organizationId: string; labels: readonly string[] }, now: string): Promise<void> {
  await db
    .insertInto('build_runners')
    .values({ key_id: runner.keyId, organization_id: runner.organizationId, labels: JSON.stringify(runner.labels), last_seen_at: now })
    .onConflict((oc) => oc.column('key_id').doUpdateSet({ labels: JSON.stringify(runner.labels), last_seen_at: now }))
    .execute();
}

/** Runner keys of the organization seen since `since` (ISO) advertising every one of `labels`. */
export async function buildRunnersSeenSince(db: Executor, organizationId: string, since: string, labels: readonly string[] = []): Promise<number> {
  const rows = await db.selectFrom('build_runners').select('labels').where('organization_id', '=', organizationId).where('last_seen_at', '>=', since).execute();
  return rows.filter((row) => {
    const advertised = JSON.parse(row.labels) as string[];
    return labels.every((label) => advertised.includes(label));
  }).length;
}
