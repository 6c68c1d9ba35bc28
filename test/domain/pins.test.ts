import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pinAfterRedeploy, pushIgnoredMessage } from '../../src/domain/pins.js';

const NOW = '2026-11-26T08:00:00.000Z';
const EARLIER = '2026-11-25T08:00:00.000Z';

test('a redeploy of a revision that is not the latest is a rollback: it pins to the new revision from now', () => {
  assert.deepEqual(pinAfterRedeploy({ latest_revision_id: 'r2', pinned_revision_id: null, pinned_at: null }, 'r1', 'r3', NOW), { revisionId: 'r3', at: NOW });
  // Rolling back again while pinned pins anew, from now.
  assert.deepEqual(pinAfterRedeploy({ latest_revision_id: 'r3', pinned_revision_id: 'r3', pinned_at: EARLIER }, 'r2', 'r4', NOW), {
    revisionId: 'r4',
    at: NOW,
  });
});

test('a redeploy of the latest revision pins nothing, and moves an existing pin along with its time', () => {
  assert.equal(pinAfterRedeploy({ latest_revision_id: 'r2', pinned_revision_id: null, pinned_at: null }, 'r2', 'r3', NOW), null);
  assert.deepEqual(pinAfterRedeploy({ latest_revision_id: 'r3', pinned_revision_id: 'r3', pinned_at: EARLIER }, 'r3', 'r4', NOW), {
    revisionId: 'r4',
    at: EARLIER,
  });
});

test('the ignored-push message names the commit and the pinned revision, and how to unpin', () => {
  const message = pushIgnoredMessage('a'.repeat(40), 'new commit aaaaaaaaaaaa on main', 'r3');
  assert.match(message, new RegExp(`commit ${'a'.repeat(40)}`));
  assert.match(message, /pinned to revision r3/);
  assert.match(message, /unpin/);
});
