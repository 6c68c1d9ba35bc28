import type { RevisionBuild } from '../../domain/build-inputs.js';
import type { SourceSpelling } from '../../domain/deployment-config.js';
import type { ResourceSpec, RevisionConfig, SourceConfig } from '../../domain/deployment-config.js';
import type { RevisionStatus } from '../../domain/revision-status.js';
import type { Executor } from '../database.js';
import { preparedQuery } from '../prepared.js';
import type { ColumnChanges, Database } from '../schema.js';
import { queueImageRemovals } from './image-removals.js';
import { resourceSpecId } from './resource-specs.js';

/** A revision as the rest of Berth sees it: JSON decoded, its resource spec resolved. */
export interface RevisionRecord {
  id: string;
  deployment_id: string;
  /** 1 for a deployment's first revision, then 2, 3, … */
  seq: number;
  source: SourceSpelling;
  source_revision_config: RevisionConfig;
  resource_spec: ResourceSpec | null;
  /** Null when the revision has no secrets. */
  secret_set_id: string | null;
  status: RevisionStatus;
  status_message: string | null;
  remote_reconciled: boolean;
  image_ref: string | null;
  runtime_handle: string | null;
  url: string | null;
  /** What its image was (or will be) built from; null until the engine worked it out, and for image revisions. */
  build: RevisionBuild | null;
  /**
   * langgraph.json's env, encrypted: present only where the engine decided it in memory and
   * may not have written it yet (it is not read with the revision; see configEnvOf).
   */
  config_env_encrypted?: string | null;
  created_at: string;
  updated_at: string;
}

/** What a use case decides about a new revision; numbering and defaults are the repository's. */
export interface NewRevision {
  id: string;
  deployment_id: string;
  source: SourceSpelling;
  source_revision_config: RevisionConfig;
  resource_spec: ResourceSpec;
  secret_set_id: string | null;
  /** An image built before (a redeploy): deployed without building. */
  image_ref: string | null;
  created_at: string;
}

/** The revision columns read with every revision, prefixable for joins (see deployments.ts). */
export const REVISION_COLUMNS = [
  'id',
  'deployment_id',
  'seq',
  'source',
  'source_revision_config',
  'secret_set_id',
  'status',
  'status_message',
  'remote_reconciled',
  'image_ref',
  'runtime_handle',
  'url',
  'build_inputs',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof Database['revisions'])[];

export type RevisionColumns = Pick<Database['revisions'], (typeof REVISION_COLUMNS)[number]>;

