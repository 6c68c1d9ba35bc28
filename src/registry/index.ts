/**
 * Berth as the token issuer of a Docker registry (the registry's `auth: token:` mode): key
 * material, the token realm as a framework-free handler, Berth's own short-lived credentials, and
 * where a deployment's images go. docs/registry.md tells an operator how to set the registry up.
 */
export * from './access.js';
export * from './credentials.js';
export * from './image-names.js';
export * from './image-ownership.js';
export * from './registry-token.js';
export * from './signing-key.js';
export * from './token-endpoint.js';
