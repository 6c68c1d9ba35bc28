import type { Executor } from '../database.js';

/**
 * Who owns what an image name points at: the lookups behind the registry's naming rule
 * (registry/image-ownership.ts). Each is one read by primary key.
 */
export function imageOwners(db: Executor) {
  return {
    workspaceOfDeployment: (deploymentId: string) => workspaceOfDeployment(db, deploymentId),
    ownerOfRevision: (revisionId: string) => ownerOfRevision(db, revisionId),
  };
}

/** The workspace of a deployment, or undefined when no such deployment exists (any more). */
async function workspaceOfDeployment(db: Executor, deploymentId: string): Promise<string | undefined> {
  const row = await db.selectFrom('deployments').select('workspace_id').where('id', '=', deploymentId).executeTakeFirst();
  return row?.workspace_id;
}

/** The workspace and deployment name of a revision, or undefined when no such revision exists (any more). */
async function ownerOfRevision(db: Executor, revisionId: string): Promise<{ workspaceId: string; deploymentName: string } | undefined> {
  const row = await db
    .selectFrom('revisions')
    .innerJoin('deployments', 'deployments.id', 'revisions.deployment_id')
    .select(['deployments.workspace_id', 'deployments.name'])
    .where('revisions.id', '=', revisionId)
    .executeTakeFirst();
  return row && { workspaceId: row.workspace_id, deploymentName: row.name };
}
