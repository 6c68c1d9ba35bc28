import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { startRetention } from '../../src/engine/retention.js';
import { createTenancyService } from '../../src/services/tenancy.js';
import type { Db } from '../../src/store/database.js';
import { insertAuditRow } from '../../src/store/repositories/audit.js';
import { insertAttempt, insertDeliveries, insertSubscription } from '../../src/store/repositories/webhooks.js';
import { describeEachDatabase, openTestDatabase } from '../support/database.js';
import { subscriptionRow } from '../support/rows.js';

const DAY_MS = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** What the engine's retention loop removes, and what it keeps, run at its start and awaited at its stop. */
describeEachDatabase('retention', (kind) => {
  let db: Db;
  let close: () => Promise<void>;
  let organizationId: string;
  let workspaceId: string;

  before(async () => {
    ({ db, close } = await openTestDatabase(kind));
    const org = await createTenancyService(db).createOrganization(`org-${randomUUID()}`);
    assert.ok(org);
    ({ organizationId, workspaceId } = org);
  });
  after(() => close());

  /** A delivery made `daysAgo` days ago in `state`, with one attempt; answers its id. */
  async function delivery(subscriptionId: string, daysAgo: number, state: 'pending' | 'delivered' | 'failed', now: number): Promise<string> {
    const id = randomUUID();
    const at = iso(now - daysAgo * DAY_MS);
    await insertDeliveries(db, [
      {
        id,
        subscription_id: subscriptionId,
        event_id: randomUUID(),
        event_type: 'deployment.created',
        body: '{}',
        state,
        attempts: 1,
        created_at: at,
        next_attempt_at: state === 'pending' ? at : null,
        leased_until: null,
        last_status_code: 500,
        last_error: 'answered 500',
        redelivery_of: null,
      },
    ]);
    await insertAttempt(db, {
      id: randomUUID(),
      delivery_id: id,
      number: 1,
      started_at: at,
      duration_ms: 5,
      status_code: 500,
      response_excerpt: null,
      error: null,
    });
    return id;
  }

  test('finished webhook deliveries past their days go with their attempts; pending and recent ones stay; the audit log keeps its own days', async () => {
    const now = Date.now();
    const subscription = subscriptionRow(workspaceId, { created_at: iso(now - 90 * DAY_MS) });
    await insertSubscription(db, subscription);
    const subscriptionId = subscription.id;
    const oldDelivered = await delivery(subscriptionId, 31, 'delivered', now);
    const oldFailed = await delivery(subscriptionId, 45, 'failed', now);
    const oldPending = await delivery(subscriptionId, 31, 'pending', now);
    const recent = await delivery(subscriptionId, 29, 'delivered', now);
    const change = {
      organizationId,
      workspaceId,
      actor: { type: 'berth' as const, reason: 'test' },
      target: { type: 'revision', id: randomUUID(), name: null },
    };
    await insertAuditRow(db, { ...change, action: 'revision.interrupt' });
    const auditIds = await db.selectFrom('audit_log').select('id').execute();

    // One pass, at start, awaited by stop(): deliveries are kept 30 days, the audit log 365.
    const retention = startRetention(db, { audit: 365, webhookDeliveries: 30 }, pino({ level: 'silent' }), () => now);
    await retention.stop();

    const deliveries = await db.selectFrom('webhook_deliveries').select('id').where('subscription_id', '=', subscriptionId).execute();
    assert.deepEqual(deliveries.map((row) => row.id).sort(), [oldPending, recent].sort());
    const attempts = await db.selectFrom('webhook_attempts').select('delivery_id').execute();
    assert.deepEqual(attempts.map((row) => row.delivery_id).sort(), [oldPending, recent].sort());
    assert.ok(![oldDelivered, oldFailed].some((id) => attempts.some((row) => row.delivery_id === id)));
    assert.equal((await db.selectFrom('audit_log').select('id').execute()).length, auditIds.length, 'the audit log keeps a year');

    // A year and a day later, the audit row goes too.
    const later = startRetention(db, { audit: 365, webhookDeliveries: 30 }, pino({ level: 'silent' }), () => now + 366 * DAY_MS);
    await later.stop();
    assert.equal((await db.selectFrom('audit_log').select('id').execute()).length, 0);
  });
});
