import { useLocation, useRoute } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { BerthApiError, type Revision } from '../client/index.js';
import { useWorkplace } from './context.js';
import { formatTime } from './format.js';
import { describeError } from './session.js';
import { StatusBadge } from './status.js';

/** One line of a diff: what a field was in the older revision and is in the newer one. */
interface Row {
  field: string;
  before: string;
  after: string;
}

const text = (value: unknown) => (value === null || value === undefined || value === '' ? '—' : typeof value === 'string' ? value : JSON.stringify(value));

/**
 * The rows that tell two revisions apart: commit, image, configuration (source_revision_config
 * and build_inputs) and secret names. The API gives a revision's secrets to no one, so their
 * names come from what the deployment shows for its latest revision only: they are not compared.
 */
export function diffRevisions(older: Revision, newer: Revision): Row[] {
  const rows: Row[] = [];
  const add = (field: string, before: unknown, after: unknown) => rows.push({ field, before: text(before), after: text(after) });
  add('commit', older.source_revision_config.repo_commit_sha, newer.source_revision_config.repo_commit_sha);
  add('image', older.source_revision_config.image_uri, newer.source_revision_config.image_uri);
  const config = (revision: Revision) => ({ ...revision.source_revision_config }) as Record<string, unknown>;
  for (const field of Object.keys({ ...config(older), ...config(newer) }).sort()) {
    if (field === 'repo_commit_sha' || field === 'image_uri') continue;
    add(`source_revision_config.${field}`, config(older)[field], config(newer)[field]);
  }
  const inputs = (revision: Revision) => (revision.build_inputs ?? {}) as Record<string, unknown>;
  for (const field of Object.keys({ ...inputs(older), ...inputs(newer) }).sort()) add(`build_inputs.${field}`, inputs(older)[field], inputs(newer)[field]);
  add('resource_spec', older.resource_spec, newer.resource_spec);
  return rows;
}

/** One side of the comparison: a revision picked by its number. */
function RevisionChoice({ label, revisions, chosen, onChoose }: { label: string; revisions: Revision[]; chosen: Revision; onChoose(id: string): void }) {
  return (
    <label>
      {label}{' '}
      <select value={chosen.id} onChange={(event) => onChoose(event.currentTarget.value)}>
        {revisions.map((revision) => (
          <option key={revision.id} value={revision.id}>
            #{revision.revision_number}
          </option>
        ))}
      </select>
    </label>
  );
}

/** A deployment's revisions, two of them chosen (`?from=&to=` in the URL) and compared. */
export function HistoryPage() {
  const { client, link, signedOut } = useWorkplace();
  const { params } = useRoute();
  const location = useLocation();
  const deploymentId = params.deploymentId!;
  const [revisions, setRevisions] = useState<Revision[] | null>(null);
  const [secretNames, setSecretNames] = useState<string[]>([]);
  const [name, setName] = useState('');
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    Promise.all([client.deployments.get(deploymentId), client.revisions.list(deploymentId, { limit: 100 })]).then(
      ([deployment, page]) => {
        setName(deployment.display_name || deployment.name);
        setSecretNames(deployment.secrets.map((secret) => secret.name));
        setRevisions(page.resources);
      },
      (caught: unknown) => {
        if (caught instanceof BerthApiError && caught.status === 401) return signedOut();
        setError(describeError(caught));
      },
    );
  }, [client, deploymentId, signedOut]);

  if (error) {
    return (
      <section>
        <h1>History</h1>
        <p role="alert" class="error">
          {error}
        </p>
      </section>
    );
  }
  if (!revisions) return <p class="loading">Loading…</p>;
  const from = revisions.find((revision) => revision.id === location.query.from) ?? revisions[1] ?? revisions[0];
  const to = revisions.find((revision) => revision.id === location.query.to) ?? revisions[0];
  const choose = (which: 'from' | 'to', id: string) =>
    location.route(link(`/deployments/${deploymentId}/history`, { from: which === 'from' ? id : from?.id, to: which === 'to' ? id : to?.id }));
  const rows = from && to ? diffRevisions(from, to) : [];

  return (
    <section>
      <p class="crumbs">
        <a href={link('/deployments')}>Deployments</a> / <a href={link(`/deployments/${deploymentId}`)}>{name}</a> /
      </p>
      <h1>History of {name}</h1>
      <table class="history">
        <caption>Revisions, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Revision</th>
            <th scope="col">Status</th>
            <th scope="col">Created</th>
            <th scope="col">Commit or image</th>
          </tr>
        </thead>
        <tbody>
          {revisions.map((revision) => (
            <tr key={revision.id}>
              <td>
                <a href={link(`/deployments/${deploymentId}/revisions/${revision.id}`)}>#{revision.revision_number}</a>
              </td>
              <td>
                <StatusBadge status={revision.status} />
              </td>
              <td>{formatTime(revision.created_at)}</td>
              <td>
                <code>{revision.source_revision_config.repo_commit_sha?.slice(0, 12) ?? revision.source_revision_config.image_uri ?? '—'}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {from && to && (
        <>
          <h2>Compare</h2>
          <div class="compare">
            <RevisionChoice label="From" revisions={revisions} chosen={from} onChoose={(id) => choose('from', id)} />
            <RevisionChoice label="To" revisions={revisions} chosen={to} onChoose={(id) => choose('to', id)} />
          </div>
          <table class="diff" data-testid="diff">
            <caption>
              #{from.revision_number} → #{to.revision_number}
            </caption>
            <thead>
              <tr>
                <th scope="col">Field</th>
                <th scope="col">#{from.revision_number}</th>
                <th scope="col">#{to.revision_number}</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.field} class={row.before === row.after ? 'same' : 'changed'} data-changed={row.before === row.after ? undefined : 'true'}>
                  <th scope="row">{row.field}</th>
                  <td>
                    <code>{row.before}</code>
                  </td>
                  <td>
                    <code>{row.after}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <p>
            Secret names of the latest revision: {secretNames.length > 0 ? secretNames.join(', ') : 'none'}. The API keeps each revision's secrets to itself, so
            secrets are not compared here; their values are never shown.
          </p>
        </>
      )}
    </section>
  );
}
