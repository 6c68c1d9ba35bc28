import { useEffect, useState } from 'preact/hooks';
import { BerthApiError, type Deployment, type Schemas } from '../client/index.js';
import { useWorkplace } from './context.js';
import { listenerOf } from './deployments.js';
import { formatTime } from './format.js';
import { describeError, may } from './session.js';

/** Deployments read to tell which run on which listener; a workspace with more shows the first ones. */
const PLACED_READ = 100;

/** The workspace's listeners (status, last seen, placed deployments, how to start an agent). */
export function ListenersPage() {
  const { client, link, signedOut } = useWorkplace();
  const [listeners, setListeners] = useState<Schemas['Listener'][] | null>(null);
  const [deployments, setDeployments] = useState<Deployment[]>([]);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    Promise.all([client.listeners.list({ limit: 100 }), client.deployments.list({ limit: PLACED_READ })]).then(
      ([page, placed]) => {
        setListeners(page.resources);
        setDeployments(placed.resources);
      },
      (caught: unknown) => {
        if (caught instanceof BerthApiError && caught.status === 401) return signedOut();
        setError(describeError(caught));
      },
    );
  }, [client, signedOut]);

  return (
    <section>
      <h1>Listeners</h1>
      <p>A listener runs its deployments on another machine. Start its agent there with the listener's key (answered once, when the listener was made):</p>
      <pre>
        <code data-testid="agent-command">BERTH_URL={location.origin} BERTH_LISTENER_KEY=… berth listener</code>
      </pre>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {listeners === null ? (
        !error && <p class="loading">Loading…</p>
      ) : listeners.length === 0 ? (
        <p>No listener in this workspace: deployments run on Berth's own host.</p>
      ) : (
        <table class="listeners">
          <caption>Listeners of this workspace</caption>
          <thead>
            <tr>
              <th scope="col">Listener</th>
              <th scope="col">Status</th>
              <th scope="col">Last seen</th>
              <th scope="col">Deployments placed</th>
            </tr>
          </thead>
          <tbody>
            {listeners.map((listener) => (
              <tr key={listener.id}>
                <td>
                  <code>{listener.compute_id}</code> ({listener.compute_type}
                  {listener.version ? `, ${listener.version}` : ''})
                </td>
                <td>
                  <span class={`status status-${listener.status === 'ONLINE' ? 'good' : 'stopped'}`}>{listener.status.toLowerCase()}</span>
                </td>
                <td>{formatTime(listener.last_seen_at)}</td>
                <td>
                  {deployments
                    .filter((deployment) => listenerOf(deployment) === listener.id)
                    .map((deployment) => (
                      <a key={deployment.id} href={link(`/deployments/${deployment.id}`)}>
                        {deployment.name}{' '}
                      </a>
                    ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The code-host integrations, each with its repositories on demand (listing them asks the code host). */
export function IntegrationsPage() {
  const { session, client, signedOut } = useWorkplace();
  const [integrations, setIntegrations] = useState<Schemas['Installation'][] | null>(null);
  const [repositories, setRepositories] = useState<Record<string, Schemas['Repository'][] | string>>({});
  const [error, setError] = useState<string | null>(null);
  const canList = may(session, 'GET /v1/integrations/codehost/{integration_id}/repos');

  useEffect(() => {
    client.integrations.list().then(setIntegrations, (caught: unknown) => {
      if (caught instanceof BerthApiError && caught.status === 401) return signedOut();
      setError(describeError(caught));
    });
  }, [client, signedOut]);

  async function showRepositories(id: string) {
    try {
      const found = await client.integrations.repositories(id);
      setRepositories((current) => ({ ...current, [id]: found }));
    } catch (caught) {
      setRepositories((current) => ({ ...current, [id]: describeError(caught) }));
    }
  }

  return (
    <section>
      <h1>Code-host integrations</h1>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {integrations === null ? (
        !error && <p class="loading">Loading…</p>
      ) : integrations.length === 0 ? (
        <p>No integration: deployments from a repository need one (POST /v1/integrations/codehost, or `berth integrations`).</p>
      ) : (
        <ul class="integrations">
          {integrations.map((integration) => {
            const found = repositories[integration.id];
            return (
              <li key={integration.id}>
                <h2>{integration.name}</h2>
                {canList && found === undefined && (
                  <button type="button" onClick={() => void showRepositories(integration.id)}>
                    Show repositories of {integration.name}
                  </button>
                )}
                {typeof found === 'string' && (
                  <p role="alert" class="error">
                    {found}
                  </p>
                )}
                {Array.isArray(found) && (
                  <ul>
                    {found.length === 0 && <li>No repository.</li>}
                    {found.map((repository) => (
                      <li key={repository.url}>
                        <code>{repository.url}</code>
                      </li>
                    ))}
                  </ul>
                )}
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}
