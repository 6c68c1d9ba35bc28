import { type Static, Type } from 'typebox';
import { Nullable, Uuid } from './common.js';

const Role = (options: { default?: 'member' } = {}) => Type.Union([Type.Literal('admin'), Type.Literal('member')], options);
/** Keys as listed: `listener` keys reach only the listener protocol of their listener. */
const AnyRole = Type.Union([Type.Literal('admin'), Type.Literal('member'), Type.Literal('listener')]);

export const Workspace = Type.Object(
  { id: Uuid(), organization_id: Uuid(), name: Type.String(), created_at: Type.String({ format: 'date-time' }) },
  { title: 'Workspace' },
);

export const WorkspaceCreate = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }, { title: 'WorkspaceCreate' });

export const ApiKey = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    role: AnyRole,
    organization_id: Uuid(),
    workspace_id: Nullable(Uuid()),
    listener_id: Type.Optional(Nullable(Uuid({ description: 'For `listener` keys: the listener the key speaks for.' }))),
    key_hint: Type.String({ description: 'First and last characters of the key, to tell keys apart.' }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { title: 'ApiKey' },
);

/** The answer to creating a key: the only time the key itself is shown. */
export const CreatedApiKey = Type.Object({ ...ApiKey.properties, key: Type.String() }, { title: 'CreatedApiKey' });

export const ApiKeyCreate = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    workspace_id: Type.Optional(Nullable(Uuid({ description: 'Bind the key to this workspace.' }))),
    role: Type.Optional(Role({ default: 'member' })),
    listener_id: Type.Optional(
      Nullable(
        Uuid({
          description:
            'Make a `listener` key for this listener (a new key beside its others; revoke the old one to rotate). It reaches only the listener protocol (docs/listener-protocol.md); `role` is ignored.',
        }),
      ),
    ),
  },
  { title: 'ApiKeyCreate' },
);

export const ApiKeyParams = Type.Object({ key_id: Uuid() });

export type WorkspaceView = Static<typeof Workspace>;
export type ApiKeyView = Static<typeof ApiKey>;
export type CreatedApiKeyView = Static<typeof CreatedApiKey>;
export type NewApiKey = Static<typeof ApiKeyCreate>;
