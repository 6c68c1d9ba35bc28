import type { EventBus } from '../events/bus.js';
import type { Encryptor } from '../security/encryption.js';
import type { Db } from '../store/database.js';
import { DeploymentRecords } from './deployment-records.js';
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

/** What the deployment and revision services share: one view of deployments and their secrets. */
export interface DeploymentServiceDeps extends ServiceDeps {
  records: DeploymentRecords;
}

export function createServices(deps: ServiceDeps) {
  const deploymentDeps = { ...deps, records: new DeploymentRecords(deps.encryptor) };
  return {
    tenancy: createTenancyService(deps.db),
    deployments: createDeploymentService(deploymentDeps),
    revisions: createRevisionService(deploymentDeps),
    logs: createLogService(deps),
    listeners: createListenerService(deps),
    oauthProviders: createOAuthProviderService(deps),
  };
}

export type Services = ReturnType<typeof createServices>;
