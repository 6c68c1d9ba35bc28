import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import pino from 'pino';
import type { LogEvent } from 'kysely';
import { newWorkerId } from '../../src/engine/engine.js';
import { DEFAULT_ENGINE_SETTINGS } from '../../src/engine/engine.js';
import { workOnDeployment } from '../../src/engine/worker.js';
import { LocalEventBus } from '../../src/events/bus.js';
import { encryptSecretSet } from '../../src/security/secret-sets.js';
import { Encryptor } from '../../src/security/encryption.js';
import { createTenancyService } from '../../src/services/tenancy.js';
import type { Db } from '../../src/store/database.js';
import { insertDeployment } from '../../src/store/repositories/deployments.js';
import { claimCandidates, takeFairLease } from '../../src/store/repositories/leases.js';
import { insertRevision } from '../../src/store/repositories/revisions.js';
import { insertSecretSet } from '../../src/store/repositories/secret-sets.js';
import { insertSubscription } from '../../src/store/repositories/webhooks.js';
import type { UploadStore } from '../../src/sources/uploads.js';
import { openTestDatabase, describeEachDatabase } from '../support/database.js';
import { FakeBuildDriver } from '../support/drivers/fake-build.js';
import { InProcessRuntime } from '../support/drivers/in-process.js';
import type { RunRequest, RunningRevision, RuntimeDriver, StepContext } from '../../src/engine/drivers/types.js';
import { eventually } from '../support/runtimes.js';
import { deploymentRow, subscriptionRow } from '../support/rows.js';

/**
 * Statements the engine may send for one image revision, from its claim to its lease's
 * release. Finding candidates is three: the workspaces with work, the next work of each one
 * read (here one), and the pending deletes; reading a workspace's queue through its index
 * keeps a claim's cost off the queue's length (migration 032). The claim is two more: the
 * workspace's turn (fair slots) and the lease. In a
 * workspace without webhook subscriptions the status moves send no outbox insert: their
 * compare-and-set says nobody listens (docs/webhooks.md).
 */
const BUDGET = 14;

const TRANSACTION_CONTROL = /^\s*(begin|commit|rollback|start transaction)\b/i;

/**
 * What one image revision costs the database on the engine's happy path (instant runtime):
 * every statement sent from the claim of its deployment to the release of the lease,
 * counted where Kysely hands them to the driver, so prepared and built queries alike count.
 */
