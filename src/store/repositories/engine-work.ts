import { IN_PROGRESS_STATUSES } from '../../domain/revision-status.js';
import type { Executor } from '../database.js';
import { preparedQuery } from '../prepared.js';
import { DEPLOYMENT_COLUMNS, type DeploymentColumns, type DeploymentRecord, decodeDeployment } from './deployments.js';
import { decodeRevision, REVISION_COLUMNS, type RevisionColumns, type RevisionRecord } from './revisions.js';
import type { SecretEntryRow } from './secret-sets.js';

const IN_PROGRESS = [...IN_PROGRESS_STATUSES];

/** What the engine needs to decide its next step for a deployment, read at once. */
export interface DeploymentWork {
  deployment: DeploymentRecord;
  /** Revisions in progress, oldest first. */
  unfinished: RevisionRecord[];
  /** The stored secrets of those revisions, by set. */
  secretEntries: Map<string, SecretEntryRow[]>;
  /** Whether Berth provisioned databases for the deployment (their URIs go to its containers). */
  hasDatabases: boolean;
}

const PREFIX = 'r__';

type WorkRow = DeploymentColumns & { [Column in keyof RevisionColumns as `r__${Column}`]: RevisionColumns[Column] | null } & {
  r__spec: string | null;
  e__set_id: string | null;
  e__position: number | null;
  e__name: string | null;
  e__value_encrypted: string | null;
  has_databases: unknown;
};

const selectWork = preparedQuery((db: Executor, id: string) =>
  db
    .selectFrom('deployments as d')
    .leftJoin('revisions as r', (join) => join.onRef('r.deployment_id', '=', 'd.id').on('r.status', 'in', IN_PROGRESS))
    .leftJoin('resource_specs as spec', 'spec.id', 'r.resource_spec_id')
    .leftJoin('secret_set_entries as e', 'e.set_id', 'r.secret_set_id')
    .select(DEPLOYMENT_COLUMNS.map((column) => `d.${column}` as const))
    .select((eb) => REVISION_COLUMNS.map((column) => eb.ref(`r.${column}`).as(`${PREFIX}${column}`)))
    .select(['spec.spec as r__spec', 'e.set_id as e__set_id', 'e.position as e__position', 'e.name as e__name', 'e.value_encrypted as e__value_encrypted'])
    .select((eb) => eb.exists(eb.selectFrom('deployment_resources as res').select('res.kind').whereRef('res.deployment_id', '=', 'd.id')).as('has_databases'))
    .where('d.id', '=', id)
    .orderBy('r.seq')
    .orderBy('e.position')
    .$castTo<WorkRow>(),
);

/**
 * The deployment, its revisions in progress with their resource specs and secrets, and
 * whether it has databases: one statement, so each of the engine's steps starts from one
 * read. A revision's row repeats once per secret of its set.
 */
export async function readDeploymentWork(db: Executor, id: string): Promise<DeploymentWork | undefined> {
  const rows = await selectWork(db, id);
  const first = rows[0];
  if (!first) return undefined;
  const unfinished: RevisionRecord[] = [];
  const secretEntries = new Map<string, SecretEntryRow[]>();
  for (const row of rows) {
    if (row.r__id === null) continue;
    if (unfinished.at(-1)?.id !== row.r__id) {
      const columns = Object.fromEntries(REVISION_COLUMNS.map((column) => [column, row[`${PREFIX}${column}`]])) as RevisionColumns;
      unfinished.push(decodeRevision(columns, row.r__spec));
      if (row.r__secret_set_id !== null && !secretEntries.has(row.r__secret_set_id)) secretEntries.set(row.r__secret_set_id, []);
    }
    if (row.e__set_id !== null && row.e__position !== null && row.e__name !== null && row.e__value_encrypted !== null) {
      const entries = secretEntries.get(row.e__set_id) as SecretEntryRow[];
      // Two revisions may share a set: its entries come once per revision.
      if (!entries.some((entry) => entry.position === row.e__position)) {
        entries.push({ set_id: row.e__set_id, position: row.e__position, name: row.e__name, value_encrypted: row.e__value_encrypted });
      }
    }
  }
  return { deployment: decodeDeployment(first), unfinished, secretEntries, hasDatabases: Boolean(Number(first.has_databases)) };
}

const releaseIfSettled = preparedQuery((db: Executor, deploymentId: string, worker: string) =>
  db
    .updateTable('deployments')
    .set({ lease_owner: null, lease_expires_at: null })
    .where('id', '=', deploymentId)
    .where('lease_owner', '=', worker)
    .where('status', '!=', 'AWAITING_DELETE')
    .where('active_revision_id', 'is not', null)
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('revisions').select('id').whereRef('revisions.deployment_id', '=', 'deployments.id').where('status', 'in', IN_PROGRESS))),
    )
    .returning('id'),
);

/**
 * Gives up the lease when the engine has nothing left to do for the deployment: no
 * revision in progress, not being deleted, and a revision serving (else it would become
 * UNUSED, a status change that goes through the lifecycle). One statement instead of a
 * read and a release; false means look again.
 */
export async function releaseLeaseIfSettled(db: Executor, deploymentId: string, worker: string): Promise<boolean> {
  return (await releaseIfSettled(db, deploymentId, worker)).length > 0;
}
