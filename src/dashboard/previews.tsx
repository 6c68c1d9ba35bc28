import { useEffect, useState } from 'preact/hooks';
import { BerthApiError, type Deployment, type Schemas } from '../client/index.js';
import { useWorkplace } from './context.js';
import { describeError, may } from './session.js';
import { StatusBadge } from './status.js';

type Origin = Schemas['PreviewOrigin'];

/** Which change a preview builds: `PR #12` or `branch preview/login`. */
export function originLabel(origin: Origin): string {
  return origin.kind === 'pull_request' && origin.pull_request_number !== null ? `PR #${origin.pull_request_number}` : `branch ${origin.branch ?? '?'}`;
}

export const shortSha = (sha: string) => sha.slice(0, 12);

/** Only deployments built from a repository can have previews, and a preview has none of its own. */
export const mayHavePreviews = (deployment: Pick<Deployment, 'source_config' | 'parent_deployment_id'>) =>
  deployment.parent_deployment_id === null && Boolean(deployment.source_config.repo_url);

/** A preview in a list: what it previews, named, so it is never taken for a deployment of its own. */
export function PreviewBadge({ origin, parentName }: { origin: Origin | null; parentName: string }) {
  return (
    <span class="preview-badge" data-testid="preview-badge">
      preview of {parentName}
      {origin && ` · ${originLabel(origin)}`}
    </span>
  );
}

/**
 * The names of the parents of the previews among `deployments`, by id. Parents on the same
 * page are known already; the others are read in one listing. A parent that cannot be read
 * (deleted, or not this key's) keeps its short id.
 */
export function useParentNames(deployments: Deployment[] | null): Map<string, string> {
  const { client } = useWorkplace();
  const [names, setNames] = useState(new Map<string, string>());
  useEffect(() => {
    if (!deployments) return;
    const known = new Map(deployments.map((deployment) => [deployment.id, deployment.display_name || deployment.name]));
    const missing = [...new Set(deployments.map((deployment) => deployment.parent_deployment_id).filter((id): id is string => id !== null && !known.has(id)))];
    setNames(known);
    if (missing.length === 0) return;
    let current = true;
    client.deployments.list({ deployment_ids: missing.join(','), limit: missing.length }).then(
      (found) => {
        if (!current) return;
        for (const parent of found.resources) known.set(parent.id, parent.display_name || parent.name);
        setNames(new Map(known));
      },
      // The badge still says it is a preview, with the parent's id: nothing to tell.
      () => {},
    );
    return () => {
      current = false;
    };
  }, [client, deployments]);
  return names;
}

/** On a preview's page: its parent (linked), its pull request or branch, its head commit. */
export function PreviewOf({ deployment }: { deployment: Deployment }) {
  const { client, link } = useWorkplace();
  const parentId = deployment.parent_deployment_id!;
  const [parentName, setParentName] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    client.deployments.get(parentId).then(
      (parent) => current && setParentName(parent.display_name || parent.name),
      () => current && setParentName(null),
    );
    return () => {
      current = false;
    };
  }, [client, parentId]);
  const origin = deployment.preview;
  return (
    <div class="preview-of" data-testid="preview-of">
      <h2>Preview</h2>
      <dl class="facts">
        <dt>Preview of</dt>
        <dd>
          <a href={link(`/deployments/${parentId}`)}>{parentName ?? parentId}</a>
        </dd>
        {origin && (
          <>
            <dt>{origin.kind === 'pull_request' ? 'Pull request' : 'Branch'}</dt>
            <dd>
              {originLabel(origin)}
              {origin.kind === 'pull_request' && origin.branch && (
                <>
                  {' '}
                  (<code>{origin.branch}</code>)
                </>
              )}
              {origin.fork && ' from a fork: no secrets'}
            </dd>
            <dt>Head commit</dt>
            <dd>
              <code title={origin.head_sha}>{shortSha(origin.head_sha)}</code>
            </dd>
          </>
        )}
      </dl>
    </div>
  );
}

/** On a parent's page: its previews, each linked, with what it builds and where it serves. */
export function PreviewsSection({ deployment }: { deployment: Deployment }) {
  const { session, client, link, signedOut } = useWorkplace();
  const [previews, setPreviews] = useState<Deployment[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const listable = may(session, 'GET /v2/deployments');
  useEffect(() => {
    if (!listable) return;
    let current = true;
    client.deployments.list({ parent_deployment_id: deployment.id, limit: 100 }).then(
      (found) => current && setPreviews(found.resources),
      (caught: unknown) => {
        if (caught instanceof BerthApiError && caught.status === 401) return signedOut();
        if (current) setError(describeError(caught));
      },
    );
    return () => {
      current = false;
    };
  }, [client, deployment.id, listable, signedOut]);
  // A deployer key may not list the workspace, so it cannot find the previews: nothing to offer.
  if (!listable) return null;
  return (
    <section class="previews" aria-labelledby="previews-heading" data-testid="previews">
      <h2 id="previews-heading">Previews</h2>
      <p class="hint">
        {deployment.previews.enabled ? 'Previews are on' : 'Previews are off'}: see <a href={link(`/deployments/${deployment.id}/settings`)}>Settings</a>.
      </p>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {previews === null && !error && <p class="loading">Loading…</p>}
      {previews && previews.length === 0 && <p>No previews.</p>}
      {previews && previews.length > 0 && (
        <table class="deployments">
          <thead>
            <tr>
              <th scope="col">Preview</th>
              <th scope="col">Pull request or branch</th>
              <th scope="col">Head commit</th>
              <th scope="col">Status</th>
              <th scope="col">URL</th>
            </tr>
          </thead>
          <tbody>
            {previews.map((preview) => (
              <tr key={preview.id}>
                <td>
                  <a href={link(`/deployments/${preview.id}`)}>{preview.display_name || preview.name}</a>
                </td>
                <td>{preview.preview ? originLabel(preview.preview) : '—'}</td>
                <td>{preview.preview ? <code title={preview.preview.head_sha}>{shortSha(preview.preview.head_sha)}</code> : '—'}</td>
                <td>
                  <StatusBadge status={preview.status} />
                </td>
                <td>{preview.url ? <a href={preview.url}>{preview.url}</a> : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