describeEachDatabase('engine statements per revision', (kind) => {
  const sent: string[] = [];
  let counting = false;
  const log = (event: LogEvent) => {
    if (counting && event.level === 'query') sent.push(event.query.sql);
  };
  let db: Db;
  let close: () => Promise<void>;
  let workspaceId: string;
  const runtime = new InProcessRuntime();
  const encryptor = new Encryptor(randomBytes(32));

  before(async () => {
    ({ db, close } = await openTestDatabase(kind, { log }));
    const org = await createTenancyService(db).createOrganization(`org-${randomUUID()}`);
    assert.ok(org);
    workspaceId = org.workspaceId;
  });
  after(async () => {
    await runtime.closeAll();
    await close();
  });

  /** A deployment with one image revision that has a secret, as a create leaves it. */
  async function imageRevision(): Promise<{ deploymentId: string; revisionId: string }> {
    const deployment = await insertDeployment(db, deploymentRow(workspaceId));
    const setId = randomUUID();
    const now = new Date().toISOString();
    const entries = encryptSecretSet(encryptor, setId, [{ name: 'OPENAI_API_KEY', value: 'sk-count' }]);
    await insertSecretSet(db, { id: setId, deployment_id: deployment.id, digest: randomUUID(), created_at: now }, entries);
    const revision = await insertRevision(db, {
      id: randomUUID(),
      deployment_id: deployment.id,
      source: 'external_docker',
      source_revision_config: { repo_ref: null, graph_config_path: null, image_uri: 'localhost/count:v1', repo_commit_sha: null, tracked_packages: null },
      resource_spec: {},
      secret_set_id: setId,
      image_ref: null,
      created_at: now,
    });
    return { deploymentId: deployment.id, revisionId: revision.id };
  }

  /** Runs the engine's claim-and-work once, as an engine slot does, counting what it sends. */
  async function engineOnce(driver: RuntimeDriver = runtime, logFlushMs = DEFAULT_ENGINE_SETTINGS.logFlushMs): Promise<string[]> {
    const settings = { ...DEFAULT_ENGINE_SETTINGS, workerId: newWorkerId(), workspaceSlots: 3, logFlushMs };
    const deps = {
      db,
      bus: new LocalEventBus(),
      encryptor,
      runtime: driver,
      builder: new FakeBuildDriver(),
      logger: pino({ level: 'silent' }),
      codehost: { knownHostsFile: '/dev/null', allowLocal: false },
      provisioners: {},
      uploads: {} as UploadStore,
      registry: undefined,
    };
    sent.length = 0;
    counting = true;
    try {
      // As the engine claims: the candidates query, then the lease's compare-and-set within the workspace's share.
      const now = new Date().toISOString();
      const [candidate] = await claimCandidates(db, now, [], 8, settings.workspaceSlots);
      assert.ok(candidate, 'the new revision is a candidate');
      const expiresAt = new Date(Date.now() + settings.leaseMs).toISOString();
      assert.equal(await takeFairLease(db, candidate, settings.workerId, now, expiresAt, settings.workspaceSlots), 'leased');
      await workOnDeployment({ ...deps, settings, deploymentId: candidate.id, work: new AbortController() });
    } finally {
      counting = false;
    }
    return [...sent];
  }

  test(`an image revision goes CREATING → DEPLOYED in at most ${BUDGET} statements`, async (t) => {
    const { deploymentId, revisionId } = await imageRevision();
    // Log lines wait for the next status move however slow the machine: what is counted is the happy path's cost, not a timer's race.
    const statements = await engineOnce(runtime, 60_000);

    const revision = await db.selectFrom('revisions').select(['status']).where('id', '=', revisionId).executeTakeFirstOrThrow();
    assert.equal(revision.status, 'DEPLOYED');
    const deployment = await db
      .selectFrom('deployments')
      .select(['status', 'active_revision_id', 'lease_owner'])
      .where('id', '=', deploymentId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(deployment, { status: 'READY', active_revision_id: revisionId, lease_owner: null });
    const timeline = await db.selectFrom('deployment_events').select(['kind', 'status']).where('revision_id', '=', revisionId).orderBy('id').execute();
    assert.deepEqual(
      timeline.filter((e) => e.kind === 'status').map((e) => e.status),
      ['QUEUED', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'],
    );
    assert.ok(
      timeline.some((e) => e.kind === 'log'),
      "the runtime's log line is kept",
    );

    const work = statements.filter((text) => !TRANSACTION_CONTROL.test(text));
    const transactions = statements.filter((text) => /^\s*(begin|start transaction)\b/i.test(text)).length;
    t.diagnostic(`${work.length} statements in ${transactions} transactions`);
    assert.ok(work.length <= BUDGET, `${work.length} statements in ${transactions} transactions (budget ${BUDGET}):\n${work.join('\n')}`);
    assert.ok(!work.some((text) => /insert into "webhook_events"/i.test(text)), 'no outbox insert where nobody listens');
  });

  test('where a subscription listens, each status move writes its outbox row, one insert each', async () => {
    const subscription = subscriptionRow(workspaceId, { events: ['revision.status_changed'] });
    await insertSubscription(db, subscription);
    try {
      const { revisionId } = await imageRevision();
      const statements = await engineOnce(runtime, 60_000);
      const inserts = statements.filter((text) => /insert into "webhook_events"/i.test(text));
      const events = await db.selectFrom('webhook_events').select(['type', 'payload']).where('workspace_id', '=', workspaceId).execute();
      const statuses = events
        .map((event) => JSON.parse(event.payload) as { revision: { id: string; status: string } })
        .filter((payload) => payload.revision.id === revisionId)
        .map((payload) => payload.revision.status);
      assert.deepEqual(statuses.sort(), ['DEPLOYED', 'DEPLOYING']);
      assert.equal(inserts.length, 2);
    } finally {
      await db.deleteFrom('webhook_subscriptions').where('id', '=', subscription.id).execute();
      await db.deleteFrom('webhook_events').where('workspace_id', '=', workspaceId).execute();
    }
  });

  test("a step's log lines are visible while it runs, not only when it ends", async () => {
    const { revisionId } = await imageRevision();
    let seenWhileRunning = false;
    // Logs a line, then keeps the step running until that line can be read (or 5 s pass).
    class SlowStart extends InProcessRuntime {
      override async start(request: RunRequest, context: StepContext): Promise<RunningRevision> {
        await context.log('INFO', 'pulling the image');
        seenWhileRunning = await eventually(
          async () =>
            (await db
              .selectFrom('deployment_events')
              .select('id')
              .where('revision_id', '=', revisionId)
              .where('message', '=', 'pulling the image')
              .executeTakeFirst()) !== undefined,
          'the log line to be written',
          5_000,
        ).catch(() => false);
        return super.start(request, context);
      }
    }
    const slow = new SlowStart();
    try {
      await engineOnce(slow);
    } finally {
      await slow.closeAll();
    }
    assert.ok(seenWhileRunning, 'the line was written while the step ran');
    const revision = await db.selectFrom('revisions').select(['status']).where('id', '=', revisionId).executeTakeFirstOrThrow();
    assert.equal(revision.status, 'DEPLOYED');
  });
});
