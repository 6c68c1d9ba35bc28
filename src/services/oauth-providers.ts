import type { ServiceDeps } from './index.js';

export function createOAuthProviderService(_deps: ServiceDeps) {
  return {};
}
