import { type Expression, expressionBuilder, type SqlBool, sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import { type SourceConfig, type SourceSpelling, withServingUrl } from '../../domain/deployment-config.js';
import type { DeploymentStatus } from '../../domain/deployment-status.js';
import { type PreviewOrigin, type PreviewSettings, previewKey } from '../../domain/previews.js';
import { escapeLike } from '../like.js';
import { inJsonList } from '../json-list.js';
import { type Db, type Executor, isSqlite } from '../database.js';
import { preparedQuery } from '../prepared.js';
import type { ColumnChanges, Database } from '../schema.js';
import { queueImageRemovals } from './image-removals.js';
import { REVISION_COLUMNS, type RevisionColumns, type RevisionRecord, decodeRevision } from './revisions.js';

/** A deployment as the rest of Berth sees it; lease columns stay with the engine's repository. */
export interface DeploymentRecord {
  id: string;
  workspace_id: string;
  name: string;
  display_name: string | null;
  /** As given at creation (`github` and `codehost` are both kept as sent). */
  source: SourceSpelling;
  source_config: SourceConfig;
  deployment_type: string;
  listener_id: string | null;
  image_version: string | null;
  status: DeploymentStatus;
  remote_reconciled: boolean;
  latest_revision_id: string | null;
  active_revision_id: string | null;
  /** How many revisions were ever made: the next one is numbered one more. */
  revision_count: number;
  /** Set by a rollback: build on push makes no revision while it is (see `setPin`). */
  pinned_revision_id: string | null;
  pinned_at: string | null;
  /** A parent's preview settings; null when never set (previews off). */
  preview_settings: PreviewSettings | null;
  /** Set on previews only: the deployment it previews, what for, and when it last had a new commit. */
  parent_deployment_id: string | null;
  preview_origin: PreviewOrigin | null;
  preview_active_at: string | null;
  url: string | null;
  created_at: string;
  updated_at: string;
}

/** What a use case decides about a new deployment; counters and leases are the repository's. */
export type NewDeployment = Omit<
  DeploymentRecord,
  | 'status'
  | 'remote_reconciled'
  | 'latest_revision_id'
  | 'active_revision_id'
  | 'revision_count'
  | 'pinned_revision_id'
  | 'pinned_at'
  | 'preview_settings'
  | 'parent_deployment_id'
  | 'preview_origin'
  | 'preview_active_at'
  | 'url'
  | 'updated_at'
> & { preview?: { parentId: string; origin: PreviewOrigin } };

/** Fields a use case may change in place. */
export type DeploymentChanges = Partial<Pick<DeploymentRecord, 'source_config' | 'display_name' | 'image_version' | 'preview_settings'>> & {
  updated_at: string;
};

/** A deployment with its latest revision, read together because every answer shows both. */
export interface DeploymentWithLatest {
  deployment: DeploymentRecord;
  latest: RevisionRecord | undefined;
}

export interface DeploymentFilters {
  nameContains?: string;
  name?: string;
  statuses?: DeploymentStatus[];
  remoteReconciled?: boolean;
  imageVersion?: string;
  deploymentType?: string;
  ids?: string[];
  /** Berth has no tags yet: a non-empty tag filter matches nothing. */
  tagValueIds?: string[];
  /** Previews of this deployment only. */
  parentId?: string;
  /** Previews only (true), or no previews (false). */
  isPreview?: boolean;
}

export const DEPLOYMENT_COLUMNS = [
  'id',
  'workspace_id',
  'name',
  'display_name',
  'source',
  'source_config',
  'deployment_type',
  'listener_id',
  'image_version',
  'status',
  'remote_reconciled',
  'latest_revision_id',
  'active_revision_id',
  'revision_count',
  'pinned_revision_id',
  'pinned_at',
  'preview_settings',
  'parent_deployment_id',
  'preview_origin',
  'preview_active_at',
  'url',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof Database['deployments'])[];

export type DeploymentColumns = Pick<Database['deployments'], (typeof DEPLOYMENT_COLUMNS)[number]>;

/** Written out field by field: a generic copy over the joined columns was a tenth of a listing's time. */
export function decodeDeployment(row: DeploymentColumns): DeploymentRecord {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    name: row.name,
    display_name: row.display_name,
    source: row.source,
    source_config: JSON.parse(row.source_config) as SourceConfig,
    deployment_type: row.deployment_type,
    listener_id: row.listener_id,
    image_version: row.image_version,
    status: row.status,
    remote_reconciled: row.remote_reconciled === 1,
    latest_revision_id: row.latest_revision_id,
    active_revision_id: row.active_revision_id,
    revision_count: row.revision_count,
    pinned_revision_id: row.pinned_revision_id,
    pinned_at: row.pinned_at,
    preview_settings: row.preview_settings === null ? null : (JSON.parse(row.preview_settings) as PreviewSettings),
    parent_deployment_id: row.parent_deployment_id,
    preview_origin: row.preview_origin === null ? null : (JSON.parse(row.preview_origin) as PreviewOrigin),
    preview_active_at: row.preview_active_at,
    url: row.url,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Inserts the deployment. With `firstRevisionId` it is numbered for that revision already
 * (its counter at 1, the revision its latest), which the caller inserts next in the same
 * transaction (`insertFirstRevision`): one statement less than counting afterwards.
 */
export async function insertDeployment(
  db: Executor,
  { preview, ...deployment }: NewDeployment,
  firstRevisionId: string | null = null,
): Promise<DeploymentRecord> {
  const row: Database['deployments'] = {
    ...deployment,
    source_config: JSON.stringify(deployment.source_config),
    preview_settings: null,
    parent_deployment_id: preview?.parentId ?? null,
    preview_key: preview ? previewKey(preview.origin) : null,
    preview_origin: preview ? JSON.stringify(preview.origin) : null,
    preview_active_at: preview ? deployment.created_at : null,
    integration_id: deployment.source_config.integration_id,
    status: 'AWAITING_DATABASE',
    remote_reconciled: 0,
    latest_revision_id: firstRevisionId,
    active_revision_id: null,
    revision_count: firstRevisionId === null ? 0 : 1,
    pinned_revision_id: null,
    pinned_at: null,
    lease_owner: null,
    lease_expires_at: null,
    url: null,
    updated_at: deployment.created_at,
  };
  await insertDeploymentRow(db, row);
  return decodeDeployment(row);
}

const insertDeploymentRow = preparedQuery((db, row: Database['deployments']) => db.insertInto('deployments').values(row));

const LATEST = 'latest__';

/** Deployments with their columns, left-joined to their latest revision (`latest`) and its resource spec (`latest_spec`). */
function fromDeploymentsAndLatest(db: Executor) {
  return db
    .selectFrom('deployments')
    .leftJoin('revisions as latest', 'latest.id', 'deployments.latest_revision_id')
    .leftJoin('resource_specs as latest_spec', 'latest_spec.id', 'latest.resource_spec_id')
    .select(DEPLOYMENT_COLUMNS.map((column) => `deployments.${column}` as const));
}

/** Deployments joined to their latest revisions (and its resource spec), whose columns come back prefixed `latest__`. */
function selectWithLatest(db: Executor) {
  return fromDeploymentsAndLatest(db)
    .select((eb) => REVISION_COLUMNS.map((column) => eb.ref(`latest.${column}`).as(`${LATEST}${column}`)))
    .select('latest_spec.spec as latest__spec')
    .$castTo<JoinedRow>();
}

type JoinedRow = DeploymentColumns & { [Column in keyof RevisionColumns as `latest__${Column}`]: RevisionColumns[Column] | null } & {
  latest__spec: string | null;
};

function splitLatest(row: JoinedRow): DeploymentWithLatest {
  const deployment = decodeDeployment(row);
  if (row.latest__id === null) return { deployment, latest: undefined };
  const latest: RevisionColumns = {
    id: row.latest__id,
    deployment_id: row.latest__deployment_id as string,
    seq: row.latest__seq as number,
    source: row.latest__source as SourceSpelling,
    source_revision_config: row.latest__source_revision_config as string,
    secret_set_id: row.latest__secret_set_id,
    status: row.latest__status as RevisionColumns['status'],
    status_message: row.latest__status_message,
    remote_reconciled: row.latest__remote_reconciled as number,
    image_ref: row.latest__image_ref,
    runtime_handle: row.latest__runtime_handle,
    url: row.latest__url,
    build_inputs: row.latest__build_inputs,
    created_at: row.latest__created_at as string,
    updated_at: row.latest__updated_at as string,
  };
  return { deployment, latest: decodeRevision(latest, row.latest__spec) };
}

/** What an answer about a deployment shows of its latest revision. */
export type LatestForView = Pick<RevisionRecord, 'source_revision_config' | 'resource_spec' | 'secret_set_id'>;

/**
 * A deployment with what its answer shows of its latest revision, and no more: reading the
 * revision's other eleven columns for every deployment of a page cost a listing ~50 µs
 * (bench/results.md, 2026-11-25).
 */
export interface DeploymentForView {
  deployment: DeploymentRecord;
  latest: LatestForView | undefined;
}

/** Every statement that reads it is prepared: Kysely builds it once per shape. */
function selectForView(db: Executor) {
  return fromDeploymentsAndLatest(db).select([
    'latest.source_revision_config as latest__config',
    'latest.secret_set_id as latest__secret_set_id',
    'latest_spec.spec as latest__spec',
  ]);
}

type ViewRow = DeploymentColumns & { latest__config: string | null; latest__secret_set_id: string | null; latest__spec: string | null };

function decodeForView(row: ViewRow): DeploymentForView {
  const deployment = decodeDeployment(row);
  if (row.latest__config === null) return { deployment, latest: undefined };
  return {
    deployment,
    latest: {
      source_revision_config: JSON.parse(row.latest__config) as RevisionRecord['source_revision_config'],
      resource_spec: row.latest__spec === null ? null : (JSON.parse(row.latest__spec) as RevisionRecord['resource_spec']),
      secret_set_id: row.latest__secret_set_id,
    },
  };
}

const selectOneForView = preparedQuery((db, workspaceId: string, id: string) =>
  selectForView(db).where('deployments.id', '=', id).where('deployments.workspace_id', '=', workspaceId),
);

export async function findDeploymentForView(db: Executor, workspaceId: string, id: string): Promise<DeploymentForView | undefined> {
  const [row] = await selectOneForView(db, workspaceId, id);
  return row && decodeForView(row);
}

export async function findDeployment(db: Executor, workspaceId: string, id: string): Promise<DeploymentRecord | undefined> {
  const row = await db.selectFrom('deployments').select(DEPLOYMENT_COLUMNS).where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
  return row && decodeDeployment(row);
}

/** For the engine and the lifecycle, which work across workspaces. */
export async function findDeploymentById(db: Executor, id: string): Promise<DeploymentRecord | undefined> {
  const row = await db.selectFrom('deployments').select(DEPLOYMENT_COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && decodeDeployment(row);
}

/**
 * Reads the deployment and takes its row lock for the rest of the transaction (a write
 * does on both databases), so concurrent PATCHes of one deployment queue up instead of
 * numbering two revisions alike.
 */
export async function lockDeployment(db: Executor, workspaceId: string, id: string, now: string): Promise<DeploymentRecord | undefined> {
  const row = await db
    .updateTable('deployments')
    .set({ updated_at: now })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .returning(DEPLOYMENT_COLUMNS)
    .executeTakeFirst();
  return row && decodeDeployment(row);
}

/**
 * Takes the deployment's row lock like `lockDeployment` and answers the row as it was
 * (nothing changes), so that what a client read can be compared with it (`If-Match`).
 */
export async function lockDeploymentAsIs(db: Executor, workspaceId: string, id: string): Promise<DeploymentRecord | undefined> {
  const row = await db
    .updateTable('deployments')
    .set({ updated_at: sql.ref('updated_at') })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .returning(DEPLOYMENT_COLUMNS)
    .executeTakeFirst();
  return row && decodeDeployment(row);
}

/**
 * Compare-and-set of the pin: moves it from `expected` (a revision id, or null for not
 * pinned) to `next`; false when another writer changed it first. Callers hold the row
 * lock, so this only fails when they read the pin outside it.
 */
export async function setPin(db: Executor, id: string, expected: string | null, next: { revisionId: string; at: string } | null): Promise<boolean> {
  const result = await db
    .updateTable('deployments')
    .set({ pinned_revision_id: next?.revisionId ?? null, pinned_at: next?.at ?? null })
    .where('id', '=', id)
    .where((eb) => (expected === null ? eb('pinned_revision_id', 'is', null) : eb('pinned_revision_id', '=', expected)))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function updateDeployment(db: Executor, id: string, changes: DeploymentChanges): Promise<void> {
  const { source_config, preview_settings, ...plain } = changes;
  await db
    .updateTable('deployments')
    .set({
      ...plain,
      ...(source_config ? { source_config: JSON.stringify(source_config) } : {}),
      ...(preview_settings ? { preview_settings: JSON.stringify(preview_settings) } : {}),
    })
    .where('id', '=', id)
    .execute();
}

/**
 * Compare-and-set on the status, with what the new status brings along; false when
 * another writer moved it first. Only the lifecycle module calls it.
 */
export async function compareAndSetDeploymentStatus(
  db: Executor,
  change: {
    id: string;
    from: readonly DeploymentStatus[];
    to: DeploymentStatus;
    now: string;
    /** The engine worker that must hold the lease, when the engine writes. */
    leaseOwner?: string;
    /** The listener the deployment must be placed on, when a listener's report writes. */
    listenerId?: string;
    set?: Partial<Pick<DeploymentRecord, 'active_revision_id' | 'url' | 'source_config'>>;
    /** Only while nothing serves (a deployment that never deployed becomes UNUSED). */
    requireInactive?: boolean;
  },
): Promise<boolean> {
  const { source_config, ...plain } = change.set ?? {};
  const values: StatusChangeColumns = {
    ...plain,
    source_config: source_config ? JSON.stringify(source_config) : undefined,
    status: change.to,
    updated_at: change.now,
  };
  const fences: DeploymentFences = { lease_owner: change.leaseOwner, listener_id: change.listenerId };
  const update = change.requireInactive ? setStatusWhileInactive : setStatus;
  return (await update(db, values, change.id, change.from, fences)).length > 0;
}

type StatusChangeColumns = ColumnChanges<'deployments'>;
/** Columns that must hold the given value for the change to apply. */
type DeploymentFences = { lease_owner?: string; listener_id?: string };

function updateStatus(db: Executor, values: StatusChangeColumns, id: string, from: readonly DeploymentStatus[], fences: DeploymentFences) {
  let query = db.updateTable('deployments').set(values).where('id', '=', id).where('status', 'in', from);
  // The fences set (the query's shape: store/prepared.ts leaves out undefined ones).
  for (const [column, value] of Object.entries(fences) as [keyof DeploymentFences, string | undefined][]) {
    if (value !== undefined) query = query.where(column, '=', value);
  }
  return query;
}

const setStatus = preparedQuery((db, values: StatusChangeColumns, id: string, from: readonly DeploymentStatus[], fences: DeploymentFences) =>
  updateStatus(db, values, id, from, fences).returning('id'),
);

const setStatusWhileInactive = preparedQuery((db, values: StatusChangeColumns, id: string, from: readonly DeploymentStatus[], fences: DeploymentFences) =>
  updateStatus(db, values, id, from, fences).where('active_revision_id', 'is', null).returning('id'),
);

/** Deletes the deployment (its revisions, events and stored inputs cascade) if the engine worker still holds it. */
export async function deleteDeploymentHeldBy(db: Db, id: string, worker: string): Promise<boolean> {
  // The images it built are queued for removal in the same transaction: a delete that commits
  // has them queued, and one that does not (the lease moved on) queues nothing.
  return db.transaction().execute(async (trx) => {
    await queueImageRemovals(trx, { deploymentId: id, leaseOwner: worker }, new Date().toISOString());
    const result = await trx.deleteFrom('deployments').where('id', '=', id).where('lease_owner', '=', worker).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  });
}

export async function listDeployments(
  db: Executor,
  workspaceId: string,
  filters: DeploymentFilters,
  page: { limit: number; offset: number },
): Promise<DeploymentForView[]> {
  if (filters.tagValueIds && filters.tagValueIds.length > 0) return [];
  const candidates = filters.nameContains === undefined ? undefined : await searchCandidates(db, filters.nameContains);
  if (candidates?.length === 0) return [];
  const rows = await listingPage(db, listingValues(workspaceId, filters, candidates), filters.statuses ?? [], page.limit, page.offset);
  return rows.map(decodeForView);
}

/** The listing's conditions that compare one value each; those not asked for are left out. */
type ListingValues = {
  workspace_id: string;
  /** `name_contains`, lower-cased and escaped for LIKE. */
  name_pattern?: string;
  name?: string;
  remote_reconciled?: number;
  image_version?: string;
  deployment_type?: string;
  /** `deployment_ids`, as a JSON list. */
  ids?: string;
  /** The ids the search index found for `name_contains`, as a JSON list. */
  candidates?: string;
  parent_deployment_id?: string;
  /** 1: previews only; 0: no previews. */
  is_preview?: number;
};

function listingValues(workspaceId: string, filters: DeploymentFilters, candidates: string[] | undefined): ListingValues {
  return {
    workspace_id: workspaceId,
    name_pattern: filters.nameContains ? `%${escapeLike(filters.nameContains.toLowerCase())}%` : undefined,
    name: filters.name,
    remote_reconciled: filters.remoteReconciled === undefined ? undefined : filters.remoteReconciled ? 1 : 0,
    image_version: filters.imageVersion,
    deployment_type: filters.deploymentType,
    // One parameter for any number of ids: the statement stays one, compiled once.
    ids: filters.ids && filters.ids.length > 0 ? JSON.stringify(filters.ids) : undefined,
    candidates: candidates && JSON.stringify(candidates),
    parent_deployment_id: filters.parentId,
    is_preview: filters.isPreview === undefined ? undefined : filters.isPreview ? 1 : 0,
  };
}

/**
 * A page of the listing, compiled once for each set of filters given and each number of
 * statuses (prepared.ts): on PostgreSQL also planned once, where planning a search with
 * its candidates written out cost ~1.1 ms, more than running it (bench/results.md).
 */
const listingPage = preparedQuery((db, values: ListingValues, statuses: readonly DeploymentStatus[], limit: number, offset: number) => {
  const where = listingConditions(db, values, statuses);
  if (!drivenByIds(values))
    return selectForView(db).where(where).orderBy('deployments.created_at', 'desc').orderBy('deployments.id', 'desc').limit(limit).offset(offset);
  // The page's ids are chosen among the listed ones first: joining every candidate to its
  // revision and sorting the wide rows cost a rare search most of its time.
  const pageIds = db
    .selectFrom('deployments')
    .select('deployments.id')
    .where(where)
    .orderBy('deployments.created_at', 'desc')
    .orderBy('deployments.id', 'desc')
    .limit(limit)
    .offset(offset);
  return selectForView(db).where('deployments.id', 'in', pageIds).orderBy('deployments.created_at', 'desc').orderBy('deployments.id', 'desc');
});

/**
 * The listing's filters as one condition on `deployments`. It follows only which values
 * are given and how many statuses, never what they are, so that it can be compiled once
 * for each such shape (prepared.ts).
 */
function listingConditions(db: Executor, values: ListingValues, statuses: readonly DeploymentStatus[]): Expression<SqlBool> {
  const eb = expressionBuilder<Database, 'deployments'>();
  const conditions: Expression<SqlBool>[] = [];
  const byIds = drivenByIds(values);
  if (byIds) {
    // An expression of the column (`|| ''`) keeps both planners off the listing index, so
    // that the few ids drive the plan (SQLite walked the whole workspace for them, 10 ms at
    // 100,000 deployments).
    conditions.push(sql<SqlBool>`(deployments.workspace_id || '') = ${values.workspace_id}`);
  } else {
    conditions.push(eb('deployments.workspace_id', '=', values.workspace_id));
  }
  if (values.candidates !== undefined) conditions.push(inJsonList(db, 'deployments.id', values.candidates));
  if (values.ids !== undefined) conditions.push(inJsonList(db, 'deployments.id', values.ids));
  if (values.name_pattern !== undefined) {
    // Explicit ESCAPE: SQLite has no default escape character for LIKE. The LIKE decides the
    // answer in every plan; the trigram index only narrows the rows it is asked about.
    // With candidates, `|| ''` keeps PostgreSQL from weighing the trigram index again while
    // planning (more than the query itself costs) and from scanning it a second time.
    // On SQLite LIKE already ignores the case of ASCII letters and lower() folds nothing
    // else (no ICU), so lower() adds only its cost: ~20 µs a page over the ~500 names a
    // common needle's page reads.
    const name = byIds ? sql`lower(deployments.name || '')` : isSqlite(db) ? sql`deployments.name` : sql`lower(deployments.name)`;
    conditions.push(sql<SqlBool>`${name} like ${values.name_pattern} escape '\\'`);
  }
  if (values.name !== undefined) {
    // Names are unique without regard to case, and only `lower(name)` is indexed (with the
    // workspace): the implied condition on it finds the one row by index instead of reading
    // the workspace's every deployment; `name =` keeps the match exact.
    // (The database's own lower() on both sides: it may fold case differently from JS.)
    conditions.push(sql<SqlBool>`lower(deployments.name) = lower(${values.name})`, eb('deployments.name', '=', values.name));
  }
  if (statuses.length > 0) {
    // Without statistics SQLite takes any equality on an index to be selective, and would
    // walk the status index's tens of thousands of READY rows instead of the candidates.
    conditions.push(byIds ? sql<SqlBool>`(deployments.status || '') in (${sql.join(statuses)})` : eb('deployments.status', 'in', statuses));
  }
  if (values.remote_reconciled !== undefined) conditions.push(eb('deployments.remote_reconciled', '=', values.remote_reconciled));
  if (values.image_version !== undefined) conditions.push(eb('deployments.image_version', '=', values.image_version));
  if (values.deployment_type !== undefined) conditions.push(eb('deployments.deployment_type', '=', values.deployment_type));
  if (values.parent_deployment_id !== undefined) conditions.push(eb('deployments.parent_deployment_id', '=', values.parent_deployment_id));
  if (values.is_preview !== undefined) {
    // The value decides which of two conditions, and the statement is compiled per shape:
    // the constant is compared in SQL so that one statement serves both answers.
    conditions.push(sql<SqlBool>`(CASE WHEN deployments.parent_deployment_id IS NULL THEN 0 ELSE 1 END) = ${values.is_preview}`);
  }
  return eb.and(conditions);
}

/** Asked for by id, or searched with the candidates the index found: those few rows drive the plan. */
function drivenByIds(values: ListingValues): boolean {
  return values.candidates !== undefined || values.ids !== undefined;
}

/** More hits than this and walking the listing index finds a page sooner than sorting them all. */
const SEARCH_CANDIDATE_LIMIT = 500;

/**
 * The ids of every deployment, in any workspace, whose name may contain the needle, from
 * the trigram index; undefined when the index is not the cheaper way: a needle shorter than
 * a trigram, or one so common that walking the listing index finds a page sooner.
 *
 * On both databases the decision is made here rather than by the planner. SQLite has no
 * statistics to weigh the FTS5 table with. PostgreSQL does, but estimates the rows a LIKE
 * matches as if they were spread evenly over time: for a rare needle whose matches are all
 * old it walked the listing index backwards through 80,000 rows (36 ms) to fill a page the
 * trigram index fills in 1 ms (bench/results.md).
 */
async function searchCandidates(db: Executor, needle: string): Promise<string[] | undefined> {
  if ([...needle].length < 3) return undefined;
  const key = needle.toLowerCase();
  // Fetching the candidates of a common needle costs more than the scan it would replace
  // (~0.9 ms against ~0.1 ms at 100,000 names), so a needle found common is remembered as
  // such for a while: a search box asks for the same needle again, page after page.
  if (COMMON_NEEDLES.has(key)) return undefined;
  const { rows } = isSqlite(db)
    ? await sql<{ deployment_id: string }>`
        SELECT k.deployment_id FROM deployment_name_search s JOIN deployment_search_keys k ON k.key = s.rowid
        WHERE deployment_name_search MATCH ${trigramPhrase(needle)} LIMIT ${SEARCH_CANDIDATE_LIMIT}`.execute(db)
    : { rows: await candidatesOnPostgres(db, `%${escapeLike(key)}%`) };
  if (rows.length < SEARCH_CANDIDATE_LIMIT) return rows.map((row) => row.deployment_id);
  COMMON_NEEDLES.set(key, true);
  return undefined;
}

/**
 * Prepared: after its first five runs on a connection PostgreSQL settles on one generic
 * plan, a trigram scan of the GIN index whatever the pattern. Planned for each needle, it
 * read ~300 index pages to estimate how many names match (~1.4 ms, three times what the
 * scan then took; bench/results.md).
 */
const candidatesOnPostgres = preparedQuery((db, pattern: string) =>
  db
    .selectFrom('deployments')
    .select('id as deployment_id')
    .where(sql<SqlBool>`lower(name) LIKE ${pattern} ESCAPE '\\'`)
    .limit(SEARCH_CANDIDATE_LIMIT),
);

/** Needles with too many candidates for the index to pay; forgetting one only costs a probe. */
const COMMON_NEEDLES = new LRUCache<string, true>({ max: 1_000, ttl: 60_000 });

/** An FTS5 string literal: the needle as one phrase, which the trigram tokenizer matches as a substring. */
function trigramPhrase(needle: string): string {
  return `"${needle.replaceAll('"', '""')}"`;
}

/** How many deployments build from the integration (deleting it is refused while any do). */
export async function countDeploymentsOfIntegration(db: Executor, integrationId: string): Promise<number> {
  const row = await db
    .selectFrom('deployments')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('integration_id', '=', integrationId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Code-host deployments of an integration that build on push, each with its latest revision (whose ref it tracks). */
export async function deploymentsBuildingOnPush(db: Executor, integrationId: string): Promise<DeploymentWithLatest[]> {
  const rows = await selectWithLatest(db)
    .where('deployments.integration_id', '=', integrationId)
    .where('deployments.status', '!=', 'AWAITING_DELETE')
    .execute();
  return rows.map(splitLatest).filter(({ deployment }) => deployment.source_config.build_on_push === true);
}

// Every poll of a listener's agent reads this.
const selectOnListener = preparedQuery((db: Executor, listenerId: string) =>
  db.selectFrom('deployments').select(DEPLOYMENT_COLUMNS).where('listener_id', '=', listenerId).orderBy('created_at').orderBy('id'),
);

/** The deployments placed on a listener (those being deleted included), oldest first. */
export async function deploymentsOnListener(db: Executor, listenerId: string): Promise<DeploymentRecord[]> {
  return (await selectOnListener(db, listenerId)).map(decodeDeployment);
}

/**
 * The listener reported a deployment being deleted gone: it is no longer placed there, and
 * the engine finishes the delete as for any other. False when it was not being deleted on
 * that listener.
 */
export async function releaseFromListener(db: Executor, id: string, listenerId: string): Promise<boolean> {
  const result = await db
    .updateTable('deployments')
    .set({ listener_id: null })
    .where('id', '=', id)
    .where('listener_id', '=', listenerId)
    .where('status', '=', 'AWAITING_DELETE')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** A listener reported the revision applied: it and its deployment count as `remote_reconciled`. */
export async function markRemoteReconciled(db: Executor, deploymentId: string, revisionId: string): Promise<void> {
  await db.updateTable('revisions').set({ remote_reconciled: 1 }).where('id', '=', revisionId).execute();
  await db.updateTable('deployments').set({ remote_reconciled: 1 }).where('id', '=', deploymentId).execute();
}

/**
 * The listener now serves the deployment's active revision somewhere else (a container host
 * restarted it on another port, a cluster Service moved): the revision and the deployment
 * take the new URL, and so does `custom_url` where Berth had filled it. Fenced like a
 * report: only while the deployment is placed on that listener and still serves that
 * revision. False when nothing changed.
 */
export async function moveServingUrl(
  db: Executor,
  change: { deploymentId: string; revisionId: string; listenerId: string; url: string; previousUrl: string | null; now: string },
): Promise<boolean> {
  const deployment = await db
    .selectFrom('deployments')
    .select(DEPLOYMENT_COLUMNS)
    .where('id', '=', change.deploymentId)
    .where('listener_id', '=', change.listenerId)
    .where('active_revision_id', '=', change.revisionId)
    .where('status', '!=', 'AWAITING_DELETE')
    .executeTakeFirst();
  if (!deployment) return false;
  const sourceConfig = withServingUrl(decodeDeployment(deployment).source_config, change.previousUrl, change.url);
  const revision = await db
    .updateTable('revisions')
    .set({ url: change.url, updated_at: change.now })
    .where('id', '=', change.revisionId)
    .where('status', '=', 'DEPLOYED')
    .executeTakeFirst();
  if (Number(revision.numUpdatedRows) === 0) return false;
  await db
    .updateTable('deployments')
    .set({ url: change.url, source_config: JSON.stringify(sourceConfig), updated_at: change.now })
    .where('id', '=', change.deploymentId)
    .execute();
  return true;
}
