/** SQLite and PostgreSQL both cap how many parameters one statement takes: long lists go in slices this long. */
const BATCH_SIZE = 500;

/** Runs `each` on consecutive slices of `items`, one after another. */
export async function inBatches<T>(items: readonly T[], each: (batch: T[]) => Promise<void>): Promise<void> {
  for (let start = 0; start < items.length; start += BATCH_SIZE) await each(items.slice(start, start + BATCH_SIZE));
}
