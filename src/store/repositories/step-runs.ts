import type { Executor } from '../database.js';
import { preparedQuery } from '../prepared.js';

/** Records that a worker started a step, so overlapping executions can be found later. */
export async function startStepRun(db: Executor, run: { revisionId: string; step: string; worker: string; at: string }): Promise<number> {
  const [row] = await insertStepRun(db, run.revisionId, run.step, run.worker, run.at);
  if (!row) throw new Error('engine_step_runs: the insert returned no id');
  return Number(row.id);
}

const insertStepRun = preparedQuery((db, revisionId: string, step: string, worker: string, at: string) =>
  db.insertInto('engine_step_runs').values({ revision_id: revisionId, step, worker, started_at: at, finished_at: null, outcome: null }).returning('id'),
);

export interface StepRunEnd {
  id: number;
  outcome: string;
  at: string;
}

export async function finishStepRuns(db: Executor, ends: readonly StepRunEnd[]): Promise<void> {
  for (const end of ends) await finishStepRun(db, end.id, end.outcome, end.at);
}

const finishStepRun = preparedQuery((db, id: number, outcome: string, at: string) =>
  db.updateTable('engine_step_runs').set({ finished_at: at, outcome }).where('id', '=', id),
);
