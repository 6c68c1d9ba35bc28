import { useLocation } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { BerthApiError, type Schemas } from '../client/index.js';
import { useWorkplace } from './context.js';
import { formatTime } from './format.js';
import { describeError, may } from './session.js';

const PAGE_SIZE = 50;

/**
 * The workspace's audit log, newest first: who changed what, when, from where, with the
 * names of the fields and secrets set (never values). Filters and page live in the URL.
 */
export function AuditPage() {
  const { session, client, link, signedOut } = useWorkplace();
  const location = useLocation();
  const { query } = location;
  const page = Math.max(0, Number(query.page ?? 0) || 0);
  const [entries, setEntries] = useState<Schemas['AuditEntry'][] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [action, setAction] = useState(query.action ?? '');
  const [targetId, setTargetId] = useState(query.target_id ?? '');
  const allowed = may(session, 'GET /v1/audit-log');

  useEffect(() => {
    if (!allowed) return;
    setEntries(null);
    client.audit
      .list({
        limit: PAGE_SIZE,
        offset: page * PAGE_SIZE,
        ...(query.action ? { action: query.action } : {}),
        ...(query.target_id ? { target_id: query.target_id } : {}),
      })
      .then(
        (answer) => {
          setEntries(answer.resources);
          setError(null);
        },
        (caught: unknown) => {
          if (caught instanceof BerthApiError && caught.status === 401) return signedOut();
          setError(describeError(caught));
        },
      );
  }, [allowed, client, page, query.action, query.target_id, signedOut]);

  if (!allowed) {
    return (
      <section>
        <h1>Audit log</h1>
        <p>This key's role may not read the audit log.</p>
      </section>
    );
  }
  const go = (to: number) => location.route(link('/audit-log', { action: query.action, target_id: query.target_id, page: to > 0 ? String(to) : undefined }));

  return (
    <section>
      <h1>Audit log</h1>
      <form
        class="filters"
        onSubmit={(event) => {
          event.preventDefault();
          location.route(link('/audit-log', { action: action.trim() || undefined, target_id: targetId.trim() || undefined }));
        }}
      >
        <label>
          Action <input value={action} placeholder="deployment.update" onInput={(event) => setAction(event.currentTarget.value)} />
        </label>
        <label>
          Target id <input value={targetId} onInput={(event) => setTargetId(event.currentTarget.value)} />
        </label>
        <button type="submit">Filter</button>
      </form>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {entries === null ? (
        !error && <p class="loading">Loading…</p>
      ) : (
        <table class="audit" data-testid="audit">
          <caption>Changes, newest first (page {page + 1})</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">Action</th>
              <th scope="col">Target</th>
              <th scope="col">Fields and secrets set</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((entry) => (
              <tr key={entry.id}>
                <td>{formatTime(entry.created_at)}</td>
                <td>
                  {entry.actor.type === 'berth' ? (
                    <>
                      Berth itself <small>({entry.actor.reason})</small>
                    </>
                  ) : (
                    `${entry.actor.key_name} (${entry.actor.role})`
                  )}
                </td>
                <td>
                  <code>{entry.action}</code>
                </td>
                <td>
                  {entry.target.type} {entry.target.name ?? entry.target.id}
                </td>
                <td>
                  {entry.changed_fields.join(', ')}
                  {entry.secret_names.length > 0 && ` · secrets: ${entry.secret_names.join(', ')}`}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pages" aria-label="Pages">
        <button type="button" disabled={page === 0} onClick={() => go(page - 1)}>
          Previous
        </button>
        <button type="button" disabled={!entries || entries.length < PAGE_SIZE} onClick={() => go(page + 1)}>
          Next
        </button>
      </nav>
    </section>
  );
}
