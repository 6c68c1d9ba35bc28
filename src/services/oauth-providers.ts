import { randomUUID } from 'node:crypto';
import { entityTag, requireIfMatch } from '../domain/entity-tags.js';
import { fail } from '../domain/errors.js';
import type { Principal } from '../domain/tenancy.js';
import { oauthClientSecretContext } from '../security/oauth-client-secrets.js';
import { isUniqueViolation, nowIso } from '../store/database.js';
import * as repo from '../store/repositories/oauth-providers.js';
import type { NewOAuthProvider, OAuthProviderPatch, OAuthProviderView } from '../contract/oauth-providers.js';
import { allFieldsRead } from './all-fields-read.js';
import type { ServiceDeps } from './index.js';

export const DEFAULT_CODE_CHALLENGE_METHOD = 'S256';

const providerNotFound = (providerId: string) => fail('provider_not_found', `OAuth provider '${providerId}' not found.`);

/** OAuth providers belong to an organization; every workspace of it shares them. */
export function createOAuthProviderService({ db, encryptor }: ServiceDeps) {
  async function rowOf(principal: Principal, providerId: string): Promise<repo.OAuthProviderRow> {
    const row = await repo.findOAuthProvider(db, principal.organizationId, providerId);
    if (!row) throw providerNotFound(providerId);
    return row;
  }

  /** Why a compare-and-set wrote nothing: the provider changed meanwhile (412), or is gone (404). */
  async function changedOrGone(principal: Principal, providerId: string): Promise<Error> {
    const row = await repo.findOAuthProvider(db, principal.organizationId, providerId);
    return row
      ? fail('resource_changed', `OAuth provider ${providerId} has changed since it was read (If-Match); read it again and reapply the change.`)
      : providerNotFound(providerId);
  }

  return {
    async create(principal: Principal, input: NewOAuthProvider): Promise<OAuthProviderView> {
      const { provider_id, name, client_id, client_secret, auth_url, token_url, uses_pkce, code_challenge_method, provider_type, ...unread } = input;
      allFieldsRead(unread);
      const id = randomUUID();
      const now = nowIso();
      const row: repo.OAuthProviderRow = {
        id,
        organization_id: principal.organizationId,
        provider_id,
        name,
        client_id,
        client_secret_encrypted: encryptor.encrypt(client_secret, oauthClientSecretContext(id)),
        auth_url,
        token_url,
        uses_pkce: uses_pkce ? 1 : 0,
        code_challenge_method: code_challenge_method ?? DEFAULT_CODE_CHALLENGE_METHOD,
        provider_type: provider_type ?? null,
        created_at: now,
        updated_at: now,
      };
      try {
        await repo.insertOAuthProvider(db, row);
      } catch (error) {
        // The unique constraint, not a prior lookup, decides: concurrent creates stay safe.
        if (isUniqueViolation(error)) throw fail('provider_exists', `OAuth provider '${provider_id}' already exists in this organization.`);
        throw error;
      }
      return toView(row);
    },

    async list(principal: Principal): Promise<OAuthProviderView[]> {
      return (await repo.listOAuthProviders(db, principal.organizationId)).map(toView);
    },

    async get(principal: Principal, providerId: string): Promise<OAuthProviderView> {
      return toView(await rowOf(principal, providerId));
    },

    async update(principal: Principal, providerId: string, patch: OAuthProviderPatch, ifMatch?: string): Promise<OAuthProviderView> {
      const current = await rowOf(principal, providerId);
      requireIfMatch(ifMatch, entityTag(toView(current)), `OAuth provider ${providerId}`);
      const { client_secret, uses_pkce, ...plain } = patch;
      const { name, client_id, auth_url, token_url, code_challenge_method, provider_type, ...unread } = plain;
      allFieldsRead(unread);
      const changes: repo.OAuthProviderChanges = { updated_at: laterThan(current.updated_at) };
      for (const [field, value] of Object.entries({ name, client_id, auth_url, token_url, code_challenge_method, provider_type })) {
        if (value != null) changes[field as keyof typeof plain] = value;
      }
      if (uses_pkce != null) changes.uses_pkce = uses_pkce ? 1 : 0;
      if (client_secret != null) changes.client_secret_encrypted = encryptor.encrypt(client_secret, oauthClientSecretContext(current.id));
      // With If-Match, the update is a compare-and-set on what was compared: every write moves updated_at on.
      const updated = await repo.updateOAuthProvider(db, principal.organizationId, current.id, changes, ifMatch === undefined ? undefined : current.updated_at);
      if (!updated) throw await changedOrGone(principal, providerId);
      return toView(updated);
    },

    async delete(principal: Principal, providerId: string, ifMatch?: string): Promise<void> {
      let expected: string | undefined;
      if (ifMatch !== undefined) {
        const current = await rowOf(principal, providerId);
        requireIfMatch(ifMatch, entityTag(toView(current)), `OAuth provider ${providerId}`);
        expected = current.updated_at;
      }
      if (!(await repo.deleteOAuthProvider(db, principal.organizationId, providerId, expected))) throw await changedOrGone(principal, providerId);
    },

    /** The plain client secret, for the token exchange of the auth flow; never for an HTTP answer. */
    async clientSecret(principal: Principal, providerId: string): Promise<string> {
      const row = await rowOf(principal, providerId);
      return encryptor.decrypt(row.client_secret_encrypted, oauthClientSecretContext(row.id));
    },
  };
}

function toView(row: repo.OAuthProviderRow): OAuthProviderView {
  return {
    id: row.id,
    organization_id: row.organization_id,
    provider_id: row.provider_id,
    name: row.name,
    client_id: row.client_id,
    auth_url: row.auth_url,
    token_url: row.token_url,
    uses_pkce: Boolean(row.uses_pkce),
    code_challenge_method: row.code_challenge_method,
    provider_type: row.provider_type,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Clients spot changes by updated_at, so two writes within one millisecond must still differ. */
function laterThan(previous: string): string {
  const now = nowIso();
  return now > previous ? now : new Date(Date.parse(previous) + 1).toISOString();
}