/** Decodes a revision's columns and its resource spec's JSON (null when it has none). */
export function decodeRevision(row: RevisionColumns, spec: string | null): RevisionRecord {
  return {
    id: row.id,
    deployment_id: row.deployment_id,
    seq: row.seq,
    source: row.source,
    source_revision_config: JSON.parse(row.source_revision_config) as RevisionConfig,
    resource_spec: spec === null ? null : (JSON.parse(spec) as ResourceSpec),
    secret_set_id: row.secret_set_id,
    status: row.status,
    status_message: row.status_message,
    remote_reconciled: row.remote_reconciled === 1,
    image_ref: row.image_ref,
    runtime_handle: row.runtime_handle,
    url: row.url,
    build: decodeBuild(row.build_inputs),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function selectRevisions(db: Executor) {
  return db
    .selectFrom('revisions as r')
    .leftJoin('resource_specs as spec', 'spec.id', 'r.resource_spec_id')
    .select(REVISION_COLUMNS.map((column) => `r.${column}` as const))
    .select('spec.spec');
}

async function many(query: { execute(): Promise<(RevisionColumns & { spec: string | null })[]> }): Promise<RevisionRecord[]> {
  return (await query.execute()).map((row) => decodeRevision(row, row.spec));
}

/**
 * Adds the next revision of a deployment and makes it the latest. Call inside a
 * transaction that holds the deployment's row lock (`lockDeployment`): the number comes
 * from the deployment's counter, so it cannot be taken twice.
 */
export async function insertRevision(db: Executor, revision: NewRevision): Promise<RevisionRecord> {
  const [numbered] = await numberNextRevision(db, revision.deployment_id, revision.id, revision.created_at);
  if (!numbered) throw new Error(`deployment ${revision.deployment_id} not found for its new revision`);
  const specId = await resourceSpecId(db, revision.deployment_id, revision.resource_spec, revision.created_at);
  return insertRevisionAs(db, revision, numbered.revision_count, numbered.workspace_id, specId);
}

/**
 * The first revision of a deployment inserted in the same transaction already numbered for
 * it (`insertDeployment`'s `firstRevisionId`): there is no counter to move and no spec
 * stored before, so its only statements are the spec's insert and its own.
 */
export async function insertFirstRevision(db: Executor, revision: NewRevision, workspaceId: string): Promise<RevisionRecord> {
  const specId = await resourceSpecId(db, revision.deployment_id, revision.resource_spec, revision.created_at, { deploymentIsNew: true });
  return insertRevisionAs(db, revision, 1, workspaceId, specId);
}

async function insertRevisionAs(db: Executor, revision: NewRevision, seq: number, workspaceId: string, specId: string): Promise<RevisionRecord> {
  const row: Database['revisions'] = {
    id: revision.id,
    deployment_id: revision.deployment_id,
    seq,
    source: revision.source,
    source_revision_config: JSON.stringify(revision.source_revision_config),
    resource_spec_id: specId,
    secret_set_id: revision.secret_set_id,
    status: 'CREATING',
    status_message: null,
    remote_reconciled: 0,
    image_ref: revision.image_ref,
    image_id: null,
    image_digest: null,
    runtime_handle: null,
    url: null,
    build_inputs: null,
    build_key: null,
    config_env_encrypted: null,
    created_at: revision.created_at,
    updated_at: revision.created_at,
    workspace_id: workspaceId,
  };
  await insertRevisionRow(db, row);
  return decodeRevision(row, JSON.stringify(revision.resource_spec));
}

const numberNextRevision = preparedQuery((db, deploymentId: string, revisionId: string, at: string) =>
  db
    .updateTable('deployments')
    .set((eb) => ({ revision_count: eb('revision_count', '+', 1), latest_revision_id: revisionId, updated_at: at }))
    .where('id', '=', deploymentId)
    .returning(['revision_count', 'workspace_id']),
);

const insertRevisionRow = preparedQuery((db, row: Database['revisions']) => db.insertInto('revisions').values(row));

export async function findRevision(db: Executor, deploymentId: string, id: string): Promise<RevisionRecord | undefined> {
  const [found] = await many(selectRevisions(db).where('r.id', '=', id).where('r.deployment_id', '=', deploymentId));
  return found;
}

/** For the engine and the lifecycle, which work across workspaces. */
export async function findRevisionById(db: Executor, id: string): Promise<RevisionRecord | undefined> {
  const [found] = await many(selectRevisions(db).where('r.id', '=', id));
  return found;
}

export interface RevisionFilters {
  statuses?: RevisionStatus[];
  remoteReconciled?: boolean;
}

/** Newest first: revision numbers order exactly, even within one millisecond. */
export async function listRevisions(
  db: Executor,
  deploymentId: string,
  filters: RevisionFilters,
  page: { limit: number; offset: number },
): Promise<RevisionRecord[]> {
  let query = selectRevisions(db).where('r.deployment_id', '=', deploymentId);
  if (filters.statuses && filters.statuses.length > 0) query = query.where('r.status', 'in', filters.statuses);
  if (filters.remoteReconciled !== undefined) query = query.where('r.remote_reconciled', '=', filters.remoteReconciled ? 1 : 0);
  return many(query.orderBy('r.seq', 'desc').limit(page.limit).offset(page.offset));
}

/** Revisions in the given statuses, oldest first. */
export async function revisionsInStatus(db: Executor, deploymentId: string, statuses: readonly RevisionStatus[]): Promise<RevisionRecord[]> {
  return many(selectRevisions(db).where('r.deployment_id', '=', deploymentId).where('r.status', 'in', statuses).orderBy('r.seq'));
}

/** What a status change may also write on the revision (`config_env_encrypted`: langgraph.json's `env`, encrypted by the caller). */
export type TransitionSet = Partial<
  Pick<RevisionRecord, 'image_ref' | 'runtime_handle' | 'url' | 'source_revision_config' | 'build' | 'config_env_encrypted'> &
    Pick<Database['revisions'], 'image_id' | 'image_digest'>
>;

export type RevisionFence =
  | { kind: 'api' }
  /** The engine worker that must hold the deployment's lease. */
  | { kind: 'lease'; worker: string }
  /** The listener the deployment is placed on. */
  | { kind: 'listener'; listenerId: string }
  /** No engine worker holds the deployment's lease at `now` (a note on a revision nobody works on). */
  | { kind: 'unleased'; now: string };

/**
 * Compare-and-set of a revision's status under a fence: a worker whose lease was taken
 * over, or a listener the deployment is not placed on, can change nothing. Only the
 * lifecycle module calls it. Undefined means nothing changed; otherwise `webhookWorkspaceId`
 * is the deployment's workspace when it has an enabled webhook subscription, else null:
 * read by the same statement, so a change in a workspace nobody listens to sends no
 * outbox insert at all.
 */
export async function compareAndSetRevisionStatus(
  db: Executor,
  change: {
    revisionId: string;
    deploymentId: string;
    from: RevisionStatus;
    to: RevisionStatus;
    message: string | null;
    now: string;
    fence: RevisionFence;
    set?: TransitionSet;
  },
): Promise<{ webhookWorkspaceId: string | null } | undefined> {
  const { source_revision_config, build, ...plain } = change.set ?? {};
  const values: RevisionChanges = {
    ...plain,
    source_revision_config: source_revision_config ? JSON.stringify(source_revision_config) : undefined,
    ...(build ? { build_inputs: JSON.stringify(build), build_key: build.key } : {}),
    status: change.to,
    status_message: change.message,
    updated_at: change.now,
  };
  const fence = change.fence;
  const where = [change.revisionId, change.deploymentId, change.from] as const;
  const [updated] =
    fence.kind === 'lease'
      ? await setStatusUnderLease(db, values, ...where, fence.worker)
      : fence.kind === 'listener'
        ? await setStatusOnListener(db, values, ...where, fence.listenerId)
        : fence.kind === 'unleased'
          ? await setStatusUnleased(db, values, ...where, fence.now)
          : await setStatus(db, values, ...where);
  return updated && { webhookWorkspaceId: updated.webhook_workspace_id ?? null };
}

type RevisionChanges = ColumnChanges<'revisions'>;

function updateStatus(db: Executor, values: RevisionChanges, revisionId: string, deploymentId: string, from: RevisionStatus) {
  return db.updateTable('revisions').set(values).where('id', '=', revisionId).where('deployment_id', '=', deploymentId).where('status', '=', from);
}

/** What a status change answers: its revision, and the workspace when someone there listens for webhooks. */
function returningListeners(query: ReturnType<typeof updateStatus>, deploymentId: string) {
  return query.returning((eb) => [
    'id',
    eb
      .selectFrom('webhook_subscriptions')
      .innerJoin('deployments', 'deployments.workspace_id', 'webhook_subscriptions.workspace_id')
      .select('webhook_subscriptions.workspace_id')
      .where('deployments.id', '=', deploymentId)
      .where('webhook_subscriptions.disabled_at', 'is', null)
      .limit(1)
      .as('webhook_workspace_id'),
  ]);
}

const setStatus = preparedQuery((db, values: RevisionChanges, revisionId: string, deploymentId: string, from: RevisionStatus) =>
  returningListeners(updateStatus(db, values, revisionId, deploymentId, from), deploymentId),
);

const setStatusUnderLease = preparedQuery((db, values: RevisionChanges, revisionId: string, deploymentId: string, from: RevisionStatus, worker: string) =>
  returningListeners(
    updateStatus(db, values, revisionId, deploymentId, from).where(({ exists, selectFrom }) =>
      exists(selectFrom('deployments').select('id').where('id', '=', deploymentId).where('lease_owner', '=', worker)),
    ),
    deploymentId,
  ),
);

const setStatusOnListener = preparedQuery((db, values: RevisionChanges, revisionId: string, deploymentId: string, from: RevisionStatus, listenerId: string) =>
  returningListeners(
    updateStatus(db, values, revisionId, deploymentId, from).where(({ exists, selectFrom }) =>
      exists(selectFrom('deployments').select('id').where('id', '=', deploymentId).where('listener_id', '=', listenerId)),
    ),
    deploymentId,
  ),
);

const setStatusUnleased = preparedQuery((db, values: RevisionChanges, revisionId: string, deploymentId: string, from: RevisionStatus, now: string) =>
  returningListeners(
    updateStatus(db, values, revisionId, deploymentId, from).where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('deployments').select('id').where('id', '=', deploymentId).where('lease_expires_at', '>=', now))),
    ),
    deploymentId,
  ),
);

