/**
 * What a registry credential may do, and how a token request's scopes are cut down to it.
 * Pure rules: no HTTP, no keys.
 */

import { isRepositoryName } from '../domain/registry-location.js';

export const REGISTRY_ACTIONS = ['pull', 'push', 'delete', '*'] as const;
export type RegistryAction = (typeof REGISTRY_ACTIONS)[number];

/**
 * Repository name → allowed actions. A name ending in `/*` covers every repository below that
 * path (not the path itself): `berth/0b6…/*` lets the LangGraph CLI push `berth/0b6…/<any name>`,
 * since the CLI picks the last path component itself.
 */
export type RepositoryGrants = Readonly<Record<string, readonly RegistryAction[]>>;

/** What a verified credential may access, and who it stands for (the registry token's `sub`). */
export interface RegistryAccess {
  subject: string;
  repositories: RepositoryGrants;
  /** When the credential stops being valid; a registry token never outlives it. */
  expiresAt?: Date;
}

/** One entry of a registry token's `access` claim (the Docker token specification's shape). */
export interface AccessEntry {
  type: 'repository';
  name: string;
  actions: RegistryAction[];
}

export interface RequestedScope {
  type: string;
  name: string;
  actions: string[];
}

/** A grant key: a repository name, or a repository path followed by `/*`. */
export function isRepositoryGrantKey(key: string): boolean {
  return isRepositoryName(key.endsWith('/*') ? key.slice(0, -2) : key);
}

export function isRegistryAction(value: string): value is RegistryAction {
  return (REGISTRY_ACTIONS as readonly string[]).includes(value);
}

export class ScopeError extends Error {}

/**
 * Parses the `scope` query values of a token request. Each value may hold several scopes
 * separated by spaces (RFC 6750), and clients may repeat the parameter. A scope is
 * `type[(class)]:name:action[,action…]`; the name may itself hold a colon (a `host:port/` form),
 * so the type ends at the first colon and the actions start after the last.
 */
export function parseScopes(values: readonly string[]): RequestedScope[] {
  const scopes: RequestedScope[] = [];
  for (const value of values) {
    for (const scope of value.split(' ')) {
      if (scope === '') continue;
      const first = scope.indexOf(':');
      const last = scope.lastIndexOf(':');
      if (first <= 0 || last === first || last === scope.length - 1) {
        throw new ScopeError(`malformed scope "${scope.slice(0, 300)}": expected type:name:actions`);
      }
      scopes.push({
        type: scope.slice(0, first),
        name: scope.slice(first + 1, last),
        actions: scope.slice(last + 1).split(','),
      });
    }
  }
  return scopes;
}

/** The actions `grants` allow on one repository: its own entry plus every `path/*` entry above it. */
export function allowedActions(grants: RepositoryGrants, repository: string): Set<RegistryAction> {
  const allowed = new Set<RegistryAction>(grants[repository] ?? []);
  for (const [key, actions] of Object.entries(grants)) {
    if (key.endsWith('/*') && repository.startsWith(key.slice(0, -1))) {
      for (const action of actions) allowed.add(action);
    }
  }
  return allowed;
}

/**
 * The access a token may carry: each requested repository action that the grants allow, and
 * nothing else. A scope asking for more than allowed is not an error (the token specification
 * leaves refusing to the registry); it simply gets less. Only `repository` resources without a
 * class are ever granted, and only for names valid in the registry's grammar, so a crafted name
 * cannot slip under a `path/*` grant.
 */
export function grantAccess(requested: readonly RequestedScope[], grants: RepositoryGrants): AccessEntry[] {
  const granted = new Map<string, Set<RegistryAction>>();
  for (const scope of requested) {
    if (scope.type !== 'repository' || !isRepositoryName(scope.name)) continue;
    const allowed = allowedActions(grants, scope.name);
    for (const action of scope.actions) {
      if (!isRegistryAction(action)) continue;
      if (!allowed.has(action) && !allowed.has('*')) continue;
      const actions = granted.get(scope.name) ?? new Set<RegistryAction>();
      actions.add(action);
      granted.set(scope.name, actions);
    }
  }
  return [...granted].map(([name, actions]) => ({
    type: 'repository',
    name,
    actions: REGISTRY_ACTIONS.filter((action) => actions.has(action)),
  }));
}
