import type { Executor } from '../database.js';

/** Records that a worker started a step, so overlapping executions can be found later. */
export async function startStepRun(db: Executor, run: { revisionId: string; step: string; worker: string; at: string }): Promise<number> {
  const row = await db
    .insertInto('engine_step_runs')
    .values({ revision_id: run.revisionId, step: run.step, worker: run.worker, started_at: run.at, finished_at: null, outcome: null })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

export interface StepRunEnd {
  id: number;
  outcome: string;
  at: string;
}

export async function finishStepRuns(db: Executor, ends: readonly StepRunEnd[]): Promise<void> {
  for (const end of ends) await db.updateTable('engine_step_runs').set({ finished_at: end.at, outcome: end.outcome }).where('id', '=', end.id).execute();
}
