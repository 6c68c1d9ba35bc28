import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planQueue, type UnfinishedRevision } from '../../src/domain/queue-policy.js';
import type { RevisionStatus } from '../../src/domain/revision-status.js';

const rev = (seq: number, status: RevisionStatus): UnfinishedRevision => ({ id: `r${seq}`, seq, status });
const ids = (revisions: readonly UnfinishedRevision[]) => revisions.map((r) => r.id);

test('latest wins: older waiting revisions are skipped and the newest runs', () => {
  const plan = planQueue([rev(1, 'QUEUED'), rev(2, 'CREATING'), rev(3, 'CREATING')], false);
  assert.deepEqual(ids(plan.skip), ['r1', 'r2']);
  assert.equal(plan.run?.id, 'r3');
  assert.equal(plan.queue, null);
});

test('one in flight at a time: the newest waits QUEUED behind the started one, which keeps running', () => {
  const plan = planQueue([rev(1, 'DEPLOYING'), rev(2, 'CREATING')], false);
  assert.deepEqual(ids(plan.skip), []);
  assert.equal(plan.run?.id, 'r1');
  assert.equal(plan.queue?.id, 'r2');
  assert.equal(plan.behind?.id, 'r1');
});

test('on a listener, a revision handed over but not taken up is replaced by a newer one', () => {
  const plan = planQueue([rev(1, 'AWAITING_DEPLOY'), rev(2, 'QUEUED')], true);
  assert.deepEqual(ids(plan.skip), ['r1']);
  assert.equal(plan.run?.id, 'r2');
});

test('on a listener, nothing is for the engine while the listener deploys; a new revision only queues', () => {
  const creating = planQueue([rev(1, 'DEPLOYING'), rev(2, 'CREATING')], true);
  assert.equal(creating.run, null);
  assert.equal(creating.queue?.id, 'r2');
  const queued = planQueue([rev(1, 'DEPLOYING'), rev(2, 'QUEUED')], true);
  assert.equal(queued.run, null);
  assert.equal(queued.queue, null);
  assert.deepEqual(ids(queued.skip), []);
});

test('on a listener, a handed-over revision alone leaves the engine nothing to do', () => {
  const plan = planQueue([rev(1, 'AWAITING_DEPLOY')], true);
  assert.equal(plan.run, null);
  assert.deepEqual(ids(plan.skip), []);
});

test("without a listener, AWAITING_DEPLOY is the engine's and is not replaced", () => {
  const plan = planQueue([rev(1, 'AWAITING_DEPLOY'), rev(2, 'CREATING')], false);
  assert.equal(plan.run?.id, 'r1');
  assert.equal(plan.queue?.id, 'r2');
});

test("a build in progress on a listener deployment is still the engine's", () => {
  const plan = planQueue([rev(1, 'BUILDING'), rev(2, 'QUEUED')], true);
  assert.equal(plan.run?.id, 'r1');
});
