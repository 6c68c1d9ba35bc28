import type { ServiceDeps } from './index.js';

export function createDeploymentService(_deps: ServiceDeps) {
  return {};
}
