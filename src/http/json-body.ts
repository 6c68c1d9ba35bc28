import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { type DomainError, invalidField } from '../domain/errors.js';
import { JsonBodyError } from './errors.js';

/**
 * JSON bodies through Fastify's safe parser, except that an empty body counts as no body:
 * some clients send `Content-Type: application/json` on GET and DELETE without a body.
 * Malformed JSON becomes FastAPI's `json_invalid` 422.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    let value: unknown;
    try {
      // Rejects `__proto__` and `constructor.prototype` keys (prototype poisoning).
      value = secureJson.parse(text, { protoAction: 'error', constructorAction: 'error' });
    } catch (error) {
      // The parser's own message may quote part of the body (a secret, say), so only a
      // fixed reason and the position go back.
      const message = error instanceof Error ? error.message : '';
      const position = Number(/position (\d+)/.exec(message)?.[1] ?? 0);
      const reason = /end of JSON input/.test(message) ? 'Unexpected end of JSON input' : 'Invalid JSON';
      return done(new JsonBodyError(position, reason), undefined);
    }
    const problem = unacceptableJson(value);
    done(problem, problem ? undefined : value);
  });
}

/** Deeper than any request of this API; recursion over deeper values would exhaust the stack. */
const MAX_JSON_DEPTH = 64;

/**
 * Entries of one JSON array or object, at most. No field of this API takes more (the
 * largest, `k8s_namespaces`, takes 1,000), and it bounds the work of validation: the
 * validator reports every failing item, so a 1 MB array of 480,000 wrong items would
 * otherwise cost 480,000 error objects before the first could be answered.
 */
export const MAX_JSON_ENTRIES = 1000;

/**
 * What no route can accept, found without recursion before the schema validator runs:
 * nesting beyond MAX_JSON_DEPTH, arrays and objects beyond MAX_JSON_ENTRIES, text no
 * database keeps as sent, and numbers JSON cannot write back.
 */
function unacceptableJson(root: unknown): DomainError | null {
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value: root, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop() as { value: unknown; path: (string | number)[] };
    if (typeof value === 'string') {
      const problem = unstorableText(value, ['body', ...path]);
      if (problem) return problem;
      continue;
    }
    if (typeof value === 'number') {
      // `1e999` parses to Infinity, which JSON writes back as null: a limit would vanish.
      if (!Number.isFinite(value))
        return invalidField({ type: 'finite_number', loc: ['body', ...path], msg: 'Input should be a finite number', input: String(value) });
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (path.length >= MAX_JSON_DEPTH) {
      return invalidField({ type: 'json_invalid', loc: ['body', ...path.slice(0, 3)], msg: `JSON nested deeper than ${MAX_JSON_DEPTH} levels`, input: '{…}' });
    }
    const size = Array.isArray(value) ? value.length : Object.keys(value).length;
    if (size > MAX_JSON_ENTRIES) return tooManyEntries(path, Array.isArray(value), size);
    const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
    for (const [key, inner] of entries) {
      const problem = typeof key === 'string' ? unstorableText(key, ['body', ...path], 'Keys') : null;
      if (problem) return problem;
      stack.push({ value: inner, path: [...path, key] });
    }
  }
  return null;
}

/** pydantic's `too_long`, as for a field's own `maxItems`/`maxProperties`. */
function tooManyEntries(path: (string | number)[], isArray: boolean, actual: number): DomainError {
  const fieldType = isArray ? 'List' : 'Dictionary';
  return invalidField({
    type: 'too_long',
    loc: ['body', ...path],
    msg: `${fieldType} should have at most ${MAX_JSON_ENTRIES} items after validation, not ${actual}`,
    input: isArray ? '[…]' : '{…}',
    ctx: { field_type: fieldType, max_length: MAX_JSON_ENTRIES, actual_length: actual },
  });
}

/** A lone UTF-16 surrogate: half of a character, which no UTF-8 database can store. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Text no database keeps as sent: NUL characters (PostgreSQL cannot store them; SQLite
 * could, so both refuse) and lone surrogates (`"\ud800"` in JSON), which both would
 * silently replace, so a secret would change between writing and reading. Used for body,
 * query and path values alike; the text itself is not echoed (it may be a secret).
 */
export function unstorableText(text: string, loc: (string | number)[], what = 'Text'): DomainError | null {
  if (text.includes('\u0000')) return invalidField({ type: 'string_nul', loc, msg: `${what} must not contain NUL characters`, input: '[redacted]' });
  if (LONE_SURROGATE.test(text)) {
    return invalidField({
      type: 'string_unicode',
      loc,
      msg: `${what} must be valid Unicode: a lone surrogate (half of a character) cannot be stored`,
      input: '[redacted]',
    });
  }
  return null;
}
