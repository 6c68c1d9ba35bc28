import { useLocation } from 'preact-iso';
import { useEffect, useRef, useState } from 'preact/hooks';
import { BerthApiError, type Deployment, type WorkspaceEvent } from '../client/index.js';
import { plainText } from './ansi.js';
import { useWorkplace } from './context.js';
import { formatTime, shortId } from './format.js';
import { describeError, may } from './session.js';
import { StatusBadge } from './status.js';

const PAGE_SIZE = 100;
/** Events kept on screen while following: the oldest go first (`Older` reads them again). */
const KEPT = 1000;
const EVENT_NAMES = ['status', 'log', 'push_ignored_pinned'] as const;
type EventName = (typeof EVENT_NAMES)[number];

interface Shown {
  events: WorkspaceEvent[];
  /** Where the page of older events starts; null when there is none. */
  older: string | null;
  connection: 'connecting' | 'live' | 'reconnecting' | 'ended';
}

/**
 * The workspace's events, newest first and live: every deployment's status changes, log
 * lines and ignored pushes, filtered by deployment and kind (in the URL, so a filtered view
 * can be pasted). The newest page is read first; the stream goes on from its newest event,
 * so nothing is missed or shown twice in between.
 */
export function WorkspaceEventsPage() {
  const { session, client, link, signedOut } = useWorkplace();
  const location = useLocation();
  const deploymentId = location.query.deployment || undefined;
  const event = EVENT_NAMES.find((name) => name === location.query.event);
  const [shown, setShown] = useState<Shown>({ events: [], older: null, connection: 'connecting' });
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [deployments, setDeployments] = useState<Deployment[]>([]);
  const allowed = may(session, 'GET /v2/events/stream');
  const asked = useRef(new Set<string>());

  useEffect(() => {
    if (!allowed) return;
    client.deployments.list({ limit: 100 }).then(
      (page) => setDeployments(page.resources),
      () => setDeployments([]),
    );
  }, [allowed, client]);

  // A deployment made after the list was read is looked up once, for its name.
  useEffect(() => {
    const known = new Set(deployments.map((deployment) => deployment.id));
    for (const item of shown.events) {
      const id = item.data.deployment_id;
      if (known.has(id) || asked.current.has(id)) continue;
      asked.current.add(id);
      client.deployments.get(id).then(
        (found) => setDeployments((current) => [...current, found]),
        () => {},
      );
    }
  }, [shown.events, deployments, client]);

  useEffect(() => {
    if (!allowed) return;
    const abort = new AbortController();
    const filters = { ...(deploymentId ? { deployment_id: deploymentId } : {}), ...(event ? { event } : {}) };
    const failed = (caught: unknown) => {
      if (abort.signal.aborted) return;
      if (caught instanceof BerthApiError && caught.status === 401) return signedOut();
      setError(describeError(caught));
      setShown((current) => ({ ...current, connection: 'ended' }));
    };
    setLoaded(false);
    setError(null);
    setShown({ events: [], older: null, connection: 'connecting' });
    (async () => {
      try {
        const first = await client.events.list({ ...filters, limit: PAGE_SIZE });
        if (abort.signal.aborted) return;
        setShown({ events: first.resources.map(asClientEvent), older: first.next_cursor, connection: 'live' });
        setLoaded(true);
        const newest = first.resources[0]?.id;
        let lastId = newest ?? 0;
        const stream = client.followWorkspaceEvents({
          ...filters,
          // From the newest event read (or from the first one written, in a workspace with none yet).
          lastEventId: String(newest ?? 0),
          signal: abort.signal,
          onReconnect: () => setShown((current) => ({ ...current, connection: 'reconnecting' })),
        });
        for await (const item of stream) {
          const id = Number(item.id);
          if (id <= lastId) continue;
          lastId = id;
          setShown((current) => ({ ...current, events: [item, ...current.events].slice(0, KEPT), connection: 'live' }));
        }
      } catch (caught) {
        failed(caught);
      }
    })();
    return () => abort.abort();
  }, [allowed, client, deploymentId, event, signedOut]);

  if (!allowed) {
    return (
      <section>
        <h1>Events</h1>
        <p>This key's role may not read the whole workspace's events: open a deployment to see its own.</p>
      </section>
    );
  }

  async function older() {
    if (!shown.older) return;
    try {
      const page = await client.events.list({
        ...(deploymentId ? { deployment_id: deploymentId } : {}),
        ...(event ? { event } : {}),
        limit: PAGE_SIZE,
        cursor: shown.older,
      });
      setShown((current) => ({ ...current, events: [...current.events, ...page.resources.map(asClientEvent)], older: page.next_cursor }));
    } catch (caught) {
      setError(describeError(caught));
    }
  }

  const names = new Map(deployments.map((deployment) => [deployment.id, deployment.name]));
  const filter = (next: { deployment?: string | undefined; event?: string | undefined }) =>
    location.route(link('/events', { deployment: deploymentId, event, ...next }));

  return (
    <section>
      <h1>
        Events <span class={`connection connection-${shown.connection}`}>{shown.connection}</span>
      </h1>
      <div class="filters">
        <label>
          Deployment{' '}
          <select value={deploymentId ?? ''} onChange={(change) => filter({ deployment: change.currentTarget.value || undefined })}>
            <option value="">all</option>
            {deploymentId && !names.has(deploymentId) && <option value={deploymentId}>{shortId(deploymentId)}</option>}
            {deployments.map((deployment) => (
              <option key={deployment.id} value={deployment.id}>
                {deployment.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind{' '}
          <select value={event ?? ''} onChange={(change) => filter({ event: change.currentTarget.value || undefined })}>
            <option value="">all</option>
            <option value="status">status changes</option>
            <option value="log">log lines</option>
            <option value="push_ignored_pinned">pushes ignored while pinned</option>
          </select>
        </label>
      </div>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {!loaded && !error && <p class="loading">Loading…</p>}
      {loaded && shown.events.length === 0 && (
        <p>
          No event yet. Events appear here as deployments are created, built and deployed: start with <code>berth deploy</code>.
        </p>
      )}
      {shown.events.length > 0 && (
        <table class="events" data-testid="events">
          <caption>Newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Deployment</th>
              <th scope="col">Kind</th>
              <th scope="col">What</th>
            </tr>
          </thead>
          <tbody>
            {shown.events.map((item) => (
              <tr key={item.id} data-event={item.event}>
                <td>{formatTime(item.event === 'log' ? new Date(item.data.timestamp).toISOString() : item.data.at)}</td>
                <td>
                  <a href={link(`/deployments/${item.data.deployment_id}${item.data.revision_id ? `/revisions/${item.data.revision_id}` : ''}`)}>
                    {names.get(item.data.deployment_id) ?? shortId(item.data.deployment_id)}
                  </a>
                </td>
                <td>{item.event === 'push_ignored_pinned' ? 'push ignored' : item.event}</td>
                <td>
                  <What item={item} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {shown.older && (
        <button type="button" onClick={() => void older()}>
          Older
        </button>
      )}
    </section>
  );
}

function What({ item }: { item: WorkspaceEvent }) {
  if (item.event === 'status') {
    return (
      <>
        <StatusBadge status={item.data.status} />
        {item.data.message && ` ${item.data.message}`}
      </>
    );
  }
  if (item.event === 'log') {
    return (
      <span class={`level-${item.data.level.toLowerCase()}`}>
        {item.data.level} {plainText(item.data.message)}
      </span>
    );
  }
  return (
    <>
      commit <code>{item.data.commit.slice(0, 12)}</code>: {item.data.message}
    </>
  );
}

/** A page's event in the stream's form (ids as strings), so both are shown alike. */
function asClientEvent(event: { id: number; event: EventName; data: unknown }): WorkspaceEvent {
  return { ...event, id: String(event.id) } as WorkspaceEvent;
}
