import type { Executor } from '../database.js';

export type LabelScope = 'workspace' | 'listener';

/** The labels a workspace or listener requires of the runners that build for it; none when it never set any. */
export async function findRequiredLabels(db: Executor, scope: LabelScope, scopeId: string): Promise<string[]> {
  const row = await db.selectFrom('runner_label_requirements').select('labels').where('scope', '=', scope).where('scope_id', '=', scopeId).executeTakeFirst();
  return row ? (JSON.parse(row.labels) as string[]) : [];
}

export async function setRequiredLabels(
  db: Executor,
  requirement: { scope: LabelScope; scopeId: string; organizationId: string; labels: readonly string[] },
  now: string,
): Promise<void> {
  const labels = JSON.stringify(requirement.labels);
  await db
    .insertInto('runner_label_requirements')
    .values({ scope: requirement.scope, scope_id: requirement.scopeId, organization_id: requirement.organizationId, labels, updated_at: now })
    .onConflict((oc) => oc.columns(['scope', 'scope_id']).doUpdateSet({ labels, updated_at: now }))
    .execute();
}

/** What a build of the deployment requires: its workspace's labels and those of the listener it runs on, together, sorted. */
export async function requiredLabelsOfBuild(db: Executor, workspaceId: string, listenerId: string | null): Promise<string[]> {
  const rows = await db
    .selectFrom('runner_label_requirements')
    .select('labels')
    .where((eb) =>
      eb.or([
        eb.and([eb('scope', '=', 'workspace'), eb('scope_id', '=', workspaceId)]),
        ...(listenerId ? [eb.and([eb('scope', '=', 'listener'), eb('scope_id', '=', listenerId)])] : []),
      ]),
    )
    .execute();
  return [...new Set(rows.flatMap((row) => JSON.parse(row.labels) as string[]))].sort();
}
