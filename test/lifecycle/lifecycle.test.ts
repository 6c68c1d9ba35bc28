import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { LocalEventBus, type BusMessage } from '../../src/events/bus.js';
import { moveDeployment } from '../../src/lifecycle/deployments.js';
import { moveRevision } from '../../src/lifecycle/revisions.js';
import { createTenancyService } from '../../src/services/tenancy.js';
import type { Db } from '../../src/store/database.js';
import { findDeploymentById, insertDeployment } from '../../src/store/repositories/deployments.js';
import { findRevisionById, insertRevision } from '../../src/store/repositories/revisions.js';
import { openTestDatabase, describeEachDatabase } from '../support/database.js';
import { deploymentRow } from '../support/rows.js';

/** The one writer of statuses: table check, fenced compare-and-set, timeline event, news after commit. */
describeEachDatabase('lifecycle', (kind) => {
  let db: Db;
  let close: () => Promise<void>;
  let workspaceId: string;
  const bus = new LocalEventBus();
  const heard: BusMessage[] = [];
  bus.subscribe((message) => heard.push(message));

  before(async () => {
    ({ db, close } = await openTestDatabase(kind));
    const org = await createTenancyService(db).createOrganization(`org-${randomUUID()}`);
    assert.ok(org);
    workspaceId = org.workspaceId;
  });
  after(async () => close());

  async function fixture(listenerId: string | null = null) {
    const deployment = await insertDeployment(db, deploymentRow(workspaceId, { listener_id: listenerId }));
    const revision = await insertRevision(db, {
      id: randomUUID(),
      deployment_id: deployment.id,
      source: 'external_docker',
      source_revision_config: { repo_ref: null, graph_config_path: null, image_uri: 'x:v1', repo_commit_sha: null, tracked_packages: null },
      resource_spec: {},
      secret_set_id: null,
      image_ref: null,
      created_at: new Date().toISOString(),
    });
    return { deployment, revision };
  }
  const timeline = async (revisionId: string) =>
    (await db.selectFrom('deployment_events').select(['status', 'message']).where('revision_id', '=', revisionId).orderBy('id').execute()).map((e) => e.status);

  test('a move writes the status, its event, and announces after commit', async () => {
    const { revision } = await fixture();
    heard.length = 0;
    const result = await moveRevision({ db, bus }, revision, 'QUEUED', { message: 'next', fence: { kind: 'api' }, origin: 'me' });
    assert.equal(result.outcome, 'ok');
    assert.equal((await findRevisionById(db, revision.id))?.status, 'QUEUED');
    assert.deepEqual(await timeline(revision.id), ['QUEUED']);
    assert.deepEqual(heard, [{ topic: 'deployment', deploymentId: revision.deployment_id, origin: 'me' }]);
  });

  test('a lost race answers moved and writes nothing', async () => {
    const { revision } = await fixture();
    await moveRevision({ db, bus }, revision, 'INTERRUPTED', { message: null, fence: { kind: 'api' } });
    heard.length = 0;
    const result = await moveRevision({ db, bus }, revision, 'QUEUED', { message: null, fence: { kind: 'api' } });
    assert.deepEqual(result, { outcome: 'moved', current: 'INTERRUPTED' });
    assert.deepEqual(await timeline(revision.id), ['INTERRUPTED']);
    assert.deepEqual(heard, []);
  });

  test('a worker without the lease, or a listener the deployment is not on, is fenced off', async () => {
    const listenerId = randomUUID();
    const { revision } = await fixture(listenerId);
    const lease = await moveRevision({ db, bus }, revision, 'QUEUED', { message: null, fence: { kind: 'lease', worker: 'nobody' } });
    assert.deepEqual(lease, { outcome: 'fenced' });
    const stranger = await moveRevision({ db, bus }, revision, 'QUEUED', { message: null, fence: { kind: 'listener', listenerId: randomUUID() } });
    assert.deepEqual(stranger, { outcome: 'fenced' });
    assert.equal((await findRevisionById(db, revision.id))?.status, 'CREATING');
    const own = await moveRevision({ db, bus }, revision, 'QUEUED', { message: null, fence: { kind: 'listener', listenerId } });
    assert.equal(own.outcome, 'ok');
  });

  test('work that belongs to the move is undone with it', async () => {
    const { deployment, revision } = await fixture();
    await assert.rejects(
      moveRevision({ db, bus }, revision, 'QUEUED', {
        message: null,
        fence: { kind: 'api' },
        alongside: async () => {
          throw new Error('the second half failed');
        },
      }),
      /second half failed/,
    );
    assert.equal((await findRevisionById(db, revision.id))?.status, 'CREATING', 'the status change was rolled back');
    assert.deepEqual(await timeline(revision.id), []);
    assert.equal((await findDeploymentById(db, deployment.id))?.status, 'AWAITING_DATABASE');
  });

  test('a move the table forbids is a bug and throws before touching anything', async () => {
    const { revision } = await fixture();
    await assert.rejects(moveRevision({ db, bus }, revision, 'DEPLOYED', { message: null, fence: { kind: 'api' } }), /not an allowed transition/);
    assert.equal((await findRevisionById(db, revision.id))?.status, 'CREATING');
  });

  test('deployments move only along their table, and AWAITING_DELETE stays', async () => {
    const { deployment } = await fixture();
    assert.equal(await moveDeployment({ db, bus }, deployment.id, 'AWAITING_DELETE', { fence: { kind: 'api' } }), true);
    assert.equal(await moveDeployment({ db, bus }, deployment.id, 'READY', { fence: { kind: 'api' } }), false);
    assert.equal((await findDeploymentById(db, deployment.id))?.status, 'AWAITING_DELETE');
  });
});
