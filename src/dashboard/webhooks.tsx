import { useRoute } from 'preact-iso';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { BerthApiError, type Schemas } from '../client/index.js';
import { WEBHOOK_EVENT_TYPES } from '../domain/webhooks.js';
import { useWorkplace } from './context.js';
import { formatTime, shortId } from './format.js';
import { describeError, may } from './session.js';

type Subscription = Schemas['WebhookSubscription'];
type Delivery = Schemas['WebhookDelivery'];
type EventChoice = Schemas['WebhookSubscriptionCreate']['events'][number];
const EVENT_CHOICES: EventChoice[] = [...WEBHOOK_EVENT_TYPES, 'preview.*'];
/** How often a subscription's page looks again while a delivery is pending. */
const PENDING_REFRESH_MS = 1500;

/** Runs a request, telling the page a session that ended (401) apart from a refusal to show. */
function useRequest() {
  const { signedOut } = useWorkplace();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = useCallback(
    async (action: () => Promise<void>) => {
      setBusy(true);
      setError(null);
      try {
        await action();
      } catch (caught) {
        if (caught instanceof BerthApiError && caught.status === 401) return signedOut();
        setError(describeError(caught));
      } finally {
        setBusy(false);
      }
    },
    [signedOut],
  );
  return { error, busy, run };
}

function ErrorLine({ error }: { error: string | null }) {
  return error ? (
    <p role="alert" class="error">
      {error}
    </p>
  ) : null;
}

