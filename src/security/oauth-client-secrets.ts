/**
 * Associated data of an OAuth provider's client secret: binds the ciphertext to its row, so it
 * cannot be replayed onto another provider. Written by the use case, re-encrypted by key rotation.
 */
export const oauthClientSecretContext = (providerId: string) => `oauth_provider:${providerId}:client_secret`;
