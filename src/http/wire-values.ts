import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DomainError, type FieldIssue } from '../domain/errors.js';
import { unstorableText } from './json-body.js';

/**
 * Query and path values are text, which the coercing validator would read far too
 * loosely (it takes whatever JavaScript's `==` takes: `0x10`, `1e1`, `Infinity`). Before
 * it runs, each value is read as pydantic v2 reads query parameters for FastAPI, and the
 * values it accepts are put in plain form:
 *
 * - integers: surrounding whitespace, a sign, leading zeros, `_` between digits and a
 *   `.0` fraction are accepted (`" 010 "`, `"1_000"`, `"5.00"`); nothing else is;
 * - numbers: decimal notation with an optional exponent (`"1.5"`, `"1e1"`, `".5"`);
 * - booleans: `true/false`, `1/0`, `yes/no`, `on/off`, `t/f`, `y/n`, letters in any case.
 *
 * Text with NUL characters or lone surrogates is refused, as in bodies.
 */
export function installWireValueParsing(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    const issues = [...unstorableValues(request), ...scalarIssues(request)];
    if (issues.length > 0) throw new DomainError('validation_error', issues[0]?.msg ?? 'Invalid value', issues);
  });
}

function unstorableValues(request: FastifyRequest): FieldIssue[] {
  const issues: FieldIssue[] = [];
  for (const [part, values] of [
    ['query', request.query],
    ['path', request.params],
  ] as const) {
    for (const [name, value] of Object.entries((values ?? {}) as Record<string, unknown>)) {
      for (const text of Array.isArray(value) ? value : [value]) {
        const problem = typeof text === 'string' ? unstorableText(text, [part, name]) : null;
        if (problem) issues.push(...problem.issues);
      }
    }
  }
  return issues;
}

type Scalar = 'integer' | 'number' | 'boolean';

/** Whitespace around a value is ignored, as pydantic (Rust's `str::trim`) ignores it. */
const INTEGER = /^[+-]?\d+(?:_\d+)*(?:\.0+)?$/;
const NUMBER = /^[+-]?(?:\d+(?:_\d+)*(?:\.(?:\d+(?:_\d+)*)?)?|\.\d+(?:_\d+)*)(?:[eE][+-]?\d+)?$/;
const TRUE = new Set(['1', 'true', 't', 'yes', 'y', 'on']);
const FALSE = new Set(['0', 'false', 'f', 'no', 'n', 'off']);

const PARSING_ISSUE: Record<Scalar, { type: string; msg: string }> = {
  integer: { type: 'int_parsing', msg: 'Input should be a valid integer, unable to parse string as an integer' },
  number: { type: 'float_parsing', msg: 'Input should be a valid number, unable to parse string as a number' },
  boolean: { type: 'bool_parsing', msg: 'Input should be a valid boolean, unable to interpret input' },
};

/** `1e400` is a number in form, but none a limit can be checked against. */
const FINITE_ISSUE = { type: 'finite_number', msg: 'Input should be a finite number' };

/** The plain form of a query value of the given type, or undefined when pydantic would refuse it. */
export function plainScalar(type: Scalar, raw: string): string | undefined {
  const text = raw.trim();
  switch (type) {
    case 'integer':
      if (!INTEGER.test(text)) return undefined;
      return String(Number(text.replace(/_/g, '').replace(/\.0+$/, '')));
    case 'number':
      return NUMBER.test(text) ? String(Number(text.replace(/_/g, ''))) : undefined;
    case 'boolean': {
      // pydantic compares booleans without trimming.
      const lower = raw.toLowerCase();
      return TRUE.has(lower) ? 'true' : FALSE.has(lower) ? 'false' : undefined;
    }
  }
}

function scalarIssues(request: FastifyRequest): FieldIssue[] {
  const schema = request.routeOptions.schema?.querystring as { properties?: Record<string, { type?: unknown }> } | undefined;
  const query = request.query as Record<string, unknown> | undefined;
  if (!schema?.properties || !query) return [];
  const issues: FieldIssue[] = [];
  for (const [name, property] of Object.entries(schema.properties)) {
    const value = query[name];
    const type = scalarType(property.type);
    // Repeated parameters (arrays) are left to the validator, which refuses them.
    if (type === undefined || typeof value !== 'string') continue;
    const plain = plainScalar(type, value);
    if (plain === undefined) issues.push({ ...PARSING_ISSUE[type], loc: ['query', name], input: value });
    else if (type !== 'boolean' && !Number.isFinite(Number(plain))) issues.push({ ...FINITE_ISSUE, loc: ['query', name], input: value });
    else query[name] = plain;
  }
  return issues;
}

function scalarType(type: unknown): Scalar | undefined {
  const first = Array.isArray(type) ? type.find((t) => t !== 'null') : type;
  return first === 'integer' || first === 'number' || first === 'boolean' ? first : undefined;
}
