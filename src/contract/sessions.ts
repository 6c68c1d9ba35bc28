import { type Static, Type } from 'typebox';
import { DateTime, Nullable, StringEnum, Uuid } from './common.js';

/** The name of the cookie that carries a session's secret. */
export const SESSION_COOKIE = 'berth_session';
/** The header a write made with a session cookie carries its CSRF token in. */
export const CSRF_HEADER = 'x-csrf-token';

export const SessionCreate = Type.Object({}, { title: 'SessionCreate', description: 'Nothing to send: the API key of the request opens the session.' });

export const Session = Type.Object(
  {
    id: Uuid(),
    created_at: DateTime(),
    expires_at: DateTime(),
    csrf_token: Type.String({ description: `Send it as \`X-CSRF-Token\` with every write made with the session's cookie.` }),
    key: Type.Object({
      id: Uuid(),
      name: Type.String(),
      role: StringEnum(['admin', 'member', 'read_only', 'deployer']),
    }),
    organization_id: Uuid(),
    workspace_id: Nullable(Uuid({ description: "The key's workspace; null for organization keys, which send `X-Tenant-Id`." })),
    can_switch_workspace: Type.Boolean({ description: 'Whether the key may act in other workspaces of its organization with `X-Tenant-Id`.' }),
    allowed: Type.Array(Type.String(), {
      description:
        "What the key's role may call, as `METHOD /path` (OpenAPI's spelling); for `deployer` keys the deployment routes hold only on `deployment_ids`.",
    }),
    deployment_ids: Type.Array(Uuid(), { description: 'For `deployer` keys: the deployments the key may act on; empty for other roles.' }),
  },
  { title: 'Session' },
);

export type SessionView = Static<typeof Session>;
