import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { createPostgresDatabase, type DatabaseKind, postgresUnavailable, startTestServer, type TestServer } from '../support/server.js';
import { otherTenants } from '../support/suite.js';
import { type Received, startReceiver } from '../support/webhook-receiver.js';

const SECRET_VALUE = 'outbound-secret-value-77a1';
const ROOT = '/v1/webhook-subscriptions';

/** The verification snippet of docs/webhooks.md, run as a receiver would copy it. */
function documentedVerifier(): (secret: string, header: string, rawBody: string, toleranceSeconds?: number, nowSeconds?: number) => boolean {
  const doc = fs.readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');
  const snippet = /```js\n([\s\S]*?)```/.exec(doc)?.[1];
  assert.ok(snippet, 'docs/webhooks.md has a js snippet');
  return new Function('require', `${snippet}\nreturn verifyBerthSignature;`)(createRequire(import.meta.url));
}

const deployment = (name: string) => ({
  name,
  source: 'external_docker',
  source_config: {},
  source_revision_config: { image_uri: 'registry.example.com/agent:v1' },
  secrets: [{ name: 'OPENAI_API_KEY', value: SECRET_VALUE }],
});

const bodyOf = (request: Received) => JSON.parse(request.body) as { id: string; event_id: string; type: string; created_at: string; data: any };

const postgresSkip = await postgresUnavailable();
if (postgresSkip) process.stdout.write(`# SKIP outbound webhooks [postgres]: ${postgresSkip}\n`);

