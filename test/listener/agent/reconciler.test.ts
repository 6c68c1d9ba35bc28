import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import type { DesiredDeploymentView } from '../../../src/contract/listener-protocol.js';
import { type ObservedContainer, reconcile } from '../../../src/agent/reconciler.js';

function deployment(status: DesiredDeploymentView['revision_status'], overrides: Partial<DesiredDeploymentView> = {}): DesiredDeploymentView {
  return {
    deployment_id: randomUUID(),
    deployment_name: 'agent',
    revision_id: randomUUID(),
    revision_status: status,
    image_uri: 'localhost/agent:v1',
    resource_spec: null,
    secrets: [],
    namespace: null,
    deploy_timeout_seconds: 60,
    ...overrides,
  };
}

function container(of: { deployment_id: string }, revisionId: string, running = true): ObservedContainer {
  const name = `berth-agent-${revisionId.slice(0, 8)}`;
  return { name, deploymentId: of.deployment_id, revisionId, running, url: running ? 'http://127.0.0.1:40000' : 'http://127.0.0.1:40001' };
}

const none = new Set<string>();

describe('reconcile: from the desired state and what runs to what to do', () => {
  test('a new deployment is rolled out; one already DEPLOYED and running needs nothing', () => {
    const fresh = deployment('AWAITING_DEPLOY');
    const steady = deployment('DEPLOYED');
    const actions = reconcile({
      desired: { deployments: [fresh, steady], deletions: [] },
      running: [container(steady, steady.revision_id)],
      failedRevisions: none,
    });
    assert.deepEqual(actions, [{ kind: 'deploy', deployment: fresh, rollout: true, replaces: [] }]);
  });

  test('a new revision replaces the running one only through the rollout (old containers are named to remove after)', () => {
    const next = deployment('DEPLOYING');
    const old = container(next, randomUUID());
    const actions = reconcile({ desired: { deployments: [next], deletions: [] }, running: [old], failedRevisions: none });
    assert.deepEqual(actions, [{ kind: 'deploy', deployment: next, rollout: true, replaces: [old.name] }]);
  });

  test("the revision's container already runs (agent killed after starting it): adopt it instead of starting another", () => {
    const next = deployment('DEPLOYING');
    const old = container(next, randomUUID());
    const mine = container(next, next.revision_id);
    const actions = reconcile({ desired: { deployments: [next], deletions: [] }, running: [old, mine], failedRevisions: none });
    assert.deepEqual(actions, [{ kind: 'adopt', deployment: next, container: mine, replaces: [old.name] }]);
  });

  test('a stopped container of a revision being rolled out is a start that never finished: deploy again', () => {
    const next = deployment('DEPLOYING');
    const actions = reconcile({ desired: { deployments: [next], deletions: [] }, running: [container(next, next.revision_id, false)], failedRevisions: none });
    assert.deepEqual(actions, [{ kind: 'deploy', deployment: next, rollout: true, replaces: [] }]);
  });

  test('a DEPLOYED revision whose container is gone is started again, without a rollout report', () => {
    const steady = deployment('DEPLOYED');
    const actions = reconcile({ desired: { deployments: [steady], deletions: [] }, running: [], failedRevisions: none });
    assert.deepEqual(actions, [{ kind: 'deploy', deployment: steady, rollout: false, replaces: [] }]);
  });

  test('a DEPLOYED revision whose container stopped (host reboot) is resumed on its port', () => {
    const steady = deployment('DEPLOYED');
    const stopped = container(steady, steady.revision_id, false);
    const actions = reconcile({ desired: { deployments: [steady], deletions: [] }, running: [stopped], failedRevisions: none });
    assert.deepEqual(actions, [{ kind: 'resume', deployment: steady, container: stopped, replaces: [] }]);
  });

  test('containers of earlier revisions beside a DEPLOYED one are retired', () => {
    const steady = deployment('DEPLOYED');
    const left = container(steady, randomUUID(), false);
    const actions = reconcile({
      desired: { deployments: [steady], deletions: [] },
      running: [container(steady, steady.revision_id), left],
      failedRevisions: none,
    });
    assert.deepEqual(actions, [{ kind: 'retire', deploymentId: steady.deployment_id, names: [left.name] }]);
  });

  test('a revision this agent reported failed is not tried again while Berth still lists it', () => {
    const failed = deployment('DEPLOYING');
    const actions = reconcile({ desired: { deployments: [failed], deletions: [] }, running: [], failedRevisions: new Set([failed.revision_id]) });
    assert.deepEqual(actions, []);
  });

  test('a deletion removes every container of the deployment and comes first; with none left it is still reported', () => {
    const gone = { deployment_id: randomUUID(), deployment_name: 'gone' };
    const empty = { deployment_id: randomUUID(), deployment_name: 'empty' };
    const fresh = deployment('AWAITING_DEPLOY');
    const a = container(gone, randomUUID());
    const b = container(gone, randomUUID(), false);
    const actions = reconcile({ desired: { deployments: [fresh], deletions: [gone, empty] }, running: [a, b], failedRevisions: none });
    assert.deepEqual(actions, [
      { kind: 'delete', deploymentId: gone.deployment_id, names: [a.name, b.name].sort() },
      { kind: 'delete', deploymentId: empty.deployment_id, names: [] },
      { kind: 'deploy', deployment: fresh, rollout: true, replaces: [] },
    ]);
  });

  test('a deletion wins over a stale entry of the same deployment', () => {
    const entry = deployment('DEPLOYED');
    const actions = reconcile({
      desired: { deployments: [entry], deletions: [{ deployment_id: entry.deployment_id, deployment_name: 'agent' }] },
      running: [container(entry, entry.revision_id)],
      failedRevisions: none,
    });
    assert.deepEqual(
      actions.map((action) => action.kind),
      ['delete'],
    );
  });

  test('containers of deployments the listener no longer has are removed', () => {
    const orphan = container({ deployment_id: randomUUID() }, randomUUID());
    const actions = reconcile({ desired: { deployments: [], deletions: [] }, running: [orphan], failedRevisions: none });
    assert.deepEqual(actions, [{ kind: 'remove-orphans', deploymentId: orphan.deploymentId, names: [orphan.name] }]);
  });
});
