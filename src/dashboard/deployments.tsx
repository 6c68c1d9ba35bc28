import { useLocation } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import type { Deployment } from '../client/index.js';
import { useWorkplace } from './context.js';
import { formatTime, shortId } from './format.js';
import { PreviewBadge, useParentNames } from './previews.js';
import { describeError, may } from './session.js';
import { DEPLOYMENT_STATUSES, StatusBadge } from './status.js';
import { BerthApiError } from '../client/index.js';

const PAGE_SIZE = 20;

/** The list's preview filter as it is in the URL (`?previews=`), and what it asks the API. */
const PREVIEW_FILTERS = { only: { is_preview: true }, none: { is_preview: false } } as const;
type PreviewFilter = keyof typeof PREVIEW_FILTERS;
const previewFilterOf = (value: string | undefined): PreviewFilter | '' => (value === 'only' || value === 'none' ? value : '');

/** Where a deployment's code comes from: repository@commit, or the image. */
export function sourceOf(deployment: Pick<Deployment, 'source_config' | 'source_revision_config'>): string {
  const config = (deployment.source_config ?? {}) as { repo_url?: string | null };
  const revision = (deployment.source_revision_config ?? {}) as { image_uri?: string | null; repo_commit_sha?: string | null; repo_ref?: string | null };
  if (revision.image_uri) return revision.image_uri;
  if (config.repo_url) return `${config.repo_url}@${(revision.repo_commit_sha ?? revision.repo_ref ?? 'HEAD').slice(0, 12)}`;
  return '—';
}

export const listenerOf = (deployment: Pick<Deployment, 'source_config'>) =>
  ((deployment.source_config ?? {}) as { listener_id?: string | null }).listener_id ?? null;

/** The deployments of the workspace (or, for a deployer key, the key's own). */
export function DeploymentsPage() {
  const { session } = useWorkplace();
  return may(session, 'GET /v2/deployments') ? <WorkspaceDeployments /> : <OwnDeployments ids={session.deployment_ids} />;
}

/** A deployer key may not list the workspace: it is offered the deployments it was made for. */
function OwnDeployments({ ids }: { ids: string[] }) {
  const { link } = useWorkplace();
  return (
    <section>
      <h1>Deployments</h1>
      {ids.length === 0 ? (
        <p>This key may not list deployments.</p>
      ) : (
        <>
          <p>This key acts on these deployments only:</p>
          <ul>
            {ids.map((id) => (
              <li key={id}>
                <a href={link(`/deployments/${id}`)}>
                  <code>{id}</code>
                </a>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

/** The deployments of the workspace: search by name, filter by status and previews, pages from the server; all of it in the URL. */
function WorkspaceDeployments() {
  const { client, link, signedOut } = useWorkplace();
  const location = useLocation();
  const search = location.query.q ?? '';
  const status = location.query.status ?? '';
  const previews = previewFilterOf(location.query.previews);
  const page = Math.max(0, Number.parseInt(location.query.page ?? '0', 10) || 0);
  const [draft, setDraft] = useState(search);
  const [answer, setAnswer] = useState<{ resources: Deployment[] } | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => setDraft(search), [search]);
  useEffect(() => {
    let current = true;
    setError(null);
    const query = {
      limit: PAGE_SIZE,
      offset: page * PAGE_SIZE,
      ...(search ? { name_contains: search } : {}),
      ...(status ? { status } : {}),
      ...(previews ? PREVIEW_FILTERS[previews] : {}),
    };
    client.deployments.list(query).then(
      (found) => current && setAnswer(found),
      (caught: unknown) => {
        if (caught instanceof BerthApiError && caught.status === 401) return signedOut();
        if (current) setError(describeError(caught));
      },
    );
    return () => {
      current = false;
    };
  }, [client, search, status, previews, page, signedOut]);
  const parentNames = useParentNames(answer?.resources ?? null);

  const go = (next: { q?: string; status?: string; previews?: string; page?: number }) =>
    location.route(
      link('/deployments', {
        q: next.q ?? search,
        status: next.status ?? status,
        previews: next.previews ?? previews,
        page: next.page ? String(next.page) : undefined,
      }),
    );
  const filtered = search !== '' || status !== '' || previews !== '' || page > 0;

  return (
    <section>
      <h1>Deployments</h1>
      <form
        class="filters"
        role="search"
        onSubmit={(event) => {
          event.preventDefault();
          go({ q: draft, page: 0 });
        }}
      >
        <label>
          Name contains <input type="search" name="q" value={draft} onInput={(event) => setDraft(event.currentTarget.value)} />
        </label>
        <label>
          Status{' '}
          <select name="status" value={status} onChange={(event) => go({ status: event.currentTarget.value, page: 0 })}>
            <option value="">any</option>
            {DEPLOYMENT_STATUSES.map((value) => (
              <option key={value} value={value}>
                {value.toLowerCase().replaceAll('_', ' ')}
              </option>
            ))}
          </select>
        </label>
        <label>
          Previews{' '}
          <select name="previews" value={previews} onChange={(event) => go({ previews: event.currentTarget.value, page: 0 })}>
            <option value="">shown</option>
            <option value="only">previews only</option>
            <option value="none">no previews</option>
          </select>
        </label>
        <button type="submit">Search</button>
      </form>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {answer === null && !error && <p class="loading">Loading…</p>}
      {answer && answer.resources.length === 0 && (filtered ? <p>No deployment matches.</p> : <EmptyWorkspace />)}
      {answer && answer.resources.length > 0 && (
        <table class="deployments">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Serving</th>
              <th scope="col">Source</th>
              <th scope="col">URL</th>
              <th scope="col">Listener</th>
              <th scope="col">Last change</th>
            </tr>
          </thead>
          <tbody>
            {answer.resources.map((deployment) => (
              <tr key={deployment.id}>
                <td>
                  <a href={link(`/deployments/${deployment.id}`)}>{deployment.display_name || deployment.name}</a>
                  {deployment.parent_deployment_id && (
                    <>
                      {' '}
                      <PreviewBadge
                        origin={deployment.preview}
                        parentName={parentNames.get(deployment.parent_deployment_id) ?? shortId(deployment.parent_deployment_id)}
                      />
                    </>
                  )}
                </td>
                <td>
                  <StatusBadge status={deployment.status} />
                </td>
                <td>
                  <code>{shortId(deployment.active_revision_id)}</code>
                </td>
                <td class="source">{sourceOf(deployment)}</td>
                <td>{deployment.url ? <a href={deployment.url}>{deployment.url}</a> : '—'}</td>
                <td>
                  <code>{shortId(listenerOf(deployment))}</code>
                </td>
                <td>{formatTime(deployment.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {answer && (page > 0 || answer.resources.length === PAGE_SIZE) && (
        <nav class="pages" aria-label="Pages">
          <button type="button" disabled={page === 0} onClick={() => go({ page: page - 1 })}>
            Previous
          </button>
          <span>Page {page + 1}</span>
          <button type="button" disabled={answer.resources.length < PAGE_SIZE} onClick={() => go({ page: page + 1 })}>
            Next
          </button>
        </nav>
      )}
    </section>
  );
}

function EmptyWorkspace() {
  return (
    <div class="empty">
      <p>No deployment in this workspace yet. Start one from a terminal:</p>
      <pre>
        <code>{`berth deploy --name my-agent --image registry.example/agent:1.2`}</code>
      </pre>
      <p>or, from a LangGraph project:</p>
      <pre>
        <code>{`langgraph deploy --remote --name my-agent`}</code>
      </pre>
    </div>
  );
}
