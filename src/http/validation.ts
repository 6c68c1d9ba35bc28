import type { ErrorObject } from 'ajv';
import type { FieldIssue } from '../domain/errors.js';
import { MAX_ISSUES } from './echo.js';

/** Where a value came from, named as FastAPI names it in `loc`. */
export type Part = 'body' | 'query' | 'path' | 'header';

const PART_BY_CONTEXT: Record<string, Part> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

export function partOf(validationContext: string | undefined): Part {
  return PART_BY_CONTEXT[validationContext ?? 'body'] ?? 'body';
}

/**
 * Translates Ajv errors into pydantic v2's vocabulary (`missing`, `uuid_parsing`,
 * `int_parsing`, `greater_than_equal`, …), which clients of the real service have seen.
 * Query, path and header values arrive as strings, so their type errors are `*_parsing`;
 * body values are JSON, so theirs are `*_type`. Only the first MAX_ISSUES distinct
 * issues are translated: the answer shows no more (`boundedIssues` redacts and cuts them).
 */
export function toFieldIssues(errors: ErrorObject[], part: Part, data: unknown): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    if (issues.length >= MAX_ISSUES) break;
    const issue = toFieldIssue(error, part, data);
    const key = JSON.stringify([issue.loc, issue.type]);
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  return issues;
}

function toFieldIssue(error: ErrorObject, part: Part, data: unknown): FieldIssue {
  const path = pointerToPath(error.instancePath);
  const input = valueAt(data, path);
  const params = error.params as Record<string, unknown>;
  const stringly = part !== 'body';
  switch (error.keyword) {
    case 'required': {
      const missing = String(params.missingProperty);
      return { type: 'missing', loc: [part, ...path, missing], msg: 'Field required', input: input ?? null };
    }
    case 'type':
      if (input === undefined && path.length === 0) {
        return { type: 'missing', loc: [part], msg: 'Field required', input: null };
      }
      return { ...typeIssue(String(params.type), stringly), loc: [part, ...path], input };
    case 'format':
      if (params.format === 'uuid') {
        return { type: 'uuid_parsing', loc: [part, ...path], msg: 'Input should be a valid UUID', input };
      }
      if (params.format === 'date-time') {
        return { type: 'datetime_parsing', loc: [part, ...path], msg: 'Input should be a valid datetime', input };
      }
      return { type: 'value_error', loc: [part, ...path], msg: `Input should be a valid ${String(params.format)}`, input };
    case 'minimum':
      return bound('greater_than_equal', 'greater than or equal to', 'ge', params.limit, part, path, input);
    case 'maximum':
      return bound('less_than_equal', 'less than or equal to', 'le', params.limit, part, path, input);
    case 'exclusiveMinimum':
      return bound('greater_than', 'greater than', 'gt', params.limit, part, path, input);
    case 'exclusiveMaximum':
      return bound('less_than', 'less than', 'lt', params.limit, part, path, input);
    case 'minLength':
      return {
        type: 'string_too_short',
        loc: [part, ...path],
        msg: `String should have at least ${String(params.limit)} character${params.limit === 1 ? '' : 's'}`,
        input,
      };
    case 'maxLength':
      return {
        type: 'string_too_long',
        loc: [part, ...path],
        msg: `String should have at most ${String(params.limit)} characters`,
        input,
      };
    case 'maxItems':
    case 'maxProperties':
      return sizeIssue('too_long', 'at most', error.keyword === 'maxItems', params.limit, part, path, input);
    case 'minItems':
    case 'minProperties':
      return sizeIssue('too_short', 'at least', error.keyword === 'minItems', params.limit, part, path, input);
    case 'pattern':
      return {
        type: 'string_pattern_mismatch',
        loc: [part, ...path],
        msg: `String should match pattern '${String(params.pattern)}'`,
        input,
      };
    case 'enum': {
      const allowed = (params.allowedValues as unknown[]).filter((v) => v !== null).map((v) => `'${String(v)}'`);
      const expected = allowed.length > 1 ? `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}` : (allowed[0] ?? '');
      return { type: 'enum', loc: [part, ...path], msg: `Input should be ${expected}`, input };
    }
    case 'const':
      return { type: 'literal_error', loc: [part, ...path], msg: `Input should be '${String(params.allowedValue)}'`, input };
    default:
      return { type: 'value_error', loc: [part, ...path], msg: error.message ?? 'Invalid value', input };
  }
}

function typeIssue(expected: string, stringly: boolean): { type: string; msg: string } {
  const first = expected.split(',')[0];
  switch (first) {
    case 'integer':
      return stringly
        ? { type: 'int_parsing', msg: 'Input should be a valid integer, unable to parse string as an integer' }
        : { type: 'int_type', msg: 'Input should be a valid integer' };
    case 'number':
      return stringly
        ? { type: 'float_parsing', msg: 'Input should be a valid number, unable to parse string as a number' }
        : { type: 'float_type', msg: 'Input should be a valid number' };
    case 'boolean':
      return stringly
        ? { type: 'bool_parsing', msg: 'Input should be a valid boolean, unable to interpret input' }
        : { type: 'bool_type', msg: 'Input should be a valid boolean' };
    case 'string':
      return { type: 'string_type', msg: 'Input should be a valid string' };
    case 'array':
      return { type: 'list_type', msg: 'Input should be a valid list' };
    case 'object':
      return { type: 'dict_type', msg: 'Input should be a valid dictionary' };
    default:
      return { type: `${first}_type`, msg: `Input should be of type ${expected}` };
  }
}

function bound(
  type: string,
  words: string,
  ctxKey: string,
  limit: unknown,
  part: Part,
  path: (string | number)[],
  input: unknown,
): FieldIssue & { ctx: Record<string, unknown> } {
  return { type, loc: [part, ...path], msg: `Input should be ${words} ${String(limit)}`, input, ctx: { [ctxKey]: limit } };
}

/** pydantic's `too_long`/`too_short` of lists and dictionaries, with the actual size. */
function sizeIssue(type: string, words: string, isList: boolean, limit: unknown, part: Part, path: (string | number)[], input: unknown): FieldIssue {
  const fieldType = isList ? 'List' : 'Dictionary';
  const actual = Array.isArray(input) ? input.length : input !== null && typeof input === 'object' ? Object.keys(input).length : undefined;
  const bound = Number(limit);
  return {
    type,
    loc: [part, ...path],
    msg: `${fieldType} should have ${words} ${bound} item${bound === 1 ? '' : 's'} after validation${actual === undefined ? '' : `, not ${actual}`}`,
    input,
    ctx: { field_type: fieldType, [type === 'too_long' ? 'max_length' : 'min_length']: bound, ...(actual === undefined ? {} : { actual_length: actual }) },
  };
}

function pointerToPath(pointer: string): (string | number)[] {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment));
}

function valueAt(data: unknown, path: (string | number)[]): unknown {
  let current: unknown = data;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}