/** The status a revision has now, read inside a transaction to tell a lost race from a fence. */
export async function currentRevisionStatus(db: Executor, revisionId: string): Promise<RevisionStatus | undefined> {
  const row = await db.selectFrom('revisions').select('status').where('id', '=', revisionId).executeTakeFirst();
  return row?.status;
}

export async function runtimeHandleOf(db: Executor, revisionId: string): Promise<{ runtime_handle: string | null; seq: number } | undefined> {
  return db.selectFrom('revisions').select(['runtime_handle', 'seq']).where('id', '=', revisionId).executeTakeFirst();
}

/**
 * Keeps a deployment's revisions bounded: removes the oldest finished ones beyond the
 * newest `keep`, never the active or the latest one, with their events and step records,
 * and the resource specs and secret sets no revision refers to any more, and queues the
 * images they built for removal. Answers how many revisions it removed.
 */
export async function pruneRevisions(
  db: Executor,
  deployment: { id: string; active_revision_id: string | null; latest_revision_id: string | null; revision_count: number },
  keep: number,
  finished: readonly RevisionStatus[],
  now: string,
): Promise<number> {
  const below = deployment.revision_count - keep;
  if (below < 1) return 0;
  const spared = [deployment.active_revision_id, deployment.latest_revision_id].filter((id): id is string => id !== null);
  let doomed = db.selectFrom('revisions').select('id').where('deployment_id', '=', deployment.id).where('seq', '<=', below).where('status', 'in', finished);
  if (spared.length > 0) doomed = doomed.where('id', 'not in', spared);
  const ids = (await doomed.execute()).map((row) => row.id);
  if (ids.length === 0) return 0;
  await queueImageRemovals(db, { deploymentId: deployment.id, revisionIds: ids }, now);
  await db.deleteFrom('deployment_events').where('revision_id', 'in', ids).execute();
  await db.deleteFrom('engine_step_runs').where('revision_id', 'in', ids).execute();
  await db.deleteFrom('github_notices').where('revision_id', 'in', ids).execute();
  await db.deleteFrom('github_deployments').where('revision_id', 'in', ids).execute();
  await db.deleteFrom('revisions').where('id', 'in', ids).execute();
  await db
    .deleteFrom('resource_specs')
    .where('deployment_id', '=', deployment.id)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('revisions').select('id').whereRef('revisions.resource_spec_id', '=', 'resource_specs.id'))))
    .execute();
  await db
    .deleteFrom('secret_sets')
    .where('deployment_id', '=', deployment.id)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('revisions').select('id').whereRef('revisions.secret_set_id', '=', 'secret_sets.id'))))
    .execute();
  return ids.length;
}

