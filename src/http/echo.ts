import type { FieldIssue } from '../domain/errors.js';

/**
 * Issues in one 422 answer, at most. FastAPI clients show the first few; a body with
 * thousands of wrong items would otherwise make an answer of megabytes.
 */
export const MAX_ISSUES = 10;

/** Characters of the offending input one issue echoes, about; the rest becomes "…". */
const ECHO_CHARACTERS = 2000;
/** Longest string (or object key) echoed whole, in `input` and in `loc`. */
const ECHO_STRING = 200;
/** Levels of an echoed object or list; deeper ones become "{…}" or "[…]". */
const ECHO_DEPTH = 4;

/**
 * Names of fields whose values are secret, whatever their shape: deployment secrets (a
 * list of names and values, but clients also send maps and `NAME=value` strings), their
 * values, OAuth client secrets, integration passwords, private keys and webhook secrets,
 * tokens and keys.
 */
const SENSITIVE_FIELD = /^(secrets|value|key|token)$|secret|password|private_key|api_key|_token$/i;

/**
 * What a 422 echoes of the offending input: as FastAPI does, but never a secret and never
 * without bound. Anything at or under a secret field (`secrets`, `client_secret`, …)
 * becomes "[redacted]", so does every secret field inside an echoed object or list, a
 * body that is not JSON is opaque (it may hold secrets), and what is echoed is cut to a
 * few levels and about ECHO_CHARACTERS characters.
 */
export function redact(loc: (string | number)[], input: unknown): unknown {
  if (loc.length === 1 && typeof input === 'string') return '[redacted]';
  const sensitive = loc.some((item) => typeof item === 'string' && SENSITIVE_FIELD.test(item));
  if (sensitive && input !== undefined && input !== null) return '[redacted]';
  return new Echo().of(input, ECHO_DEPTH);
}

/**
 * The issues a 422 answers, whatever raised them: the first MAX_ISSUES, redacted, with
 * long keys in `loc` cut (a key of a free-form map may be as long as the body) and the
 * echoed input bounded. With those bounds a 422 body stays under about 40 KB.
 */
export function boundedIssues(issues: FieldIssue[]): FieldIssue[] {
  return issues.slice(0, MAX_ISSUES).map((issue) => {
    const bounded: FieldIssue = { ...issue, loc: issue.loc.map((item) => (typeof item === 'string' ? cut(item, ECHO_STRING) : item)) };
    if ('input' in issue) bounded.input = redact(issue.loc, issue.input);
    return bounded;
  });
}

/** One echo with its own budget of characters. */
class Echo {
  #left = ECHO_CHARACTERS;

  of(value: unknown, depth: number): unknown {
    if (typeof value === 'string') {
      const text = cut(value, Math.max(0, Math.min(ECHO_STRING, this.#left)));
      this.#left -= text.length + 2;
      return text;
    }
    if (value === null || typeof value !== 'object') {
      this.#left -= 8;
      return value;
    }
    if (depth === 0) {
      this.#left -= 5;
      return Array.isArray(value) ? '[…]' : '{…}';
    }
    this.#left -= 2;
    if (Array.isArray(value)) {
      const items: unknown[] = [];
      for (const item of value) {
        if (this.#left <= 0) {
          items.push('…');
          break;
        }
        items.push(this.of(item, depth - 1));
      }
      return items;
    }
    const entries: [string, unknown][] = [];
    for (const [key, inner] of Object.entries(value as Record<string, unknown>)) {
      if (this.#left <= 0) {
        entries.push(['…', '…']);
        break;
      }
      const name = cut(key, ECHO_STRING);
      this.#left -= name.length + 3;
      entries.push([name, SENSITIVE_FIELD.test(key) && inner !== null && inner !== undefined ? '[redacted]' : this.of(inner, depth - 1)]);
    }
    return Object.fromEntries(entries);
  }
}

/** At most `length` characters and "…"; never half of a surrogate pair. */
function cut(text: string, length: number): string {
  if (text.length <= length) return text;
  const end = /[\ud800-\udbff]/.test(text.charAt(length - 1)) ? length - 1 : length;
  return `${text.slice(0, Math.max(0, end))}…`;
}
