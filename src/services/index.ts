import type { EventBus } from '../events/bus.js';
import type { Encryptor } from '../security/encryption.js';
import type { Db } from '../store/database.js';
import { createDeploymentService } from './deployments.js';
import { createListenerService } from './listeners.js';
import { createLogService } from './logs.js';
import { createOAuthProviderService } from './oauth-providers.js';
import { createRevisionService } from './revisions.js';
import { createTenancyService } from './tenancy.js';

export interface ServiceDeps {
  db: Db;
  encryptor: Encryptor;
  /** Told after commit when a deployment has work for the engine or new events. */
  bus: EventBus;
}

export function createServices(deps: ServiceDeps) {
  return {
    tenancy: createTenancyService(deps.db),
    deployments: createDeploymentService(deps),
    revisions: createRevisionService(deps),
    logs: createLogService(deps),
    listeners: createListenerService(deps),
    oauthProviders: createOAuthProviderService(deps),
  };
}

export type Services = ReturnType<typeof createServices>;