/** Of the given deployments, the revisions a listener may run: handed over or deploying, and the active ones. */
export async function revisionsForListener(db: Executor, deploymentIds: readonly string[], activeIds: readonly string[]): Promise<RevisionRecord[]> {
  if (deploymentIds.length === 0) return [];
  return many(
    selectRevisions(db)
      .where('r.deployment_id', 'in', deploymentIds)
      .where((eb) => {
        const handedOver = eb('r.status', 'in', ['AWAITING_DEPLOY', 'DEPLOYING']);
        return activeIds.length > 0 ? eb.or([handedOver, eb('r.id', 'in', activeIds)]) : handedOver;
      })
      .orderBy('r.seq'),
  );
}

/** Revisions handed to a listener (or being deployed by it), with the listener and the deployment's deploy timeout. */
export async function handedOverRevisions(
  db: Executor,
): Promise<(RevisionRecord & { listener_id: string; deployment_deploy_timeout_seconds: number | null })[]> {
  const rows = await selectRevisions(db)
    .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
    .select(['d.listener_id', 'd.source_config as deployment_source_config'])
    .where('r.status', 'in', ['AWAITING_DEPLOY', 'DEPLOYING'])
    .where('d.listener_id', 'is not', null)
    .where('d.status', '!=', 'AWAITING_DELETE')
    .execute();
  return rows.map((row) => ({
    ...decodeRevision(row, row.spec),
    listener_id: row.listener_id as string,
    // Configurations stored before the setting existed lack it.
    deployment_deploy_timeout_seconds: (JSON.parse(row.deployment_source_config) as Partial<SourceConfig>).deploy_timeout_seconds ?? null,
  }));
}

