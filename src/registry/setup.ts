import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { credentialVerifier, deriveCredentialSecret, type CredentialSecret, mintPullCredential, mintPushCredential } from './credentials.js';
import type { RegistrySettings } from '../config.js';
import { loadOrCreateSigningKey, type RegistrySigningKey, signingKeyFromPem, writeCertificateBundle } from './signing-key.js';
import { createTokenEndpoint, type TokenEndpointResponse, type TokenRequest } from './token-endpoint.js';

/** Berth's side of its registry: the token realm, and credentials it mints for itself and for clients. */
export interface Registry {
  settings: RegistrySettings;
  /** The certificate bundle the registry must trust (`auth.token.rootcertbundle`). */
  bundleFile: string;
  token(request: TokenRequest): Promise<TokenEndpointResponse>;
  /** A credential that may push and pull below `repositoryGrant` (`path` or `path/*`). */
  pushCredential(subject: string, repositoryGrant: string, ttlSeconds?: number): Promise<string>;
  pullCredential(subject: string, repositoryGrant: string, ttlSeconds?: number): Promise<string>;
}

/**
 * Loads (or makes, once) the token signing key, writes the certificate bundle an operator
 * points the registry at, and derives the credential secret from the master key, so every
 * replica sharing the master key accepts the credentials any of them minted.
 */
export async function openRegistry(settings: RegistrySettings, dataDir: string, masterKey: Buffer): Promise<Registry> {
  const directory = path.join(dataDir, 'registry');
  const signingKey: RegistrySigningKey =
    settings.keyFile && settings.certFile
      ? signingKeyFromPem(await readFile(settings.keyFile, 'utf8'), await readFile(settings.certFile, 'utf8'))
      : await loadOrCreateSigningKey(directory);
  const bundleFile = path.join(directory, 'token-certificates.pem');
  await writeCertificateBundle(signingKey, bundleFile);
  const secret: CredentialSecret = deriveCredentialSecret(masterKey);
  const endpoint = createTokenEndpoint({ signingKey, issuer: settings.issuer, service: settings.service, verifyCredential: credentialVerifier(secret) });
  return {
    settings,
    bundleFile,
    token: endpoint,
    async pushCredential(subject, repository, ttlSeconds) {
      return (await mintPushCredential(secret, { subject, repository, ...(ttlSeconds ? { ttlSeconds } : {}) })).credential;
    },
    async pullCredential(subject, repository, ttlSeconds) {
      return (await mintPullCredential(secret, { subject, repository, ...(ttlSeconds ? { ttlSeconds } : {}) })).credential;
    },
  };
}
