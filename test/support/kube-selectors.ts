/**
 * Label and field selectors as the Kubernetes API reads them, for the stand-in API server.
 * Equality-based only (`a=b`, `a==b`, `a!=b`, `a`, `!a`); a set-based selector (`in`,
 * `notin`) is refused so a caller that starts using one finds out here, not in a cluster.
 */
type Requirement = { key: string; op: 'eq' | 'neq' | 'exists' | 'absent'; value?: string };

export class SelectorError extends Error {}

export function parseSelector(text: string | null): Requirement[] {
  if (text === null || text.trim() === '') return [];
  return text.split(',').map((part) => {
    const term = part.trim();
    if (/\s(in|notin)\s*\(/.test(term)) throw new SelectorError(`set-based selector ${JSON.stringify(term)} is not supported by the stand-in`);
    const notEqual = term.indexOf('!=');
    if (notEqual > 0) return { key: term.slice(0, notEqual), op: 'neq', value: term.slice(notEqual + 2) };
    const equal = term.indexOf('=');
    if (equal > 0) return { key: term.slice(0, equal), op: 'eq', value: term.slice(term[equal + 1] === '=' ? equal + 2 : equal + 1) };
    if (term.startsWith('!')) return { key: term.slice(1), op: 'absent' };
    if (/^[A-Za-z0-9./_-]+$/.test(term)) return { key: term, op: 'exists' };
    throw new SelectorError(`cannot parse selector term ${JSON.stringify(term)}`);
  });
}

/** Does `lookup(key)` (a label, or a dotted field path) satisfy every requirement? */
export function matches(requirements: Requirement[], lookup: (key: string) => string | undefined): boolean {
  return requirements.every(({ key, op, value }) => {
    const actual = lookup(key);
    switch (op) {
      case 'eq':
        return actual === value;
      case 'neq':
        return actual !== value;
      case 'exists':
        return actual !== undefined;
      case 'absent':
        return actual === undefined;
    }
  });
}

/** A field selector's dotted path (`involvedObject.name`) read from an object. */
export function fieldAt(object: unknown, path: string): string | undefined {
  let current: unknown = object;
  for (const part of path.split('.')) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current === undefined || current === null ? undefined : String(current);
}
