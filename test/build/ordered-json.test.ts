import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseOrderedJson, pythonJsonDumps } from '../../src/langgraph-project/ordered-json.js';

// Expected outputs were produced by Python 3.11's `json.dumps(json.loads(text))`.
test("re-serialises JSON exactly as Python's json.dumps does", () => {
  const text =
    '{"b": [1.0, 1e16, 1.5e-5, 0.0001, -0.0, 1e400, 123456789012345678901234567890, -0, 2.50, 1E2, 9999999999999998.0, 5e-324], ' +
    '"1": "\u00e9\\u0000\\u007f\\ud83d\\ude00 \\\\ \\" /", "a": {"x": null, "y": true}, "1": "last"}';
  assert.equal(
    pythonJsonDumps(parseOrderedJson(text)),
    '{"b": [1.0, 1e+16, 1.5e-05, 0.0001, -0.0, Infinity, 123456789012345678901234567890, 0, 2.5, 100.0, 9999999999999998.0, 5e-324], ' +
      '"1": "last", "a": {"x": null, "y": true}}',
  );
});

test('escapes every character outside printable ASCII, as ensure_ascii does', () => {
  const text = JSON.stringify({ k: '\u00e9\u0000\u001f\u007f\u{1f600}\t\n"\\/' });
  assert.equal(pythonJsonDumps(parseOrderedJson(text)), '{"k": "\\u00e9\\u0000\\u001f\\u007f\\ud83d\\ude00\\t\\n\\"\\\\/"}');
});
