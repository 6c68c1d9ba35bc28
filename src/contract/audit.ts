import { type Static, Type } from 'typebox';
import { Nullable, PaginationQuery, Uuid } from './common.js';

/** A change made through the API with a key. */
const KeyActor = Type.Object(
  {
    type: Type.Literal('api_key'),
    key_id: Uuid(),
    key_name: Type.String(),
    role: Type.String({ description: "The key's role when it made the change." }),
  },
  { title: 'AuditKeyActor' },
);

/** A change Berth made on its own: no key fields at all, so no reader takes one for a key's. */
const BerthActor = Type.Object(
  {
    type: Type.Literal('berth'),
    name: Type.Literal('Berth itself', { description: 'No key, client address or request was involved.' }),
    reason: Type.String({
      description:
        'Why Berth acted, e.g. "the deploy step ran past its timeout of 600 s (source_config.deploy_timeout_seconds)" or "every delivery failed for 24 h".',
    }),
  },
  {
    title: 'AuditBerthActor',
    description:
      'Berth itself: the engine (a revision it stopped past its timeout), the webhook deliverer (a subscription it disabled) or build on push (a revision it created for a push).',
  },
);

export const AuditEntry = Type.Object(
  {
    id: Uuid(),
    created_at: Type.String({ format: 'date-time' }),
    workspace_id: Nullable(Uuid({ description: "Null for the organization's own changes (workspaces, keys, OAuth providers)." })),
    actor: Type.Union([KeyActor, BerthActor]),
    client_address: Nullable(Type.String()),
    request_id: Nullable(Type.String()),
    action: Type.String({ description: '`<target type>.<verb>`, e.g. `deployment.update`.' }),
    target: Type.Object({ type: Type.String(), id: Type.String(), name: Nullable(Type.String()) }),
    outcome: Type.Literal('success', { description: 'Rows are written with the change; a refused or failed request writes none.' }),
    changed_fields: Type.Array(Type.String(), { description: 'Names of the fields the change set; never their values.' }),
    secret_names: Type.Array(Type.String(), { description: 'Names of the secrets the change set; never their values.' }),
  },
  { title: 'AuditEntry' },
);

export const AuditQuery = Type.Object({
  ...PaginationQuery,
  actor: Type.Optional(
    Type.Union([Uuid(), Type.Literal('berth')], { description: 'Only changes made with this API key id, or `berth`: only those Berth made itself.' }),
  ),
  action: Type.Optional(Type.String({ maxLength: 100, description: 'Only this action, e.g. `deployment.create`.' })),
  target_type: Type.Optional(Type.String({ maxLength: 100 })),
  target_id: Type.Optional(Type.String({ maxLength: 200 })),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Changes at or after this time.' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'Changes before this time.' })),
});

export type AuditEntryView = Static<typeof AuditEntry>;
export type AuditQueryInput = Static<typeof AuditQuery>;
