import type { ApiKeyRole, Principal } from './tenancy.js';

/**
 * Who made a change: a key (through the API), or Berth itself (the engine, the webhook
 * deliverer, build on push), which says why it acted.
 */
export type Actor =
  | { type: 'api_key'; keyId: string; keyName: string; role: ApiKeyRole; clientAddress: string | null; requestId: string | null }
  | { type: 'berth'; reason: string };

/** The request a principal arrived with, as the audit log names it. */
export function actorOf(principal: Principal): Actor {
  return {
    type: 'api_key',
    keyId: principal.keyId,
    keyName: principal.keyName,
    role: principal.role,
    clientAddress: principal.origin?.clientAddress ?? null,
    requestId: principal.origin?.requestId ?? null,
  };
}

/** One change, as recorded: names of fields and secrets only, never a value. */
export interface AuditChange {
  organizationId: string;
  workspaceId: string | null;
  actor: Actor;
  /** `<target type>.<verb>`, e.g. `deployment.update`. */
  action: string;
  target: { type: string; id: string; name: string | null };
  changedFields?: readonly string[];
  secretNames?: readonly string[];
}

/**
 * A change Berth made on its own, recorded in the workspace of what it changed. No key,
 * address or request is involved; `reason` is Berth's own text, never a stored value.
 */
export interface BerthChange {
  action: string;
  target: AuditChange['target'];
  changedFields?: readonly string[];
  /** Names of the secrets the change gave (a preview's), never values. */
  secretNames?: readonly string[];
  reason: string;
}

/** How long a reason may be: a sentence, not a log. */
export const REASON_MAX_LENGTH = 500;

/**
 * The fields a request body sets (top level, those present and not null), sorted: what
 * the audit log says changed, without a value.
 */
export function fieldsSet(body: object | null | undefined): string[] {
  if (!body) return [];
  return Object.entries(body)
    .filter(([, value]) => value !== undefined && value !== null)
    .map(([name]) => name)
    .sort();
}

/** The names of the secrets a request sends, sorted and without their values. */
export function secretNamesOf(secrets: readonly { name: string }[] | null | undefined): string[] {
  return [...new Set((secrets ?? []).map((secret) => secret.name))].sort();
}
