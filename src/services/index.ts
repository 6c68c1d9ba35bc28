import type { Logger } from 'pino';
import type { EventBus } from '../events/bus.js';
import type { Encryptor } from '../security/encryption.js';
import { type Db, isDatabaseUnavailable } from '../store/database.js';
import { createDeploymentRecords, type DeploymentRecords } from './deployment-records.js';
import { createDeploymentService } from './deployments.js';
import { type CodehostOptions, createIntegrationService, type IntegrationService } from './integrations.js';
import { createListenerProtocolService } from './listener-protocol.js';
import { createListenerService } from './listeners.js';
import { createLogService } from './logs.js';
import { createDeploymentEventService } from './deployment-events.js';
import { createOAuthProviderService } from './oauth-providers.js';
import { createPreviewService } from './previews.js';
import { createPushBuildService } from './push-builds.js';
import { createPushTokenService } from './push-tokens.js';
import { createUploadService, type UploadService } from './uploads.js';
import type { UploadStore } from '../sources/uploads.js';
import type { UploadLimits } from '../domain/upload-quota.js';
import type { Registry } from '../registry/setup.js';
import type { TokenSigner } from '../security/signed-tokens.js';
import { createBuildRunnerService } from './build-runners.js';
import { createRunnerLabelService } from './runner-labels.js';
import { createRevisionService } from './revisions.js';
import type { ProvisioningPolicy } from './database-limit.js';
import { createTenancyService } from './tenancy.js';
import { createIdempotencyService } from './idempotency.js';
import { createAuditService } from './audit.js';
import { createSessionService } from './sessions.js';
import { createWebhookService } from './webhooks.js';
import { createWorkspaceEventService } from './workspace-events.js';

export interface ServiceDeps {
  db: Db;
  encryptor: Encryptor;
  /** Told after commit when a deployment has work for the engine or new events. */
  bus: EventBus;
}

export interface ServiceOptions {
  /** Revisions kept per deployment: older finished ones are removed (never the active or the latest). */
  revisionsKept: number;
  /** How long an Idempotency-Key and its first answer are kept. */
  idempotencyKeyTtlMs: number;
  /** How long a dashboard session lasts from sign-in. */
  sessionTtlMs: number;
  codehost: CodehostOptions;
  /** Where uploaded project archives are kept until built. */
  uploadStore: UploadStore;
  /** How many bytes of them may be pending per deployment and per workspace. */
  uploadLimits: UploadLimits;
  /** Berth's image registry, when BERTH_REGISTRY is set. */
  registry: Registry | undefined;
  /** Databases provisioned per deployment, when this server is configured with their servers. */
  provisioning?: ProvisioningPolicy;
  /** BERTH_OUTBOUND_ALLOW_PRIVATE: webhook subscriptions may name non-public addresses. */
  outboundAllowPrivate: boolean;
  /** BERTH_RUNNER_LEASE_SECONDS, in ms: how long a build runner's claim lasts without a heartbeat. */
  runnerLeaseMs?: number;
  /** BERTH_PREVIEWS_ALLOW_FORKS. */
  previewsAllowForks: boolean;
  logger: Logger;
  /** Signs the URLs build runners download uploaded archives from; a key of its own (security/derived-keys.ts). */
  runnerArchiveSigner: TokenSigner;
}

/** What the deployment and revision services share: one view of deployments and their secrets. */
export interface DeploymentServiceDeps extends ServiceDeps, ServiceOptions {
  records: DeploymentRecords;
  integrations: IntegrationService;
  uploads: UploadService;
}

export function createServices(deps: ServiceDeps, options: ServiceOptions) {
  const integrations = createIntegrationService({ ...deps, codehost: options.codehost });
  const uploads = createUploadService({ db: deps.db, uploads: options.uploadStore, limits: options.uploadLimits });
  const deploymentDeps = { ...deps, ...options, integrations, uploads, records: createDeploymentRecords(deps.encryptor) };
  const revisions = createRevisionService(deploymentDeps);
  const previews = createPreviewService(deps, {
    records: deploymentDeps.records,
    revisionsKept: options.revisionsKept,
    allowForks: options.previewsAllowForks,
  });
  return {
    tenancy: createTenancyService(deps.db),
    deployments: createDeploymentService(deploymentDeps),
    revisions,
    pushBuilds: createPushBuildService({ ...deps, revisions, previews, codehost: options.codehost }),
    previews,
    uploads,
    pushTokens: createPushTokenService({ db: deps.db, registry: options.registry }),
    logs: createLogService(deps),
    deploymentEvents: createDeploymentEventService(deps),
    workspaceEvents: createWorkspaceEventService(deps),
    listeners: createListenerService(deps),
    listenerProtocol: createListenerProtocolService(deps),
    integrations,
    oauthProviders: createOAuthProviderService(deps),
    idempotency: createIdempotencyService(deps, { ttlMs: options.idempotencyKeyTtlMs }),
    audit: createAuditService(deps.db),
    sessions: createSessionService(deps.db, { ttlMs: options.sessionTtlMs }),
    webhooks: createWebhookService(deps, { allowPrivate: options.outboundAllowPrivate }),
    runnerLabels: createRunnerLabelService(deps),
    /** Which failures are the database's (lost, unreachable, busy), for the API to answer as such. */
    database: { unavailable: isDatabaseUnavailable },
    buildRunners: createBuildRunnerService({
      ...deps,
      registry: options.registry,
      leaseMs: options.runnerLeaseMs ?? 30_000,
      archiveSigner: options.runnerArchiveSigner,
    }),
  };
}

export type Services = ReturnType<typeof createServices>;
