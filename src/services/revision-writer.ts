import { randomUUID } from 'node:crypto';
import type { RevisionPlan } from '../domain/patch.js';
import { TERMINAL_STATUSES } from '../domain/revision-status.js';
import type { Executor } from '../store/database.js';
import { insertDeployment, type DeploymentRecord, type NewDeployment } from '../store/repositories/deployments.js';
import { insertFirstRevision, insertRevision, pruneRevisions, type RevisionRecord } from '../store/repositories/revisions.js';
import type { DeploymentRecords } from './deployment-records.js';

const FINISHED = [...TERMINAL_STATUSES];

/**
 * Adds the next revision of a deployment, with its secrets and resource spec stored once
 * per distinct content, makes it the latest, and drops the oldest finished revisions
 * beyond `keep`. Call inside a transaction that holds the deployment's row lock
 * (`lockDeployment`), so the revision number cannot be taken twice.
 */
export async function appendRevision(
  trx: Executor,
  records: DeploymentRecords,
  deployment: DeploymentRecord,
  plan: RevisionPlan,
  options: { now: string; keep: number },
): Promise<RevisionRecord> {
  const revision = await insertRevision(trx, {
    id: randomUUID(),
    deployment_id: deployment.id,
    source: deployment.source,
    source_revision_config: plan.config,
    resource_spec: plan.resourceSpec,
    secret_set_id: await records.storeSecrets(trx, deployment.id, plan.secrets, options.now),
    image_ref: plan.imageRef ?? null,
    created_at: options.now,
  });
  await records.inheritBuild(trx, revision);
  deployment.revision_count = revision.seq;
  deployment.latest_revision_id = revision.id;
  deployment.updated_at = options.now;
  await pruneRevisions(trx, deployment, options.keep, FINISHED, options.now);
  return revision;
}

/**
 * Inserts a new deployment with its first revision, in the caller's transaction. Nothing is
 * stored for the deployment yet, so nothing is looked up, counted, inherited or pruned: the
 * statements are the inserts alone, each a round trip inside the transaction on PostgreSQL.
 */
export async function insertWithFirstRevision(
  trx: Executor,
  records: DeploymentRecords,
  newDeployment: NewDeployment,
  plan: RevisionPlan,
): Promise<{ deployment: DeploymentRecord; revision: RevisionRecord }> {
  const now = newDeployment.created_at;
  const revisionId = randomUUID();
  const deployment = await insertDeployment(trx, newDeployment, revisionId);
  const secretSetId = await records.storeSecrets(trx, deployment.id, plan.secrets, now, { deploymentIsNew: true });
  const revision = await insertFirstRevision(
    trx,
    {
      id: revisionId,
      deployment_id: deployment.id,
      source: deployment.source,
      source_revision_config: plan.config,
      resource_spec: plan.resourceSpec,
      secret_set_id: secretSetId,
      image_ref: plan.imageRef ?? null,
      created_at: now,
    },
    deployment.workspace_id,
  );
  return { deployment, revision };
}