for (const kind of ['sqlite', 'postgres'] as DatabaseKind[]) {
  const skip = kind === 'postgres' ? (postgresSkip ?? false) : false;
  describe(`outbound webhooks [${kind}]`, { skip }, () => {
    let server: TestServer;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    /** The deliverer's clock runs this far ahead of the wall clock (moved to test 24 h windows). */
    let clockOffsetMs = 0;
    before(async () => {
      receiver = await startReceiver();
      server = await startTestServer(kind, {
        env: { BERTH_OUTBOUND_ALLOW_PRIVATE: 'on' },
        overrides: { webhookDelivery: { firstRetryDelayMs: 100, now: () => Date.now() + clockOffsetMs } },
      });
    });
    after(async () => {
      await server?.close();
      await receiver?.close();
    });
    const api = () => client(server.url, { key: server.adminKey });
    const subscribe = async (path: string, events: string[]) => {
      const res = await api()('POST', ROOT, { body: { url: receiver.url(path), events, description: 'tests' } });
      assert.equal(res.status, 201, res.text);
      return res.body as { id: string; secret: string; url: string; enabled: boolean };
    };
    const at = (path: string) => receiver.received.filter((request) => request.path === path);
    const deliveriesOf = async (id: string) => {
      const res = await api()('GET', `${ROOT}/${id}/deliveries?limit=100`);
      assert.equal(res.status, 200, res.text);
      return res.body.resources as any[];
    };

    test('a subscription gets signed events of its workspace, verified by the documented snippet; its secret is shown once', async () => {
      const path = `/signed-${Date.now()}`;
      const subscription = await subscribe(path, ['deployment.created', 'revision.status_changed']);
      assert.match(subscription.secret, /^whsec_/);
      const shown = await api()('GET', `${ROOT}/${subscription.id}`);
      assert.equal(shown.status, 200);
      assert.equal(shown.body.secret, undefined);
      assert.ok(!(await api()('GET', ROOT)).text.includes(subscription.secret), 'the secret is never answered again');

      const created = await api()('POST', '/v2/deployments', { body: deployment(`hooked-${Date.now()}`) });
      assert.equal(created.status, 201, created.text);
      const deployed = await eventually(
        async () => at(path).find((r) => bodyOf(r).type === 'revision.status_changed' && bodyOf(r).data.revision.status === 'DEPLOYED'),
        'a DEPLOYED event',
      );
      const createdEvent = at(path).find((r) => bodyOf(r).type === 'deployment.created');
      assert.ok(createdEvent, 'deployment.created was delivered');
      assert.equal(bodyOf(createdEvent).data.deployment.id, created.body.id);
      assert.equal(bodyOf(createdEvent).data.deployment.secrets, undefined);

      const verify = documentedVerifier();
      for (const request of at(path)) {
        assert.equal(request.headers['berth-delivery'], bodyOf(request).id);
        assert.equal(request.headers['berth-event'], bodyOf(request).type);
        assert.ok(verify(subscription.secret, String(request.headers['berth-signature']), request.body), 'the signature verifies');
        assert.ok(!verify(subscription.secret, String(request.headers['berth-signature']), request.body.replace('}', ' }')), 'a changed body does not');
        assert.ok(!verify('whsec_other', String(request.headers['berth-signature']), request.body), 'another secret does not');
        assert.ok(!request.body.includes(SECRET_VALUE), 'no secret value is sent');
      }
      const t = Number(/t=(\d+)/.exec(String(deployed.headers['berth-signature']))![1]);
      assert.ok(!verify(subscription.secret, String(deployed.headers['berth-signature']), deployed.body, 300, t + 301), 'an old signature is refused');
      assert.equal(bodyOf(deployed).data.revision.deployment_id, created.body.id);

      // The receiver has the last event before the deliverer records its answer: wait for the records.
      const deliveries = await eventually(async () => {
        const listed = await deliveriesOf(subscription.id);
        return listed.length >= 2 && listed.every((d) => d.state === 'delivered') ? listed : undefined;
      }, 'every delivery recorded as delivered');
      assert.ok(deliveries.every((d) => d.attempts.length === 1 && d.attempts[0].status_code === 200));
      assert.equal((await api()('DELETE', `${ROOT}/${subscription.id}`)).status, 204);
      assert.equal((await api()('GET', `${ROOT}/${subscription.id}`)).status, 404);
    });

    test('a failed delivery is retried with backoff until it succeeds, and can be redelivered as a new delivery', async () => {
      const path = `/retry-${Date.now()}`;
      let calls = 0;
      receiver.answerWith((request) => (request.path === path && ++calls === 1 ? { status: 500, body: 'not now' } : { status: 200, body: 'ok' }));
      const subscription = await subscribe(path, ['deployment.created']);
      await api()('POST', '/v2/deployments', { body: deployment(`retried-${Date.now()}`) });
      const [delivery] = await eventually(async () => {
        const found = await deliveriesOf(subscription.id);
        return found[0]?.state === 'delivered' ? found : undefined;
      }, 'the retried delivery');
      assert.deepEqual(
        delivery.attempts.map((a: any) => [a.number, a.status_code, a.response_excerpt]),
        [
          [1, 500, 'not now'],
          [2, 200, 'ok'],
        ],
      );
      const waited = Date.parse(delivery.attempts[1].started_at) - Date.parse(delivery.attempts[0].started_at);
      assert.ok(waited >= 50, `the retry waited (first retry delay 100 ms, half of it at least): ${waited} ms`);
      const [first, second] = at(path);
      assert.equal(first!.headers['berth-delivery'], second!.headers['berth-delivery'], 'a retry is the same delivery');

      const redelivered = await api()('POST', `${ROOT}/${subscription.id}/deliveries/${delivery.id}/redeliver`);
      assert.equal(redelivered.status, 202, redelivered.text);
      assert.equal(redelivered.body.redelivery_of, delivery.id);
      const again = await eventually(async () => at(path).find((r) => r.headers['berth-delivery'] === redelivered.body.id), 'the redelivery');
      assert.equal(bodyOf(again).event_id, delivery.event_id);
      assert.equal(bodyOf(again).id, redelivered.body.id);
      assert.ok(documentedVerifier()(subscription.secret, String(again.headers['berth-signature']), again.body));
      await api()('DELETE', `${ROOT}/${subscription.id}`);
      receiver.answerWith(() => ({ status: 200 }));
    });

    test('redirects are not followed, at most 1 KB of an answer is kept, and a subscription failing for 24 h is disabled', async () => {
      const stamp = Date.now();
      const redirect = `/redirect-${stamp}`;
      const big = `/big-${stamp}`;
      receiver.answerWith((request) => {
        if (request.path === redirect) return { status: 302, headers: { location: receiver.url(`/target-${stamp}`) } };
        if (request.path === big) return { status: 500, body: 'x'.repeat(5000) };
        return { status: 200 };
      });
      const redirected = await subscribe(redirect, ['deployment.created']);
      const failing = await subscribe(big, ['deployment.created']);
      await api()('POST', '/v2/deployments', { body: deployment(`redirected-${stamp}`) });
      const [moved] = await eventually(async () => {
        const found = await deliveriesOf(redirected.id);
        return found[0]?.attempts.length ? found : undefined;
      }, 'the redirected attempt');
      assert.equal(moved.attempts[0].status_code, 302);
      assert.notEqual(moved.state, 'delivered', 'a 3xx is not a success');
      assert.equal(at(`/target-${stamp}`).length, 0, 'the redirect was not followed');

      const [capped] = await eventually(async () => {
        const found = await deliveriesOf(failing.id);
        return found[0]?.attempts.length ? found : undefined;
      }, 'the big answer');
      assert.equal(capped.attempts[0].response_excerpt.length, 1024);

      // A day later (by the deliverer's clock) the next failure disables it, and says why.
      clockOffsetMs += 25 * 3_600_000;
      server.berth.bus.publish({ topic: 'webhooks', deploymentId: '' });
      const disabled = await eventually(async () => {
        const found = (await api()('GET', `${ROOT}/${failing.id}`)).body;
        return found.enabled === false ? found : undefined;
      }, 'the disabled subscription');
      assert.match(disabled.disabled_reason, /failed for 24 h/);
      assert.ok(disabled.failing_since);
      const [given] = await deliveriesOf(failing.id);
      assert.equal(given.state, 'failed');
      // Berth disabled it: one row of its own, however many passes follow.
      server.berth.bus.publish({ topic: 'webhooks', deploymentId: '' });
      const audit = (await api()('GET', `/v1/audit-log?target_id=${failing.id}`)).body.resources;
      assert.deepEqual(
        audit.map((row: { action: string; actor: { type: string } }) => [row.action, row.actor.type]),
        [
          ['webhook_subscription.disable', 'berth'],
          ['webhook_subscription.create', 'api_key'],
        ],
      );
      assert.match(audit[0].actor.reason, /^every delivery failed for 24 h, since /);
      assert.deepEqual(audit[0].changed_fields, ['disabled_at', 'disabled_reason', 'enabled']);
      assert.ok(!audit[0].actor.reason.includes('x'.repeat(20)), "the receiver's answer stays out of the audit log");
      const refused = await api()('POST', `${ROOT}/${failing.id}/deliveries/${given.id}/redeliver`);
      assert.equal(refused.status, 422, refused.text);
      for (const id of [redirected.id, failing.id]) await api()('DELETE', `${ROOT}/${id}`);
      receiver.answerWith(() => ({ status: 200 }));
    });

    test('a listener whose agent went silent is announced offline once per silence', async () => {
      const path = `/offline-${Date.now()}`;
      const subscription = await subscribe(path, ['listener.offline']);
      const listener = await api()('POST', '/v2/listeners', {
        body: { compute_type: 'k8s', compute_id: `offline-${Date.now()}`, compute_config: { k8s_namespaces: ['ns'] } },
      });
      assert.equal(listener.status, 201, listener.text);
      const silence = async (secondsAgo: number) => {
        // As if its agent was last heard from then (the protocol's calls set last_seen_at).
        const lastSeen = new Date(Date.now() + clockOffsetMs - secondsAgo * 1000).toISOString();
        await server.berth.db.updateTable('listeners').set({ last_seen_at: lastSeen }).where('id', '=', listener.body.id).execute();
        server.berth.bus.publish({ topic: 'webhooks', deploymentId: '' });
        return lastSeen;
      };
      const offline = (lastSeen: string) =>
        eventually(
          async () => at(path).find((r) => bodyOf(r).data.listener.id === listener.body.id && bodyOf(r).data.listener.last_seen_at === lastSeen),
          'listener.offline',
        );
      const first = await silence(200);
      const announced = await offline(first);
      assert.equal(bodyOf(announced).type, 'listener.offline');
      assert.equal(bodyOf(announced).data.listener.status, 'OFFLINE');
      // Another pass announces nothing more for the same silence.
      server.berth.bus.publish({ topic: 'webhooks', deploymentId: '' });
      const count = at(path).length;
      await eventually(async () => (await deliveriesOf(subscription.id)).every((d) => d.state === 'delivered'), 'deliveries settled');
      assert.equal(at(path).length, count);
      // Heard from again after the announcement (an hour later, by the deliverer's clock), then silent again: a new announcement.
      clockOffsetMs += 3_600_000;
      await offline(await silence(150));
      assert.equal(at(path).length, count + 1);
      await api()('DELETE', `${ROOT}/${subscription.id}`);
      await api()('DELETE', `/v2/listeners/${listener.body.id}`);
    });

    test('hostile: another workspace or organization cannot see, delete or redeliver a subscription; creates and deletes are audited', async () => {
      const path = `/isolated-${Date.now()}`;
      const subscription = await subscribe(path, ['deployment.created']);
      await api()('POST', '/v2/deployments', { body: deployment(`isolated-${Date.now()}`) });
      const [delivery] = await eventually(async () => {
        const found = await deliveriesOf(subscription.id);
        return found.length > 0 ? found : undefined;
      }, 'a delivery');
      const others = await otherTenants({ server, api: api(), anonymous: client(server.url) });
      for (const key of [others.otherWorkspaceKey, others.otherOrganizationKey]) {
        const hostile = client(server.url, { key });
        for (const [method, url] of [
          ['GET', `${ROOT}/${subscription.id}`],
          ['GET', `${ROOT}/${subscription.id}/deliveries`],
          ['POST', `${ROOT}/${subscription.id}/deliveries/${delivery.id}/redeliver`],
          ['DELETE', `${ROOT}/${subscription.id}`],
        ] as const) {
          const res = await hostile(method, url);
          assert.equal(res.status, 404, `${method} ${url}: ${res.text}`);
          assert.ok(!res.text.includes(subscription.url));
        }
        const listed = await hostile('GET', ROOT);
        assert.equal(listed.status, 200);
        assert.ok(!listed.text.includes(subscription.id));
      }
      assert.equal((await api()('GET', `${ROOT}/${subscription.id}`)).status, 200, 'still there');
      assert.equal((await api()('DELETE', `${ROOT}/${subscription.id}`)).status, 204);

      const audit = (await api()('GET', `/v1/audit-log?target_id=${subscription.id}`)).body.resources as any[];
      assert.deepEqual(
        audit.map((entry) => entry.action),
        ['webhook_subscription.delete', 'webhook_subscription.create'],
      );
      assert.ok(!JSON.stringify(audit).includes(subscription.secret), 'the secret is not in the audit log');
      assert.deepEqual(audit[1].changed_fields, ['description', 'events', 'url']);
    });
  });

  describe(`outbound webhooks to private addresses [${kind}]`, { skip }, () => {
    let server: TestServer;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    before(async () => {
      receiver = await startReceiver();
      server = await startTestServer(kind);
    });
    after(async () => {
      await server?.close();
      await receiver?.close();
    });

    test('are refused at subscription time (422 saying why), names resolving to loopback included', async () => {
      const api = client(server.url, { key: server.adminKey });
      for (const url of [
        receiver.url(),
        `http://localhost:${receiver.port}/hook`,
        'http://[::1]/hook',
        'http://[::ffff:127.0.0.1]/hook',
        'http://10.1.2.3/hook',
        'http://192.168.0.10/hook',
        'http://172.16.5.5/hook',
        'http://100.64.0.1/hook',
        'http://169.254.169.254/latest/meta-data',
        'http://0.0.0.0:8080/',
        'http://[fd00::1]/',
        'http://[fe80::1]/',
        'http://224.0.0.1/',
        'ftp://93.184.215.14/',
        'http://user:pass@93.184.215.14/',
      ]) {
        const res = await api('POST', ROOT, { body: { url, events: ['deployment.created'] } });
        assert.equal(res.status, 422, `${url}: ${res.text}`);
        assert.deepEqual(res.body.detail[0].loc, ['body', 'url']);
        assert.match(res.body.detail[0].msg, /Webhook URL refused/);
      }
      assert.match(
        (await api('POST', ROOT, { body: { url: `http://localhost:${receiver.port}/`, events: ['deployment.created'] } })).body.detail[0].msg,
        /resolves to (127\.0\.0\.1|::1).*BERTH_OUTBOUND_ALLOW_PRIVATE/,
      );
      assert.equal((await api('GET', ROOT)).body.resources.length, 0, 'nothing was stored');
      assert.equal(receiver.received.length, 0);
    });

    test('and at each delivery: a target that now resolves to loopback is not connected to', async () => {
      const api = client(server.url, { key: server.adminKey });
      // A public address passes the check at creation; the row is then pointed at a name that resolves to loopback, as a rebinding would.
      const created = await api('POST', ROOT, { body: { url: 'http://93.184.215.14/hook', events: ['deployment.created'] } });
      assert.equal(created.status, 201, created.text);
      await server.berth.db
        .updateTable('webhook_subscriptions')
        .set({ url: `http://localhost:${receiver.port}/rebound` })
        .where('id', '=', created.body.id)
        .execute();
      await api('POST', '/v2/deployments', { body: deployment(`rebound-${Date.now()}`) });
      const [delivery] = await eventually(async () => {
        const found = (await api('GET', `${ROOT}/${created.body.id}/deliveries`)).body.resources as any[];
        return found[0]?.attempts.length ? found : undefined;
      }, 'the refused attempt');
      assert.equal(delivery.attempts[0].status_code, null);
      assert.match(delivery.attempts[0].error, /resolves to (127\.0\.0\.1|::1)/);
      assert.equal(delivery.state, 'pending', 'it is retried (and refused again) until the window ends');
      assert.equal(receiver.received.length, 0, 'nothing reached the receiver');
      await api('DELETE', `${ROOT}/${created.body.id}`);
    });
  });
}

