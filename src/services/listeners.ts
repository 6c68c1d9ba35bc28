import type { ServiceDeps } from './index.js';

export function createListenerService(_deps: ServiceDeps) {
  return {};
}
