import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';
import type { FastifyInstance } from 'fastify';
import { cachedValidator, schemaCodeCache } from '../schema-code-cache.js';

// Compiled once per process and schema, not once per app: the API is registered twice (with
// and without the self-hosted prefix), and a process that builds several apps (a test file
// starts a server per suite or per test) would compile every route's schemas again, about a
// second of CPU for each app. Compiling is a pure function of the schema and of the options
// below, which never change, so the compiled function can be shared, within the process and,
// through the code cache on disk, with the processes that start after it.
const validators = new Map<string, ValidateFunction>();
const serializers = new Map<string, (data: unknown) => string>();

/**
 * Query, path and header values are strings on the wire, so their validator coerces
 * ("20" → 20); JSON bodies are typed already, and a wrong type there is an error.
 */
// strictNumbers: `strict: false` would otherwise let Infinity and NaN pass as numbers.
const AJV_OPTIONS = { allErrors: true, allowUnionTypes: true, useDefaults: true, strict: false, strictNumbers: true, standardFormats: true } as const;
const COERCING = { ...AJV_OPTIONS, coerceTypes: 'array' } as const;
const EXACT = { ...AJV_OPTIONS, coerceTypes: false } as const;

// fast-json-stringify is loaded only to generate code: a process that finds every schema's
// code kept (every server after a machine's first) never loads it.
const require = createRequire(import.meta.url);

function compileValidator(schema: object, httpPart: string | undefined): ValidateFunction {
  const exact = httpPart === 'body';
  const key = `${exact ? 'exact' : 'coercing'} ${JSON.stringify(schema)}`;
  let validate = validators.get(key);
  if (!validate) {
    validate = cachedValidator(exact ? EXACT : COERCING, schema);
    validators.set(key, validate);
  }
  return validate;
}

function compileSerializer(schema: object): (data: unknown) => string {
  const key = JSON.stringify(schema);
  let serialize = serializers.get(key);
  if (!serialize) {
    serialize = schemaCodeCache().load<(data: unknown) => string>(`fast-json-stringify ${key}`, () => {
      const fastJsonStringify = require('fast-json-stringify') as typeof import('fast-json-stringify').default;
      return fastJsonStringify(schema, { mode: 'standalone' });
    });
    serializers.set(key, serialize);
  }
  return serialize;
}

export function installCompiledSchemas(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) => compileValidator(schema, httpPart));
  app.setSerializerCompiler(({ schema }) => compileSerializer(schema));
}