/** The workspace's webhook subscriptions: create one (its signing secret shown once) and open each. */
export function WebhooksPage() {
  const { session, client, link } = useWorkplace();
  const [subscriptions, setSubscriptions] = useState<Subscription[] | null>(null);
  const [created, setCreated] = useState<{ url: string; secret: string } | null>(null);
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<EventChoice[]>(['revision.status_changed']);
  const { error, busy, run } = useRequest();
  const canCreate = may(session, 'POST /v1/webhook-subscriptions');

  const allowed = may(session, 'GET /v1/webhook-subscriptions');
  const load = useCallback(() => run(async () => setSubscriptions((await client.webhooks.list({ limit: 100 })).resources)), [client, run]);
  useEffect(() => {
    if (allowed) void load();
  }, [allowed, load]);

  if (!allowed) {
    return (
      <section>
        <h1>Webhooks</h1>
        <p>This key's role may not see webhook subscriptions.</p>
      </section>
    );
  }

  return (
    <section>
      <h1>Webhooks</h1>
      <ErrorLine error={error} />
      {created && (
        <div class="created-key" role="status">
          <p>
            Subscribed <code>{created.url}</code>. Its signing secret, shown this once (deliveries carry a signature made with it; see docs/webhooks.md):
          </p>
          <code data-testid="webhook-secret">{created.secret}</code>{' '}
          <button type="button" onClick={() => void navigator.clipboard.writeText(created.secret).catch(() => {})}>
            Copy secret
          </button>{' '}
          <button type="button" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      )}
      {canCreate && (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            void run(async () => {
              const made = await client.webhooks.create({ url: url.trim(), events, ...(description.trim() ? { description: description.trim() } : {}) });
              setCreated({ url: made.url, secret: made.secret });
              setUrl('');
              setDescription('');
              setSubscriptions((await client.webhooks.list({ limit: 100 })).resources);
            });
          }}
        >
          <h2>New subscription</h2>
          <label>
            Endpoint URL <input type="url" value={url} required onInput={(event) => setUrl(event.currentTarget.value)} />
          </label>
          <label>
            Description <input value={description} maxLength={200} onInput={(event) => setDescription(event.currentTarget.value)} />
          </label>
          <fieldset>
            <legend>Events</legend>
            {EVENT_CHOICES.map((choice) => (
              <label key={choice}>
                <input
                  type="checkbox"
                  checked={events.includes(choice)}
                  onChange={(event) => setEvents((current) => (event.currentTarget.checked ? [...current, choice] : current.filter((name) => name !== choice)))}
                />{' '}
                {choice}
              </label>
            ))}
          </fieldset>
          <button type="submit" disabled={busy || events.length === 0}>
            Subscribe
          </button>
        </form>
      )}
      {subscriptions === null ? (
        <p class="loading">Loading…</p>
      ) : subscriptions.length === 0 ? (
        <p>No webhook subscription yet{canCreate ? ': add one above, or with `berth webhooks create`.' : '.'}</p>
      ) : (
        <table class="webhooks">
          <caption>Subscriptions of this workspace</caption>
          <thead>
            <tr>
              <th scope="col">Endpoint</th>
              <th scope="col">Events</th>
              <th scope="col">State</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {subscriptions.map((subscription) => (
              <tr key={subscription.id}>
                <td>
                  <a href={link(`/webhooks/${subscription.id}`)}>{subscription.url}</a>
                  {subscription.description && <div class="hint">{subscription.description}</div>}
                </td>
                <td>{subscription.events.join(', ')}</td>
                <td>{stateOf(subscription)}</td>
                <td>{formatTime(subscription.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function stateOf(subscription: Subscription): string {
  if (!subscription.enabled) return `disabled${subscription.disabled_reason ? `: ${subscription.disabled_reason}` : ''}`;
  return subscription.failing_since ? `failing since ${formatTime(subscription.failing_since)}` : 'enabled';
}

/** One subscription: its deliveries with each attempt's status code, redelivery, and delete with confirmation. */
export function WebhookPage() {
  const { session, client, link } = useWorkplace();
  const { params } = useRoute();
  const subscriptionId = params.subscriptionId!;
  const [subscription, setSubscription] = useState<Subscription | null>(null);
  const [deliveries, setDeliveries] = useState<Delivery[] | null>(null);
  const [deleted, setDeleted] = useState(false);
  const { error, busy, run } = useRequest();
  const canDelete = may(session, 'DELETE /v1/webhook-subscriptions/{subscription_id}');
  const canRedeliver = may(session, 'POST /v1/webhook-subscriptions/{subscription_id}/deliveries/{delivery_id}/redeliver');

  const fetchAll = useCallback(async () => {
    const [found, page] = await Promise.all([client.webhooks.get(subscriptionId), client.webhooks.deliveries(subscriptionId, { limit: 100 })]);
    setSubscription(found);
    setDeliveries(page.resources);
  }, [client, subscriptionId]);
  const load = useCallback(() => run(fetchAll), [run, fetchAll]);
  useEffect(() => void load(), [load]);
  // Deliveries are sent in the background: while one waits, look again now and then.
  const waiting = deliveries?.some((delivery) => delivery.state === 'pending') ?? false;
  useEffect(() => {
    if (!waiting) return;
    const timer = setInterval(() => void fetchAll().catch(() => {}), PENDING_REFRESH_MS);
    return () => clearInterval(timer);
  }, [waiting, fetchAll]);

  const crumbs = (
    <p class="crumbs">
      <a href={link('/webhooks')}>Webhooks</a> /
    </p>
  );
  if (deleted) {
    return (
      <section>
        {crumbs}
        <h1>Subscription deleted</h1>
        <p role="status">Nothing more is delivered to it.</p>
      </section>
    );
  }
  if (!subscription) {
    return (
      <section>
        {crumbs}
        <h1>Webhook subscription</h1>
        {error ? <ErrorLine error={error} /> : <p class="loading">Loading…</p>}
      </section>
    );
  }
  return (
    <section>
      {crumbs}
      <h1>{subscription.url}</h1>
      <ErrorLine error={error} />
      <dl class="facts">
        <dt>Events</dt>
        <dd>{subscription.events.join(', ')}</dd>
        <dt>State</dt>
        <dd>{stateOf(subscription)}</dd>
        <dt>Created</dt>
        <dd>{formatTime(subscription.created_at)}</dd>
      </dl>
      <p class="links">
        <button type="button" onClick={() => void load()} disabled={busy}>
          Refresh
        </button>{' '}
        {canDelete && (
          <button
            type="button"
            class="danger"
            disabled={busy}
            onClick={() => {
              if (window.confirm(`Delete the subscription to ${subscription.url}? Its deliveries go with it.`))
                void run(async () => {
                  await client.webhooks.delete(subscription.id);
                  setDeleted(true);
                });
            }}
          >
            Delete subscription
          </button>
        )}
      </p>
      <table class="deliveries" data-testid="deliveries">
        <caption>Deliveries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">State</th>
            <th scope="col">Attempts (status code)</th>
            <th scope="col">Created</th>
            {canRedeliver && <th scope="col">Redeliver</th>}
          </tr>
        </thead>
        <tbody>
          {(deliveries ?? []).map((delivery) => (
            <tr key={delivery.id} data-state={delivery.state}>
              <td>
                {delivery.event_type}
                {delivery.redelivery_of && <div class="hint">redelivery of {shortId(delivery.redelivery_of)}</div>}
              </td>
              <td>{delivery.state}</td>
              <td>
                {delivery.attempts.length === 0
                  ? 'none yet'
                  : delivery.attempts.map((attempt) => (
                      <div key={attempt.number} class="attempt">
                        #{attempt.number}: {attempt.status_code ?? attempt.error ?? 'no answer'} ({attempt.duration_ms} ms)
                      </div>
                    ))}
              </td>
              <td>{formatTime(delivery.created_at)}</td>
              {canRedeliver && (
                <td>
                  <button
                    type="button"
                    disabled={busy}
                    onClick={() =>
                      void run(async () => {
                        await client.webhooks.redeliver(subscription.id, delivery.id);
                        await fetchAll();
                      })
                    }
                  >
                    Redeliver {shortId(delivery.id)}
                  </button>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
      {deliveries?.length === 0 && <p>No delivery yet: one is made for each event the subscription asks for.</p>}
    </section>
  );
}
