import { useLocation, useRoute } from 'preact-iso';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { BerthApiError, type Deployment, type Revision } from '../client/index.js';
import { Actions } from './actions.js';
import { useWorkplace } from './context.js';
import { listenerOf, sourceOf } from './deployments.js';
import { useDeploymentEvents } from './events.js';
import { formatTime, shortId } from './format.js';
import { PinPanel } from './pin.js';
import { mayHavePreviews, PreviewOf, PreviewsSection } from './previews.js';
import { describeError } from './session.js';
import { StatusBadge } from './status.js';
import { Timeline } from './timeline.js';

/** One deployment: what serves now, the actions its key allows, and the live timeline of a revision. */
export function DeploymentPage() {
  const { client, link, signedOut } = useWorkplace();
  const { params } = useRoute();
  const location = useLocation();
  const deploymentId = params.deploymentId!;
  const [deployment, setDeployment] = useState<Deployment | null>(null);
  const [revisions, setRevisions] = useState<Revision[]>([]);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    try {
      const [found, history] = await Promise.all([client.deployments.get(deploymentId), client.revisions.list(deploymentId, { limit: 20 })]);
      setDeployment(found);
      setRevisions(history.resources);
      setError(null);
    } catch (caught) {
      if (caught instanceof BerthApiError && caught.status === 401) return signedOut();
      setError(describeError(caught));
    }
  }, [client, deploymentId, signedOut]);

  useEffect(() => {
    setDeployment(null);
    void load();
  }, [load]);
  // A status change may change what serves and the revision list: read them again.
  const events = useDeploymentEvents(client, deploymentId, () => void load(), signedOut);

  if (error && !deployment) {
    return (
      <section>
        <h1>Deployment</h1>
        <p role="alert" class="error">
          {error}
        </p>
        <a href={link('/deployments')}>Back to the deployments</a>
      </section>
    );
  }
  if (!deployment) return <p class="loading">Loading…</p>;
  const revisionId = params.revisionId ?? deployment.latest_revision_id ?? undefined;
  const selected = revisions.find((revision) => revision.id === revisionId);

  return (
    <section>
      <p class="crumbs">
        <a href={link('/deployments')}>Deployments</a> /
      </p>
      <h1>{deployment.display_name || deployment.name}</h1>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <div class="columns">
        <div>
          <h2>Serving now</h2>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={deployment.status} />
            </dd>
            <dt>Revision</dt>
            <dd>
              <code data-testid="serving-revision">{shortId(deployment.active_revision_id)}</code>
            </dd>
            <dt>Source</dt>
            <dd class="source">{sourceOf(deployment)}</dd>
            <dt>Listener</dt>
            <dd>
              <code>{shortId(listenerOf(deployment))}</code>
            </dd>
            <dt>URL</dt>
            <dd>{deployment.url ? <a href={deployment.url}>{deployment.url}</a> : 'not serving yet'}</dd>
          </dl>
          {deployment.url && <SdkSnippet url={deployment.url} />}
          {deployment.parent_deployment_id && <PreviewOf deployment={deployment} />}
          <PinPanel deployment={deployment} revisions={revisions} ignoredPushes={events.ignoredPushes} onChanged={load} />
          <p class="links">
            <a href={link(`/deployments/${deployment.id}/history`)}>History and diff</a> ·{' '}
            <a href={link(`/deployments/${deployment.id}/settings`)}>Settings and secrets</a>
          </p>
          <Actions deployment={deployment} revision={selected} onChanged={load} onDeleted={() => location.route(link('/deployments'))} />
          {mayHavePreviews(deployment) && <PreviewsSection deployment={deployment} />}
        </div>
        <div>
          <h2>
            Revision {selected ? `#${selected.revision_number}` : shortId(revisionId)}{' '}
            <span class={`connection connection-${events.connection}`}>{events.connection}</span>
          </h2>
          {revisionId && <a href={link(`/deployments/${deployment.id}/revisions/${revisionId}/logs`)}>Logs of this revision</a>}
          {events.error && (
            <p role="alert" class="error">
              {events.error}
            </p>
          )}
          {revisionId ? <Timeline revisionId={revisionId} statuses={events.statuses} logs={events.logs} /> : <p>No revision yet.</p>}
          <h2>Revisions</h2>
          <ol class="revisions">
            {revisions.map((revision) => (
              <li key={revision.id}>
                <a href={link(`/deployments/${deployment.id}/revisions/${revision.id}`)} aria-current={revision.id === revisionId ? 'page' : undefined}>
                  #{revision.revision_number}
                </a>{' '}
                <StatusBadge status={revision.status} /> {formatTime(revision.created_at)}
                {revision.id === deployment.active_revision_id && <span class="serving"> serving</span>}
              </li>
            ))}
          </ol>
        </div>
      </div>
    </section>
  );
}

/** How to call the deployment from code, ready to copy. */
function SdkSnippet({ url }: { url: string }) {
  const snippet = `import { Client } from '@langchain/langgraph-sdk';\n\nconst client = new Client({ apiUrl: '${url}' });\nconst assistants = await client.assistants.search();`;
  const [copied, setCopied] = useState(false);
  return (
    <div class="snippet">
      <pre>
        <code>{snippet}</code>
      </pre>
      <button
        type="button"
        onClick={() =>
          navigator.clipboard.writeText(snippet).then(
            () => setCopied(true),
            () => setCopied(false),
          )
        }
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}