describe('outbound webhooks across a restart [postgres]', { skip: postgresSkip ?? false }, () => {
  test('a delivery that failed before a restart is retried by the next server from its rows', async (t) => {
    const database = await createPostgresDatabase();
    const receiver = await startReceiver(() => ({ status: 503 }));
    const running: Awaited<ReturnType<typeof startTestServer>>[] = [];
    // The server first: the drop ends its connections (WITH FORCE), which it would hear of
    // while still running (once, on a busy machine, as this test's failure).
    t.after(async () => {
      for (const server of running) await server.close();
      await receiver.close();
      await database.drop();
    });
    const shared = {
      postgresUrl: database.url,
      bootstrapApiKey: `berth_test_${randomUUID()}`,
      encryptionKey: randomBytes(32).toString('hex'),
      env: { BERTH_OUTBOUND_ALLOW_PRIVATE: 'on' },
      overrides: { webhookDelivery: { firstRetryDelayMs: 1000 } },
    };
    const first = await startTestServer('postgres', shared);
    let subscriptionId: string;
    try {
      const api = client(first.url, { key: shared.bootstrapApiKey });
      const created = await api('POST', ROOT, { body: { url: receiver.url('/restart'), events: ['deployment.created'] } });
      assert.equal(created.status, 201, created.text);
      subscriptionId = created.body.id;
      await api('POST', '/v2/deployments', { body: deployment(`restart-${Date.now()}`) });
      await eventually(async () => receiver.received.length > 0, 'the first, failed attempt');
    } finally {
      await first.close();
    }
    receiver.answerWith(() => ({ status: 204 }));
    const second = await startTestServer('postgres', shared);
    running.push(second);
    const api = client(second.url, { key: shared.bootstrapApiKey });
    const [delivery] = await eventually(async () => {
      const found = (await api('GET', `${ROOT}/${subscriptionId}/deliveries`)).body.resources as any[];
      return found[0]?.state === 'delivered' ? found : undefined;
    }, 'the delivery, retried by the second server');
    assert.deepEqual(
      delivery.attempts.map((a: any) => a.status_code),
      [503, 204],
    );
    const ids = new Set(receiver.received.map((r) => r.headers['berth-delivery']));
    assert.equal(ids.size, 1, 'the same delivery, not a new one');
  });
});
