import { type Static, Type } from 'typebox';
import { Nullable, PaginationQuery, Uuid } from './common.js';

export const AuditEntry = Type.Object(
  {
    id: Uuid(),
    created_at: Type.String({ format: 'date-time' }),
    workspace_id: Nullable(Uuid({ description: "Null for the organization's own changes (workspaces, keys, OAuth providers)." })),
    actor: Type.Object({
      type: Type.Union([Type.Literal('api_key'), Type.Literal('berth')], { description: '`berth`: a change Berth made itself.' }),
      key_id: Nullable(Uuid()),
      key_name: Nullable(Type.String()),
      role: Nullable(Type.String()),
    }),
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
  actor: Type.Optional(Uuid({ description: 'Only changes made with this API key id.' })),
  action: Type.Optional(Type.String({ maxLength: 100, description: 'Only this action, e.g. `deployment.create`.' })),
  target_type: Type.Optional(Type.String({ maxLength: 100 })),
  target_id: Type.Optional(Type.String({ maxLength: 200 })),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Changes at or after this time.' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'Changes before this time.' })),
});

export type AuditEntryView = Static<typeof AuditEntry>;
export type AuditQueryInput = Static<typeof AuditQuery>;
