import { useLocation } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import type { Schemas } from '../client/index.js';
import { useWorkplace, withQuery } from './context.js';
import { describeError, may } from './session.js';

/** Who is signed in, the workspace (a choice for keys that may switch), and sign-out. */
export function TopBar() {
  const { session, client, workspaceId, signedOut, link } = useWorkplace();
  const location = useLocation();
  const [workspaces, setWorkspaces] = useState<Schemas['Workspace'][]>([]);
  const [error, setError] = useState<string | null>(null);
  const switchable = session.can_switch_workspace && may(session, 'GET /v1/workspaces');

  useEffect(() => {
    if (switchable) client.workspaces.list().then(setWorkspaces, (caught: unknown) => setError(describeError(caught)));
  }, [switchable, client]);

  async function signOut() {
    try {
      await client.sessions.delete();
    } catch {
      // Signed out either way: a session that already ended answers 401.
    }
    location.route('/sign-in');
    signedOut();
  }

  return (
    <header class="top-bar">
      <a class="brand" href={withQuery('/deployments', { workspace: workspaceId !== session.workspace_id ? workspaceId : undefined })}>
        Berth
      </a>
      <nav aria-label="Screens" class="screens">
        <a href={link('/deployments')}>Deployments</a> <a href={link('/listeners')}>Listeners</a> <a href={link('/integrations')}>Integrations</a>{' '}
        {may(session, 'GET /v1/api-keys') && <a href={link('/api-keys')}>API keys</a>} {may(session, 'GET /v2/events') && <a href={link('/events')}>Events</a>}{' '}
        {may(session, 'GET /v1/webhook-subscriptions') && <a href={link('/webhooks')}>Webhooks</a>}{' '}
        {may(session, 'GET /v1/audit-log') && <a href={link('/audit-log')}>Audit log</a>}
      </nav>
      {switchable && (
        <label class="workspace">
          Workspace{' '}
          <select value={workspaceId} onChange={(event) => location.route(withQuery('/deployments', { workspace: event.currentTarget.value }))}>
            {workspaces.map((workspace) => (
              <option key={workspace.id} value={workspace.id}>
                {workspace.name}
              </option>
            ))}
          </select>
        </label>
      )}
      {error && <span class="error">{error}</span>}
      <span class="who" data-testid="who">
        {session.key.name} · {session.key.role.replace('_', '-')}
      </span>
      <button type="button" onClick={signOut}>
        Sign out
      </button>
    </header>
  );
}
