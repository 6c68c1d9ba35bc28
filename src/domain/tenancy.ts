import { invalidField } from './errors.js';

/**
 * Who is calling. An API key belongs to one organization; a key bound to a workspace sees
 * only that workspace. `admin` keys may also manage the organization's workspaces and keys.
 */
export interface Principal {
  keyId: string;
  /** The key's name, as the audit log shows who acted. */
  keyName: string;
  /** The request the key came with (for the audit log); absent outside HTTP. */
  origin?: { clientAddress: string; requestId: string };
  organizationId: string;
  boundWorkspaceId: string | null;
  role: ApiKeyRole;
  /** For `listener` keys: the listener the key speaks for (it reaches the listener protocol and nothing else). */
  listenerId: string | null;
  /** For `deployer` keys: the deployments the key may act on (lower case); empty for every other role. */
  deploymentIds: readonly string[];
  /** For `runner` keys: the labels the runner may advertise (docs/build-runners.md); empty for every other role. */
  runnerLabels?: readonly string[];
}

/**
 * What a key may do is decided by domain/permissions.ts from its role. `listener` keys are
 * made for one listener (docs/listener-protocol.md); `deployer` keys for a list of deployments;
 * `runner` keys (organization-wide) reach only the build runner routes (docs/build-runners.md).
 */
export const API_KEY_ROLES = ['admin', 'member', 'read_only', 'deployer', 'listener', 'runner'] as const;
export type ApiKeyRole = (typeof API_KEY_ROLES)[number];

/**
 * Whether a key may act in workspaces of its organization other than its own (with
 * `X-Tenant-Id`): admin keys (they create workspaces and must work in them) and keys bound
 * to none. Member keys bound to a workspace stay in it.
 */
export function mayChooseWorkspace(principal: Pick<Principal, 'role' | 'boundWorkspaceId'>): boolean {
  return principal.boundWorkspaceId === null || principal.role === 'admin';
}

/** A principal with the workspace that this request acts in. */
export interface WorkspaceScope extends Principal {
  workspaceId: string;
}

export const DEFAULT_ORGANIZATION = 'default';
export const DEFAULT_WORKSPACE = 'default';

/** Longest workspace name, in characters, once normalised. */
export const MAX_WORKSPACE_NAME_LENGTH = 100;

/**
 * Characters a workspace name may not hold: control characters, line and paragraph
 * separators, and the bidirectional formatting characters that make a name display as
 * another ("Trojan Source").
 */
const FORBIDDEN_IN_NAMES = /[\p{Cc}\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

/**
 * A workspace name as stored: NFC-normalised (one spelling per look) and trimmed. Names
 * with control or bidirectional formatting characters, and names empty once trimmed, are
 * refused with 422.
 */
export function workspaceName(raw: string): string {
  const name = raw.normalize('NFC').trim();
  const loc = ['body', 'name'];
  if (name.length === 0) return fail({ type: 'string_too_short', loc, msg: 'String should have at least 1 character', input: raw });
  if (name.length > MAX_WORKSPACE_NAME_LENGTH) {
    return fail({ type: 'string_too_long', loc, msg: `String should have at most ${MAX_WORKSPACE_NAME_LENGTH} characters`, input: raw });
  }
  if (FORBIDDEN_IN_NAMES.test(name)) {
    return fail({
      type: 'value_error',
      loc,
      msg: 'Value error, a workspace name cannot contain control characters or bidirectional formatting characters',
      input: raw,
    });
  }
  return name;
}

function fail(issue: Parameters<typeof invalidField>[0]): never {
  throw invalidField(issue);
}

/**
 * What makes two workspace names the same: names differing only in case (in any script)
 * or in Unicode composition are one name. Computed here, not by the database, whose own
 * `lower()` folds only ASCII on SQLite.
 */
export function workspaceNameKey(name: string): string {
  return name.normalize('NFC').toLowerCase().normalize('NFC');
}
