import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalJson } from '../../src/domain/canonical-json.js';
import { entityTag } from '../../src/domain/entity-tags.js';

// Stored resource specs are addressed by this text and clients keep ETags made from it: the
// text of a value must stay what earlier versions wrote, byte for byte.
test('canonical JSON: the text earlier versions wrote, for plain and awkward values alike', () => {
  const cases: [unknown, string][] = [
    [{ b: 1, a: { d: [3, { z: null, y: 'é' }], c: true } }, '{"a":{"c":true,"d":[3,{"y":"é","z":null}]},"b":1}'],
    [{ a: undefined, b: [], c: {} }, '{"b":[],"c":{}}'],
    [{ B: 1, a: 2, _: 3, 'a-b': 4, ä: 5 }, '{"B":1,"_":3,"a":2,"a-b":4,"ä":5}'],
    [{ '10': 'a', '9': 'b', x: 'c' }, '{"10":"a","9":"b","x":"c"}'],
    [{ ['__proto__']: { a: 1 }, b: 2 }, '{"__proto__":{"a":1},"b":2}'],
    [JSON.parse('{"__proto__":{"a":1},"b":2}'), '{"__proto__":{"a":1},"b":2}'],
    [[1, undefined, 'x'], '[1,,"x"]'],
    [{ f: () => 1, n: Number.NaN }, '{"f":undefined,"n":null}'],
    [{ when: new Date(0) }, '{"when":{}}'],
    [{ 'q"uote': '\n', lone: '\ud800' }, '{"lone":"\\ud800","q\\"uote":"\\n"}'],
    ['text', '"text"'],
    [null, 'null'],
    [[{ b: 1, a: 2 }], '[{"a":2,"b":1}]'],
  ];
  for (const [value, text] of cases) assert.equal(canonicalJson(value), text);
});

test('a deployment tag does not depend on the order its fields were read in', () => {
  const view = { id: 'd1', name: 'n', source_config: { resource_spec: { cpu: 1, memory_mb: 2048 }, repo_url: null }, secrets: ['B', 'A'] };
  const reordered = { secrets: ['B', 'A'], source_config: { repo_url: null, resource_spec: { memory_mb: 2048, cpu: 1 } }, name: 'n', id: 'd1' };
  assert.equal(entityTag(view), entityTag(reordered));
  assert.notEqual(entityTag(view), entityTag({ ...view, secrets: ['A', 'B'] }));
  assert.match(entityTag(view), /^"[A-Za-z0-9_-]{32}"$/);
});

// A client's If-Match from before an upgrade must still name the unchanged resource after it.
test('a tag is the one earlier versions gave the same representation', () => {
  const view = { id: 'd1', name: 'n', source_config: { resource_spec: { cpu: 1, memory_mb: 2048 }, repo_url: null }, secrets: ['B', 'A'] };
  assert.equal(entityTag(view), '"KyqK--0q900tI_3QrRXgqkzhUDqKVwrr"');
});
