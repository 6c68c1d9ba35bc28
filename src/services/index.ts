import type { Encryptor } from '../security/encryption.js';
import type { Db } from '../store/database.js';
import { createDeploymentService } from './deployments.js';
import { createListenerService } from './listeners.js';
import { createOAuthProviderService } from './oauth-providers.js';
import { createRevisionService } from './revisions.js';
import { createTenancyService } from './tenancy.js';

export interface ServiceDeps {
  db: Db;
  encryptor: Encryptor;
}

export function createServices(deps: ServiceDeps) {
  return {
    tenancy: createTenancyService(deps.db),
    deployments: createDeploymentService(deps),
    revisions: createRevisionService(deps),
    listeners: createListenerService(deps),
    oauthProviders: createOAuthProviderService(deps),
  };
}

export type Services = ReturnType<typeof createServices>;
