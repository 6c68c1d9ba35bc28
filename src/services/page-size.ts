/**
 * Bytes of JSON one page of a listing holds at most: past it the page ends early, and
 * its `offset` (or `next_offset`) says where the next one starts, as for a short page. A
 * page always holds at least one item, so a client always gets on.
 *
 * With the limits on what a deployment stores (MAX_RESOURCE_SPEC_BYTES,
 * MAX_SECRETS_BYTES and the schema's string lengths), one deployment is at most about
 * 7 MiB of JSON (1 MiB of secrets can be 6 MiB once control characters are escaped), a
 * revision about 0.8 MiB, so 100 of them could be 700 or 80 MiB without this. A listener
 * is at most about 70 KB (1,000 namespaces of 63 characters), so a page of 100 stays
 * under this bound and is never cut.
 */
export const PAGE_BYTES = 8 * 1024 * 1024;

/** Texts up to this long count at their worst (6 bytes a character); longer ones are measured. */
const MEASURED_TEXT = 256;

/**
 * An upper bound of the bytes `value` takes as JSON, cheap enough to run on every item of
 * every page (a tenth of the cost of writing it out): a short text counts 6 bytes a
 * character (`\u0001` is the longest a UTF-16 unit becomes), a long one is measured, and
 * a number, boolean or null counts 24.
 */
export function jsonBytesAtMost(value: unknown): number {
  if (typeof value === 'string') return textBytes(value);
  if (value === null || typeof value !== 'object') return 24;
  let bytes = 2;
  if (Array.isArray(value)) {
    for (const item of value) bytes += jsonBytesAtMost(item) + 1;
    return bytes;
  }
  for (const key in value) bytes += textBytes(key) + jsonBytesAtMost((value as Record<string, unknown>)[key]) + 1;
  return bytes;
}

function textBytes(text: string): number {
  if (text.length <= MEASURED_TEXT) return text.length * 6 + 2;
  // Most texts need no escaping: counting their bytes is enough.
  return /[\u0000-\u001f"\\\ud800-\udfff]/.test(text) ? Buffer.byteLength(JSON.stringify(text)) : Buffer.byteLength(text) + 2;
}

/** Collects a page's items while they fit in PAGE_BYTES. */
export class PageBudget<T> {
  readonly items: T[] = [];
  #bytes = 0;

  constructor(private readonly limit = PAGE_BYTES) {}

  /** Adds the item if it fits (the first always does); false, and not added, once one does not. */
  add(item: T): boolean {
    const bytes = jsonBytesAtMost(item);
    if (this.items.length > 0 && this.#bytes + bytes > this.limit) return false;
    this.#bytes += bytes;
    this.items.push(item);
    return true;
  }
}
