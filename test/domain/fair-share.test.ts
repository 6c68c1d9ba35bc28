import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultWorkspaceSlots, stepTimeout } from '../../src/domain/fair-share.js';

test('by default a workspace may hold every slot of a process but one, and the only slot of a single-slot engine', () => {
  assert.equal(defaultWorkspaceSlots(1), 1);
  assert.equal(defaultWorkspaceSlots(2), 1);
  assert.equal(defaultWorkspaceSlots(4), 3);
  assert.equal(defaultWorkspaceSlots(64), 63);
});

test("a step timeout is the deployment's, else the default, never above the operator's maximum", () => {
  assert.deepEqual(stepTimeout(120, 900_000, 3600), { ms: 120_000 });
  assert.deepEqual(stepTimeout(null, 900_000, 3600), { ms: 900_000 });
  assert.deepEqual(stepTimeout(0, 900_000, 3600), { ms: 900_000 });
  assert.deepEqual(stepTimeout(3600, 900_000, 3600), { ms: 3_600_000 });
  assert.deepEqual(stepTimeout(86_400, 900_000, 3600), { ms: 3_600_000, askedMs: 86_400_000 });
  // The engine's own default is held to the maximum too.
  assert.deepEqual(stepTimeout(undefined, 900_000, 60), { ms: 60_000, askedMs: 900_000 });
});
