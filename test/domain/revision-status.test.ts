import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  IN_PROGRESS_STATUSES,
  REVISION_STATUSES,
  REVISION_TRANSITIONS,
  TERMINAL_STATUSES,
  canTransition,
  isWaiting,
} from '../../src/domain/revision-status.js';

test('every status has a transition list and final statuses lead nowhere', () => {
  for (const status of REVISION_STATUSES) {
    assert.ok(Array.isArray(REVISION_TRANSITIONS[status]), status);
    if (TERMINAL_STATUSES.has(status)) assert.deepEqual(REVISION_TRANSITIONS[status], [], status);
  }
  assert.deepEqual(REVISION_TRANSITIONS.UNKNOWN, []);
});

test('any in-progress revision can be interrupted; only waiting ones can be skipped', () => {
  for (const status of IN_PROGRESS_STATUSES) {
    assert.ok(canTransition(status, 'INTERRUPTED'), status);
    assert.equal(canTransition(status, 'SKIPPED'), isWaiting(status), status);
  }
  for (const status of TERMINAL_STATUSES) assert.equal(canTransition(status, 'INTERRUPTED'), false, status);
});

test('image and build paths are allowed step by step; shortcuts are not', () => {
  const image = ['CREATING', 'QUEUED', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'] as const;
  const build = ['CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'] as const;
  for (const path of [image, build]) {
    for (let i = 1; i < path.length; i += 1) assert.ok(canTransition(path[i - 1] as string, path[i] as never), `${path[i - 1]} → ${path[i]}`);
  }
  assert.equal(canTransition('CREATING', 'DEPLOYED'), false);
  assert.equal(canTransition('BUILDING', 'DEPLOY_FAILED'), false);
  assert.equal(canTransition('DEPLOYING', 'SKIPPED'), false, 'a started revision is never skipped');
  assert.equal(canTransition('NOT_A_STATUS', 'QUEUED'), false);
});
