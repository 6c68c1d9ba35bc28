/**
 * Every wall-clock bound of the test suites goes through `deadline`: tests wait for signals,
 * and a deadline only decides when a wait that will not end is a failure. A busy machine
 * (CI shares two cores with other work) stretches everything, so one setting multiplies
 * every deadline: BERTH_TEST_DEADLINE_FACTOR (a number ≥ 1; default 1, `.ci/run` sets 4).
 * scripts/run-tests.ts reads the same factor for its per-file limits.
 */
export const DEADLINE_FACTOR_VARIABLE = 'BERTH_TEST_DEADLINE_FACTOR';

export function deadlineFactor(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[DEADLINE_FACTOR_VARIABLE];
  if (raw === undefined || raw.trim() === '') return 1;
  const factor = Number(raw);
  // A factor below 1 would only make a busy machine fail sooner: refuse it rather than obey.
  if (!Number.isFinite(factor) || factor < 1) throw new Error(`${DEADLINE_FACTOR_VARIABLE} must be a number of at least 1, not ${JSON.stringify(raw)}`);
  return factor;
}

const FACTOR = deadlineFactor();

/** `ms` (a generous bound for an idle machine) scaled by BERTH_TEST_DEADLINE_FACTOR. */
export function deadline(ms: number): number {
  return Math.round(ms * FACTOR);
}

/** The same in seconds, for settings and flags that take seconds. */
export function deadlineSeconds(seconds: number): number {
  return Math.ceil(seconds * FACTOR);
}
