import type { ApiKeyRole } from './tenancy.js';
import type { ErrorCode } from './errors.js';

/**
 * The one permission table: which key roles may call each authenticated route, keyed by
 * `METHOD /path` as the route is registered (Fastify's `:param` syntax, without the
 * `/api-host` prefix). The authentication hook refuses a route missing here at startup,
 * so no route can be added without deciding who may call it.
 *
 * - `admin` keys may do everything; `member` keys everything but organization
 *   administration (today's keys); `read_only` keys only reads (GET, the event stream and
 *   the POST forms of log queries).
 * - `deployer` keys reach only the deployments in their list, and there only what
 *   shipping a new version takes: reading the deployment, its revisions and logs, creating
 *   a revision (without secrets or configuration), redeploying, unpinning and interrupting.
 * - `listener` keys reach the listener protocol and nothing else.
 * - `runner` keys reach the build runner routes (/v1/runner) and nothing else.
 */
export interface Permission {
  roles: readonly ApiKeyRole[];
  /** Deployer keys are allowed when the path's `deployment_id` is one of theirs. */
  deployer?: true;
  /** Body fields a deployer key may not send (they change secrets or configuration). */
  deployerRefusedFields?: readonly string[];
}

const ADMIN: Permission = { roles: ['admin'] };
const WRITE: Permission = { roles: ['admin', 'member'] };
const READ: Permission = { roles: ['admin', 'member', 'read_only'] };
const OWN_WRITE: Permission = { ...WRITE, deployer: true };
const OWN_READ: Permission = { ...READ, deployer: true };
const LISTENER: Permission = { roles: ['listener'] };
const SESSION: Permission = { roles: ['admin', 'member', 'read_only', 'deployer'] };
const RUNNER: Permission = { roles: ['runner'] };
const RUNNER_JOB = '/v1/runner/jobs/:job_id';

const DEPLOYMENT = '/v2/deployments/:deployment_id';
const REVISION = `${DEPLOYMENT}/revisions/:revision_id`;

/** Both spellings of the integrations routes (`github` is the hidden alias) get one entry each. */
const integrationRoutes = (['codehost', 'github'] as const).flatMap((segment) => {
  const root = `/v1/integrations/${segment}`;
  return [
    [`POST ${root}`, ADMIN],
    [`GET ${root}/install`, READ],
    [`GET ${root}/:integration_id`, ADMIN],
    [`GET ${root}/:integration_id/repos`, READ],
    [`DELETE ${root}/:integration_id`, ADMIN],
  ] as const;
});

export const PERMISSIONS: ReadonlyMap<string, Permission> = new Map<string, Permission>([
  ['POST /v2/deployments', WRITE],
  ['GET /v2/deployments', READ],
  [`GET ${DEPLOYMENT}`, OWN_READ],
  [`PATCH ${DEPLOYMENT}`, WRITE],
  // As a PATCH of the deployment's secrets: a deployer may not change secrets.
  [`PATCH ${DEPLOYMENT}/secrets`, WRITE],
  [`DELETE ${DEPLOYMENT}`, WRITE],
  // A deployer may roll its deployments back (redeploy), so it may also let them follow the branch again.
  [`POST ${DEPLOYMENT}/unpin`, OWN_WRITE],
  [`GET ${DEPLOYMENT}/events`, OWN_READ],
  [`POST ${DEPLOYMENT}/upload-url`, OWN_WRITE],
  [`POST ${DEPLOYMENT}/push-token`, OWN_WRITE],

  [`GET ${DEPLOYMENT}/revisions`, OWN_READ],
  [`POST ${DEPLOYMENT}/revisions`, { ...OWN_WRITE, deployerRefusedFields: ['secrets', 'source_config'] }],
  [`GET ${REVISION}`, OWN_READ],
  [`POST ${REVISION}/redeploy`, OWN_WRITE],
  [`POST ${REVISION}/interruption`, OWN_WRITE],
  [`GET ${REVISION}/logs`, OWN_READ],
  [`GET ${REVISION}/timeline`, OWN_READ],
  // Log queries sent as POST are reads.
  ['POST /v1/projects/:deployment_id/revisions/:revision_id/build_logs', OWN_READ],
  ['POST /v1/projects/:deployment_id/revisions/:revision_id/deploy_logs', OWN_READ],
  ['POST /v1/projects/:deployment_id/deploy_logs', OWN_READ],

  // The workspace's events mix every deployment's: not for deployer keys, which see only theirs.
  ['GET /v2/events', READ],
  ['GET /v2/events/stream', READ],

  ['POST /v2/listeners', WRITE],
  ['GET /v2/listeners', READ],
  ['GET /v2/listeners/:listener_id', READ],
  ['GET /v2/listeners/:listener_id/runner-labels', READ],
  ['PUT /v2/listeners/:listener_id/runner-labels', WRITE],
  ['PATCH /v2/listeners/:listener_id', WRITE],
  ['DELETE /v2/listeners/:listener_id', WRITE],

  ['GET /v1/listener-protocol/state', LISTENER],
  ['POST /v1/listener-protocol/reports', LISTENER],
  ['POST /v1/listener-protocol/heartbeat', LISTENER],

  ['POST /v1/runner/jobs/claim', RUNNER],
  [`POST ${RUNNER_JOB}/heartbeat`, RUNNER],
  [`GET ${RUNNER_JOB}/source`, RUNNER],
  [`GET ${RUNNER_JOB}/archive`, RUNNER],
  [`POST ${RUNNER_JOB}/logs`, RUNNER],
  [`POST ${RUNNER_JOB}/inputs`, RUNNER],
  [`POST ${RUNNER_JOB}/result`, RUNNER],

  ['POST /v2/auth/providers', ADMIN],
  ['GET /v2/auth/providers', READ],
  ['GET /v2/auth/providers/:provider_id', READ],
  ['PATCH /v2/auth/providers/:provider_id', ADMIN],
  ['DELETE /v2/auth/providers/:provider_id', ADMIN],

  ['POST /v1/workspaces', ADMIN],
  ['GET /v1/workspaces', ADMIN],
  // A workspace's runner labels bind every build of it: an administrator's setting.
  ['GET /v1/workspaces/:workspace_id/runner-labels', ADMIN],
  ['PUT /v1/workspaces/:workspace_id/runner-labels', ADMIN],
  ['POST /v1/api-keys', ADMIN],
  ['GET /v1/api-keys', ADMIN],
  ['DELETE /v1/api-keys/:key_id', ADMIN],
  // Who changed what is for administrators and auditors, not for every member.
  ['GET /v1/audit-log', { roles: ['admin', 'read_only'] }],

  // Signing in to the dashboard: any key that may read something; a listener key may not.
  ['POST /v1/sessions', SESSION],
  ['GET /v1/sessions/current', SESSION],
  ['DELETE /v1/sessions/current', SESSION],
  // Outbound webhooks: members manage them like listeners; read-only keys see them (never a secret).
  ['POST /v1/webhook-subscriptions', WRITE],
  ['GET /v1/webhook-subscriptions', READ],
  ['GET /v1/webhook-subscriptions/:subscription_id', READ],
  ['DELETE /v1/webhook-subscriptions/:subscription_id', WRITE],
  ['GET /v1/webhook-subscriptions/:subscription_id/deliveries', READ],
  ['POST /v1/webhook-subscriptions/:subscription_id/deliveries/:delivery_id/redeliver', WRITE],

  ...integrationRoutes,
]);

