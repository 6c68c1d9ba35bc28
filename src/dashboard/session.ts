import { BerthApiError, type BerthClient, createBerthClient, type Schemas } from '../client/index.js';

export type Session = Schemas['Session'];

/** The API is Berth itself: same origin, so the session cookie goes with every request. */
const BASE_URL = '';

/**
 * Signs in: the key goes to Berth once, in this request, and is not kept; Berth answers
 * with the session and sets its HttpOnly cookie.
 */
export async function signIn(apiKey: string): Promise<Session> {
  return createBerthClient({ baseUrl: BASE_URL, apiKey }).sessions.create();
}

/** The session the browser's cookie names, or null when there is none (never signed in, expired, signed out, key revoked). */
export async function currentSession(): Promise<Session | null> {
  try {
    return await createBerthClient({ baseUrl: BASE_URL }).sessions.current();
  } catch (error) {
    if (error instanceof BerthApiError && error.status === 401) return null;
    throw error;
  }
}

/** A client acting with the session cookie, in `workspaceId` when given (organization and admin keys). */
export function sessionClient(session: Session, workspaceId: string | undefined): BerthClient {
  const tenantId = workspaceId && workspaceId !== session.workspace_id ? workspaceId : undefined;
  return createBerthClient({ baseUrl: BASE_URL, csrfToken: session.csrf_token, ...(tenantId ? { tenantId } : {}) });
}

/**
 * Whether the session's key may call `route` (`METHOD /path` as OpenAPI spells it), on
 * `deploymentId` when the route is a deployment's: the interface offers only what the
 * permission table allows.
 */
export function may(session: Session, route: string, deploymentId?: string): boolean {
  if (!session.allowed.includes(route)) return false;
  if (session.key.role !== 'deployer' || !route.includes('{deployment_id}')) return true;
  return deploymentId !== undefined && session.deployment_ids.includes(deploymentId.toLowerCase());
}

/** An error as a person reads it, with the request id to quote when asking for help. */
export function describeError(error: unknown): string {
  if (error instanceof BerthApiError) {
    if (error.status === 0) return 'Berth cannot be reached. Check that it is running, then try again.';
    return error.requestId ? `${error.detail} (request id ${error.requestId})` : error.detail;
  }
  return error instanceof Error ? error.message : String(error);
}
