/**
 * Who is calling. An API key belongs to one organization; a key bound to a workspace sees
 * only that workspace. `admin` keys may also manage the organization's workspaces and keys.
 */
export interface Principal {
  keyId: string;
  organizationId: string;
  boundWorkspaceId: string | null;
  role: ApiKeyRole;
}

export type ApiKeyRole = 'admin' | 'member';

/** A principal with the workspace that this request acts in. */
export interface WorkspaceScope extends Principal {
  workspaceId: string;
}

export const DEFAULT_ORGANIZATION = 'default';
export const DEFAULT_WORKSPACE = 'default';