/** The table's key for a route: HEAD is answered by its GET route. */
export function routeKey(method: string, path: string): string {
  return `${method === 'HEAD' ? 'GET' : method} ${path}`;
}

/** Who asks, as far as the table cares. */
export interface Caller {
  role: ApiKeyRole;
  /** For `deployer` keys: the deployments the key may act on. */
  deploymentIds: readonly string[];
}

export interface Refusal {
  code: Extract<ErrorCode, 'role_forbids' | 'admin_key_required' | 'listener_key_forbidden' | 'listener_key_required'>;
  message: string;
}

/**
 * Whether the table lets this caller call this route on this deployment (the path's
 * `deployment_id`, if it has one); null when it does, else why not. The refusal codes of
 * earlier versions are kept where they fit (admin-only routes, listener keys), so clients
 * that branch on them keep working; everything else a role may not do is `role_forbids`.
 */
export function refusal(permission: Permission, caller: Caller, deploymentId: string | undefined): Refusal | null {
  if (permission.roles.includes(caller.role)) return null;
  if (caller.role === 'deployer' && permission.deployer && deploymentId !== undefined) {
    if (caller.deploymentIds.includes(deploymentId.toLowerCase())) return null;
    return { code: 'role_forbids', message: `This deployer API key may not act on deployment '${deploymentId}'.` };
  }
  if (caller.role === 'listener') {
    return {
      code: 'listener_key_forbidden',
      message: 'A listener key reaches only the listener protocol (/v1/listener-protocol); use an API key for this operation.',
    };
  }
  if (caller.role === 'runner') {
    return { code: 'role_forbids', message: 'A runner key reaches only the build runner routes (/v1/runner); use an API key for this operation.' };
  }
  if (only(permission, 'runner')) {
    return { code: 'role_forbids', message: 'The build runner routes need a runner key (POST /v1/api-keys with role runner).' };
  }
  if (only(permission, 'listener')) {
    return {
      code: 'listener_key_required',
      message: 'The listener protocol needs a listener key (created with the listener, or with POST /v1/api-keys and listener_id).',
    };
  }
  if (only(permission, 'admin')) return { code: 'admin_key_required', message: 'This operation requires an admin API key.' };
  return { code: 'role_forbids', message: `A ${caller.role} API key may not do this.` };
}

/** The body fields of a deployer's request that the table refuses it (null and absent fields are not sent). */
export function refusedFields(permission: Permission, caller: Caller, body: unknown): string[] {
  if (caller.role !== 'deployer' || !permission.deployerRefusedFields || typeof body !== 'object' || body === null) return [];
  const fields = body as Record<string, unknown>;
  return permission.deployerRefusedFields.filter((name) => fields[name] !== undefined && fields[name] !== null);
}

/** The refusal codes a route can answer with, for its documentation. */
export function refusalCodes(permission: Permission): Refusal['code'][] {
  // A runner key is refused everywhere but its own routes with `role_forbids`.
  if (only(permission, 'listener')) return ['listener_key_required', 'role_forbids'];
  if (only(permission, 'runner')) return ['listener_key_forbidden', 'role_forbids'];
  // Every other route refuses some role: deployers reach only their deployments, read-only keys only reads.
  return ['listener_key_forbidden', ...(only(permission, 'admin') ? (['admin_key_required'] as const) : []), 'role_forbids'];
}

function only(permission: Permission, role: ApiKeyRole): boolean {
  return permission.roles.length === 1 && permission.roles[0] === role;
}

/**
 * What a caller may do, as `METHOD /path` with OpenAPI's `{param}` spelling, so a client
 * (the dashboard) can offer only what the table allows. For `deployer` keys the routes
 * marked `deployer` are included: they hold only on the key's own deployments.
 */
export function allowedRoutes(caller: Caller): string[] {
  return [...PERMISSIONS.entries()]
    .filter(([, permission]) => permission.roles.includes(caller.role) || (caller.role === 'deployer' && permission.deployer === true))
    .map(([key]) => key.replace(/:(\w+)/g, '{$1}'));
}
