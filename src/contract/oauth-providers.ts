import { type Static, Type } from 'typebox';
import { DateTime, Nullable, OptionalNullable, Uuid } from './common.js';

// Bodies deliberately allow unknown extra fields: real clients send fields no spec defines.

export const ProviderId = (description = 'User-chosen id of the provider, unique in the organization (e.g. `github`).') =>
  Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$', description });

/** Only http(s): these URLs are where users' browsers and our token exchange will go. */
const HttpUrl = (description: string) => Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048, description });

const Name = Type.String({ minLength: 1, maxLength: 200, description: 'Display name.' });
const ClientId = Type.String({ minLength: 1, maxLength: 1000, description: 'OAuth client id.' });
const ClientSecret = Type.String({
  minLength: 1,
  maxLength: 4096,
  description: 'OAuth client secret. Stored encrypted; never returned.',
});
const AuthUrl = HttpUrl('Authorization endpoint of the provider.');
const TokenUrl = HttpUrl('Token endpoint of the provider.');
const UsesPkce = Type.Boolean({ description: 'Whether the authorization flow uses PKCE.', default: false });
const CodeChallengeMethod = Type.String({ minLength: 1, maxLength: 20, description: 'PKCE code challenge method.', default: 'S256' });
const ProviderType = Type.String({ minLength: 1, maxLength: 100, description: 'Kind of provider; free-form.' });

export const OAuthProviderCreate = Type.Object(
  {
    provider_id: ProviderId(),
    name: Name,
    client_id: ClientId,
    client_secret: ClientSecret,
    auth_url: AuthUrl,
    token_url: TokenUrl,
    uses_pkce: OptionalNullable(UsesPkce),
    code_challenge_method: OptionalNullable(CodeChallengeMethod),
    provider_type: OptionalNullable(ProviderType),
  },
  { title: 'OAuthProviderCreate' },
);

// No defaults here: the validator fills defaults in, which would silently reset fields on PATCH.
export const OAuthProviderUpdate = Type.Object(
  {
    name: OptionalNullable(Name),
    client_id: OptionalNullable(ClientId),
    client_secret: OptionalNullable(ClientSecret),
    auth_url: OptionalNullable(AuthUrl),
    token_url: OptionalNullable(TokenUrl),
    uses_pkce: OptionalNullable(Type.Boolean({ description: 'Whether the authorization flow uses PKCE.' })),
    code_challenge_method: OptionalNullable(Type.String({ minLength: 1, maxLength: 20, description: 'PKCE code challenge method.' })),
    provider_type: OptionalNullable(ProviderType),
  },
  { title: 'OAuthProviderUpdate', description: 'Fields to change; null or absent leaves a field as it is.' },
);

/** The only fields serialization can emit: `client_secret` is not among them. */
export const OAuthProvider = Type.Object(
  {
    id: Uuid(),
    organization_id: Uuid(),
    provider_id: Type.String(),
    name: Type.String(),
    client_id: Type.String(),
    auth_url: Type.String(),
    token_url: Type.String(),
    uses_pkce: Type.Boolean(),
    code_challenge_method: Nullable(Type.String()),
    provider_type: Nullable(Type.String()),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { title: 'OAuthProvider', description: 'An OAuth provider of the organization. The client secret is never returned.' },
);

export const ProviderDeleted = Type.Object({ message: Type.String() }, { title: 'OAuthProviderDeleted' });

export const ProviderParams = Type.Object({ provider_id: ProviderId('The `provider_id` chosen at creation, not the `id`.') });

export type OAuthProviderView = Static<typeof OAuthProvider>;
export type NewOAuthProvider = Static<typeof OAuthProviderCreate>;
export type OAuthProviderPatch = Static<typeof OAuthProviderUpdate>;
