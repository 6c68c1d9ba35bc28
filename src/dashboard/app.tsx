import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { ApiKeysPage } from './api-keys.js';
import { AuditPage } from './audit.js';
import { WorkplaceContext, withQuery } from './context.js';
import { DeploymentPage } from './deployment.js';
import { DeploymentsPage } from './deployments.js';
import { HistoryPage } from './history.js';
import { IntegrationsPage, ListenersPage } from './listeners.js';
import { LogsPage } from './logs.js';
import { currentSession, describeError, type Session, sessionClient } from './session.js';
import { SettingsPage } from './settings.js';
import { SignIn } from './sign-in.js';
import { TopBar } from './top-bar.js';
import { WebhookPage, WebhooksPage } from './webhooks.js';
import { WorkspaceEventsPage } from './workspace-events.js';

/** The dashboard: the session decides between signing in and the screens. */
export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [failure, setFailure] = useState<string | null>(null);
  useEffect(() => {
    currentSession().then(setSession, (error: unknown) => {
      setFailure(describeError(error));
      setSession(null);
    });
  }, []);
  if (session === undefined) return <p class="loading">Loading…</p>;
  return (
    <LocationProvider>
      {session ? <Shell session={session} onSignedOut={() => setSession(null)} /> : <SignIn onSignedIn={setSession} failure={failure} />}
    </LocationProvider>
  );
}

function Shell({ session, onSignedOut }: { session: Session; onSignedOut(): void }) {
  const { query } = useLocation();
  const workspaceId = session.can_switch_workspace ? query.workspace || session.workspace_id || undefined : (session.workspace_id ?? undefined);
  const workplace = useMemo(
    () => ({
      session,
      client: sessionClient(session, workspaceId),
      workspaceId,
      link: (path: string, extra: Record<string, string | undefined> = {}) =>
        withQuery(path, { ...extra, workspace: workspaceId !== session.workspace_id ? workspaceId : undefined }),
      signedOut: onSignedOut,
    }),
    [session, workspaceId, onSignedOut],
  );
  return (
    <WorkplaceContext.Provider value={workplace}>
      <TopBar />
      <main id="main">
        {workspaceId ? (
          <Router>
            <Route path="/" component={DeploymentsPage} />
            <Route path="/sign-in" component={DeploymentsPage} />
            <Route path="/deployments" component={DeploymentsPage} />
            <Route path="/deployments/:deploymentId" component={DeploymentPage} />
            <Route path="/deployments/:deploymentId/revisions/:revisionId" component={DeploymentPage} />
            <Route path="/deployments/:deploymentId/revisions/:revisionId/logs" component={LogsPage} />
            <Route path="/deployments/:deploymentId/history" component={HistoryPage} />
            <Route path="/deployments/:deploymentId/settings" component={SettingsPage} />
            <Route path="/listeners" component={ListenersPage} />
            <Route path="/integrations" component={IntegrationsPage} />
            <Route path="/api-keys" component={ApiKeysPage} />
            <Route path="/audit-log" component={AuditPage} />
            <Route path="/webhooks" component={WebhooksPage} />
            <Route path="/webhooks/:subscriptionId" component={WebhookPage} />
            <Route path="/events" component={WorkspaceEventsPage} />
            <Route default component={NotFound} />
          </Router>
        ) : (
          <p>This key belongs to no workspace: choose one above.</p>
        )}
      </main>
    </WorkplaceContext.Provider>
  );
}

function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        <a href="/deployments">Back to the deployments</a>
      </p>
    </section>
  );
}
