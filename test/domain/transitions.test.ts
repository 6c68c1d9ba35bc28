import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEPLOYMENT_STATUSES, type DeploymentStatus, DEPLOYMENT_TRANSITIONS, deploymentStatusesLeadingTo } from '../../src/domain/deployment-status.js';
import { canTransition, IN_PROGRESS_STATUSES, REVISION_STATUSES, type RevisionStatus, TERMINAL_STATUSES } from '../../src/domain/revision-status.js';

/**
 * Both tables, checked pair by pair against the rules they are meant to encode, written
 * here in words a person can review. A change to a table that breaks a rule fails here.
 */
const IMAGE_PATH: RevisionStatus[] = ['CREATING', 'QUEUED', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'];
const BUILD_PATH: RevisionStatus[] = ['CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'];
const FAILURE_OF: Partial<Record<RevisionStatus, RevisionStatus>> = {
  CREATING: 'CREATE_FAILED',
  QUEUED: 'CREATE_FAILED',
  AWAITING_BUILD: 'BUILD_FAILED',
  BUILDING: 'BUILD_FAILED',
  AWAITING_DEPLOY: 'DEPLOY_FAILED',
  DEPLOYING: 'DEPLOY_FAILED',
};

function revisionRuleAllows(from: RevisionStatus, to: RevisionStatus): boolean {
  if (!IN_PROGRESS_STATUSES.has(from)) return false; // final statuses and UNKNOWN lead nowhere
  if (to === 'INTERRUPTED') return true; // by request, from any in-progress status
  // Not started yet (waiting, or handed to a listener that has not taken it up): a newer revision replaces it.
  if (to === 'SKIPPED') return from === 'CREATING' || from === 'QUEUED' || from === 'AWAITING_DEPLOY';
  if (FAILURE_OF[from] === to) return true; // each step fails in its own failed status
  for (const path of [IMAGE_PATH, BUILD_PATH]) {
    const at = path.indexOf(from);
    if (at >= 0 && path[at + 1] === to) return true; // one step along the image or build path
  }
  return false;
}

test('every pair of revision statuses: allowed exactly when the rules allow it', () => {
  const wrong: string[] = [];
  for (const from of REVISION_STATUSES) {
    for (const to of REVISION_STATUSES) {
      if (canTransition(from, to) !== revisionRuleAllows(from, to)) wrong.push(`${from} → ${to}: table says ${canTransition(from, to)}`);
    }
  }
  assert.deepEqual(wrong, []);
  assert.equal(canTransition('NOT_A_STATUS', 'QUEUED'), false);
});

test('every terminal revision status is reachable and final', () => {
  for (const status of TERMINAL_STATUSES) {
    assert.ok(
      REVISION_STATUSES.some((from) => canTransition(from, status)),
      `${status} is reachable`,
    );
    assert.ok(
      REVISION_STATUSES.every((to) => !canTransition(status, to)),
      `${status} is final`,
    );
  }
});

function deploymentRuleAllows(from: DeploymentStatus, to: DeploymentStatus): boolean {
  if (from === 'AWAITING_DELETE') return false; // a deployment being deleted is then removed, never moved on
  if (to === 'AWAITING_DELETE') return true; // deletion by request, from anywhere
  if (to === 'AWAITING_DATABASE') return false; // only at creation
  if (to === 'READY') return true; // database there or a revision serving; again when a newer one takes over
  if (to === 'UNUSED') return from !== 'UNUSED'; // nothing serves and nothing is in flight
  if (to === 'UNKNOWN') return from !== 'UNKNOWN'; // the runtime lost track of it
  return false;
}

test('every pair of deployment statuses: allowed exactly when the rules allow it', () => {
  const wrong: string[] = [];
  for (const from of DEPLOYMENT_STATUSES) {
    for (const to of DEPLOYMENT_STATUSES) {
      const allowed = DEPLOYMENT_TRANSITIONS[from].includes(to);
      if (allowed !== deploymentRuleAllows(from, to)) wrong.push(`${from} → ${to}: table says ${allowed}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('the statuses leading to one are read off the same table', () => {
  for (const to of DEPLOYMENT_STATUSES) {
    assert.deepEqual(
      deploymentStatusesLeadingTo(to),
      DEPLOYMENT_STATUSES.filter((from) => deploymentRuleAllows(from, to)),
      to,
    );
  }
});