/** When each revision was last handed over (its latest AWAITING_DEPLOY status event). */
export async function handoverTimes(db: Executor, revisionIds: readonly string[]): Promise<Map<string, string>> {
  if (revisionIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('deployment_events')
    .select(['revision_id', (eb) => eb.fn.max('created_at').as('at')])
    .where('revision_id', 'in', revisionIds)
    .where('kind', '=', 'status')
    .where('status', '=', 'AWAITING_DEPLOY')
    .groupBy('revision_id')
    .execute();
  return new Map(rows.flatMap((row) => (row.revision_id && row.at ? [[row.revision_id, String(row.at)] as const] : [])));
}

/** langgraph.json's `env` as stored for the revision (encrypted), or null. */
export async function configEnvOf(db: Executor, revisionId: string): Promise<string | null> {
  const row = await db.selectFrom('revisions').select('config_env_encrypted').where('id', '=', revisionId).executeTakeFirst();
  return row?.config_env_encrypted ?? null;
}

/** A revision whose image another may reuse: it has one, and its deployment is not being deleted. */
export interface BuiltImageCandidate {
  revision_id: string;
  deployment_id: string;
  seq: number;
  image_ref: string;
}

/**
 * Revisions of the workspace built from the same inputs, newest first. The key already
 * holds the workspace; the join on it too is so that no key, however made, can reach
 * another workspace's image.
 */
export async function builtWithKey(db: Executor, workspaceId: string, key: string, limit = 5): Promise<BuiltImageCandidate[]> {
  const rows = await db
    .selectFrom('revisions as r')
    .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
    .select(['r.id as revision_id', 'r.deployment_id', 'r.seq', 'r.image_ref'])
    .where('r.build_key', '=', key)
    .where('d.workspace_id', '=', workspaceId)
    .where('d.status', '!=', 'AWAITING_DELETE')
    .where('r.image_ref', 'is not', null)
    .orderBy('r.created_at', 'desc')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ ...row, image_ref: row.image_ref as string }));
}

function decodeBuild(column: string | null): RevisionBuild | null {
  return column === null ? null : (JSON.parse(column) as RevisionBuild);
}

/** What a revision that runs an image built before takes over from the newest revision of the deployment with that image. */
export async function buildOfImage(
  db: Executor,
  deploymentId: string,
  imageRef: string,
  exceptId: string,
): Promise<{ id: string; build: RevisionBuild | null; build_key: string | null; config_env_encrypted: string | null } | undefined> {
  const row = await db
    .selectFrom('revisions')
    .select(['id', 'build_inputs', 'build_key', 'config_env_encrypted'])
    .where('deployment_id', '=', deploymentId)
    .where('image_ref', '=', imageRef)
    .where('id', '!=', exceptId)
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!row) return undefined;
  const { build_inputs, ...rest } = row;
  return { ...rest, build: decodeBuild(build_inputs) };
}

/** Writes a new revision's build inputs and langgraph.json env (before the engine sees it: no status changes). */
export async function setRevisionBuild(
  db: Executor,
  revisionId: string,
  values: { build: RevisionBuild | null; build_key: string | null; config_env_encrypted: string | null },
): Promise<void> {
  const { build, ...rest } = values;
  await db
    .updateTable('revisions')
    .set({ ...rest, build_inputs: build === null ? null : JSON.stringify(build) })
    .where('id', '=', revisionId)
    .execute();
}
