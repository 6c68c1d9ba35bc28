/** Least to most severe: a `level` filter keeps that level and everything after it. */
export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The levels a `level` filter keeps (none for an unknown level). */
export function levelsAtOrAbove(level: string): LogLevel[] {
  const index = (LOG_LEVELS as readonly string[]).indexOf(level.toUpperCase());
  return index < 0 ? [] : LOG_LEVELS.slice(index);
}
