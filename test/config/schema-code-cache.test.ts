import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import standaloneCode from 'ajv/dist/standalone/index.js';
import fastJsonStringify from 'fast-json-stringify';
import { cachedValidator, diskSchemaCodeCache } from '../../src/schema-code-cache.js';

const SCHEMA = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
    since: { type: 'string', format: 'date-time' },
  },
  required: ['since'],
  additionalProperties: false,
};

/** What a route's validator is made from: ajv's standalone code of the schema, with coercion and formats. */
function validatorSource(): string {
  const ajv = addFormats.default(new Ajv.default({ allErrors: true, useDefaults: true, coerceTypes: 'array', code: { source: true } }));
  return standaloneCode.default(ajv, ajv.compile(SCHEMA));
}

function tempDirectory(t: { after: (fn: () => void) => void }): string {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-schema-cache-'));
  t.after(() => fs.rmSync(directory, { recursive: true, force: true }));
  return directory;
}

function counting(generate: () => string): { generate: () => string; calls: () => number } {
  let calls = 0;
  return {
    generate: () => {
      calls++;
      return generate();
    },
    calls: () => calls,
  };
}

test('a validator generated once is loaded from the cache by the next process, and behaves the same', (t) => {
  const directory = tempDirectory(t);
  const first = counting(validatorSource);
  const generated = diskSchemaCodeCache(directory).load<ValidateFunction>('query', first.generate);
  // A second cache over the same folder is what the next process opens.
  const second = counting(validatorSource);
  const loaded = diskSchemaCodeCache(directory).load<ValidateFunction>('query', second.generate);
  assert.equal(first.calls(), 1);
  assert.equal(second.calls(), 0, 'the next process did not generate the code again');
  for (const validate of [generated, loaded]) {
    const data: Record<string, unknown> = { since: '2026-11-27T03:00:00Z' };
    assert.equal(validate(data), true);
    assert.equal(data.limit, 10, 'the default is applied');
    const coerced: Record<string, unknown> = { since: '2026-11-27T03:00:00Z', limit: '20' };
    assert.equal(validate(coerced), true);
    assert.equal(coerced.limit, 20, 'a query string is coerced');
    assert.equal(validate({ since: 'yesterday', limit: 0 }), false);
    assert.deepEqual(validate.errors?.map((error) => `${error.instancePath} ${error.keyword}`).sort(), ['/limit minimum', '/since format']);
  }
});

test('a cache file that cannot be evaluated is generated again and replaced', (t) => {
  const directory = tempDirectory(t);
  diskSchemaCodeCache(directory).load<ValidateFunction>('query', validatorSource);
  const [file] = fs.readdirSync(directory);
  assert.ok(file, 'the code was written');
  fs.writeFileSync(path.join(directory, file), 'module.exports = function (');
  const again = counting(validatorSource);
  const validate = diskSchemaCodeCache(directory).load<ValidateFunction>('query', again.generate);
  assert.equal(again.calls(), 1);
  assert.equal(validate({ since: '2026-11-27T03:00:00Z' }), true);
  assert.equal(diskSchemaCodeCache(directory).load<ValidateFunction>('query', () => assert.fail('generated a third time'))({ since: 'x' }), false);
});

test('a serializer is cached as well, and another identity is another file', (t) => {
  const directory = tempDirectory(t);
  const schema: object = { type: 'object', properties: { id: { type: 'string' }, count: { type: 'integer' } } };
  const source = () => fastJsonStringify(schema, { mode: 'standalone' });
  const cache = diskSchemaCodeCache(directory);
  const serialize = cache.load<(data: unknown) => string>('reply', source);
  assert.equal(serialize({ id: 'a', count: 2, secret: 'not in the schema' }), '{"id":"a","count":2}');
  cache.load<ValidateFunction>('query', validatorSource);
  assert.equal(fs.readdirSync(directory).length, 2);
  assert.equal(diskSchemaCodeCache(directory).load<(data: unknown) => string>('reply', () => assert.fail('generated again'))({ id: 'b' }), '{"id":"b"}');
});

test('where the folder cannot be made, the code is generated and used, and nothing is written', (t) => {
  const directory = tempDirectory(t);
  const blocked = path.join(directory, 'a-file');
  fs.writeFileSync(blocked, '');
  const calls = counting(validatorSource);
  const cache = diskSchemaCodeCache(path.join(blocked, 'cache'));
  assert.equal(cache.load<ValidateFunction>('query', calls.generate)({ since: '2026-11-27T03:00:00Z' }), true);
  assert.equal(cache.load<ValidateFunction>('query', calls.generate)({ since: 'x' }), false);
  assert.equal(calls.calls(), 2);
  assert.deepEqual(fs.readdirSync(directory), ['a-file']);
});

test('a cached validator applies the options it is given: coercion as set, formats only when asked', () => {
  const schema = { type: 'object', properties: { count: { type: 'integer' }, at: { type: 'string', format: 'date-time' } } };
  const coercing = cachedValidator({ allErrors: true, coerceTypes: true, standardFormats: true }, schema);
  const data: Record<string, unknown> = { count: '3' };
  assert.equal(coercing(data), true);
  assert.equal(data.count, 3);
  assert.equal(coercing({ at: 'yesterday' }), false);
  const exact = cachedValidator({ allErrors: true, coerceTypes: false, standardFormats: true }, schema);
  assert.equal(exact({ count: '3' }), false, 'another set of options is another validator');
  assert.equal(cachedValidator({ strict: false }, schema)({ at: 'yesterday' }), true, 'no format is checked unless asked');
});
