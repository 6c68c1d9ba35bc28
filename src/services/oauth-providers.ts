import { randomUUID } from 'node:crypto';
import { fail } from '../domain/errors.js';
import type { Principal } from '../domain/tenancy.js';
import { isUniqueViolation, nowIso } from '../store/database.js';
import * as repo from '../store/repositories/oauth-providers.js';
import type { NewOAuthProvider, OAuthProviderPatch, OAuthProviderView } from '../contract/oauth-providers.js';
import { allFieldsRead } from './all-fields-read.js';
import type { ServiceDeps } from './index.js';
import { recordChange } from './audit.js';
import { fieldsSet } from '../domain/audit.js';

export const DEFAULT_CODE_CHALLENGE_METHOD = 'S256';

/** Binds a ciphertext to its row, so it cannot be replayed onto another provider. */
export const secretContext = (id: string) => `oauth_provider:${id}:client_secret`;

const providerNotFound = (providerId: string) => fail('provider_not_found', `OAuth provider '${providerId}' not found.`);

/** OAuth providers belong to an organization; every workspace of it shares them. */
export function createOAuthProviderService({ db, encryptor }: ServiceDeps) {
  async function rowOf(principal: Principal, providerId: string): Promise<repo.OAuthProviderRow> {
    const row = await repo.findOAuthProvider(db, principal.organizationId, providerId);
    if (!row) throw providerNotFound(providerId);
    return row;
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
        client_secret_encrypted: encryptor.encrypt(client_secret, secretContext(id)),
        auth_url,
        token_url,
        uses_pkce: uses_pkce ? 1 : 0,
        code_challenge_method: code_challenge_method ?? DEFAULT_CODE_CHALLENGE_METHOD,
        provider_type: provider_type ?? null,
        created_at: now,
        updated_at: now,
      };
      try {
        await db.transaction().execute(async (trx) => {
          await repo.insertOAuthProvider(trx, row);
          // client_secret is named as a field that was set; its value is never recorded.
          await recordChange(trx, principal, {
            action: 'oauth_provider.create',
            target: { type: 'oauth_provider', id: provider_id, name },
            changedFields: fieldsSet(input),
          });
        });
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

    async update(principal: Principal, providerId: string, patch: OAuthProviderPatch): Promise<OAuthProviderView> {
      const current = await rowOf(principal, providerId);
      const { client_secret, uses_pkce, ...plain } = patch;
      const { name, client_id, auth_url, token_url, code_challenge_method, provider_type, ...unread } = plain;
      allFieldsRead(unread);
      const changes: repo.OAuthProviderChanges = { updated_at: laterThan(current.updated_at) };
      for (const [field, value] of Object.entries({ name, client_id, auth_url, token_url, code_challenge_method, provider_type })) {
        if (value != null) changes[field as keyof typeof plain] = value;
      }
      if (uses_pkce != null) changes.uses_pkce = uses_pkce ? 1 : 0;
      if (client_secret != null) changes.client_secret_encrypted = encryptor.encrypt(client_secret, secretContext(current.id));
      const updated = await db.transaction().execute(async (trx) => {
        const row = await repo.updateOAuthProvider(trx, principal.organizationId, current.id, changes);
        if (!row) throw providerNotFound(providerId);
        const target = { type: 'oauth_provider', id: row.provider_id, name: row.name };
        await recordChange(trx, principal, { action: 'oauth_provider.update', target, changedFields: fieldsSet(patch) });
        return row;
      });
      return toView(updated);
    },

    async delete(principal: Principal, providerId: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        if (!(await repo.deleteOAuthProvider(trx, principal.organizationId, providerId))) throw providerNotFound(providerId);
        await recordChange(trx, principal, { action: 'oauth_provider.delete', target: { type: 'oauth_provider', id: providerId, name: null } });
      });
    },

    /** The plain client secret, for the token exchange of the auth flow; never for an HTTP answer. */
    async clientSecret(principal: Principal, providerId: string): Promise<string> {
      const row = await rowOf(principal, providerId);
      return encryptor.decrypt(row.client_secret_encrypted, secretContext(row.id));
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
