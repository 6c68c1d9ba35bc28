import { type DelivererSettings, startWebhookDeliverer } from './engine/webhook-deliverer.js';
import { type NotifierSettings, startGitHubNotifier } from './engine/github-notifier.js';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { KyselyConfig } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Provisioners } from './engine/databases.js';
import { PostgresProvisioner } from './provisioning/postgres.js';
import { RedisProvisioner } from './provisioning/redis.js';
import { deriveKey } from './security/derived-keys.js';
import { openRegistry, type Registry } from './registry/setup.js';
import { setGitConcurrency } from './codehost/index.js';
import { UploadStore } from './sources/uploads.js';
import { TokenSigner } from './security/signed-tokens.js';
import type { EngineSettings } from './engine/context.js';
import { LocalContainerRuntime } from './containers/runtime/index.js';
import type { BuildDriver, RuntimeDriver } from './engine/drivers/types.js';
import { LangGraphBuildDriver } from './engine/drivers/langgraph-build.js';
import { RunnerBuildDriver } from './engine/runner-build.js';
import { NoRuntime, UnavailableBuildDriver } from './engine/drivers/unavailable.js';
import { Engine } from './engine/engine.js';
import { type EventBus, LocalEventBus, PostgresEventBus } from './events/bus.js';
import { buildApp } from './http/app.js';
import { serveEngineMetrics } from './observability/engine-metrics-server.js';
import { setListenerSightingsReader } from './observability/metrics.js';
import { secureDataDir } from './security/data-dir.js';
import { loadEncryptionKey, Encryptor } from './security/encryption.js';
import { startGitPoller } from './services/git-poller.js';
import { startPreviewSweep } from './services/preview-sweep.js';
import { startImageReaper } from './engine/image-reaper.js';
import { startUploadSweeper } from './engine/upload-sweeper.js';
import { startRetention } from './engine/retention.js';
import type { ProvisioningPolicy } from './services/database-limit.js';
import { createServices, type Services } from './services/index.js';
import { type Db, migrateToLatest, openDatabase } from './store/database.js';
import { listenerSightings } from './store/repositories/listeners.js';
import { countRevisionsByStatus } from './store/repositories/revision-counts.js';
import { releaseUploadArchives } from './store/repositories/upload-archives.js';

/** Drivers and settings tests and benchmarks put in place of the configured ones. */
export interface BerthOverrides {
  runtime?: RuntimeDriver;
  builder?: BuildDriver;
  engineSettings?: Partial<EngineSettings>;
  /** Where the built dashboard is (default dist/dashboard): tests build their own. */
  dashboardDir?: string;
  /** The webhook deliverer's retry timing and clock (tests shorten them). */
  webhookDelivery?: Partial<DelivererSettings>;
  /** The GitHub notifier's retry timing and clock (tests shorten them). */
  githubNotices?: Partial<NotifierSettings>;
  /** How often idle previews are looked for (default a minute). */
  previewSweepMs?: number;
  /** Sees every statement the server sends (tests count what a request costs the database). */
  databaseLog?: KyselyConfig['log'];
}

export interface Berth {
  app: FastifyInstance;
  /** Where the API listens, e.g. `http://127.0.0.1:8124`. */
  address: string;
  engine: Engine | undefined;
  db: Db;
  services: Services;
  bus: EventBus;
  /** Berth's side of its image registry, when BERTH_REGISTRY is set. */
  registry: Registry | undefined;
  close(): Promise<void>;
}

interface Core {
  db: Db;
  bus: EventBus;
  encryptor: Encryptor;
  services: Services;
  /** The encryption key, from which keys for other purposes are derived. */
  masterKey: Buffer;
  /** Berth's side of its image registry, when BERTH_REGISTRY is set. */
  registry: Registry | undefined;
  /** Uploaded project archives (`<data dir>/uploads`). */
  uploadStore: UploadStore;
}

/** Opens the database, migrates it, loads the encryption key and connects the bus. */
async function openCore(config: Config, logger: Logger, databaseLog?: KyselyConfig['log']): Promise<Core> {
  secureDataDir(config.dataDir);
  const db = openDatabase(config.database, {
    log: databaseLog,
    checkpointInBackground: {
      onError: (error) => logger.warn({ error: error.message }, 'background WAL checkpoint failed; commits checkpoint the WAL at 10,000 pages meanwhile'),
    },
    onConnectionLost: (error) =>
      logger.warn(
        { error: error.message },
        'a database connection was lost (PostgreSQL restarted or ended it): what was using it failed, and the next use opens a new one',
      ),
  });
  try {
    setGitConcurrency(config.codehost.gitConcurrency);
    await migrateToLatest(db);
    setListenerSightingsReader(() => listenerSightings(db));
    const { key, source } = loadEncryptionKey(config.encryptionKey, config.dataDir);
    if (source === 'generated') logger.info({ dir: config.dataDir }, 'generated a new encryption key file in the data directory');
    if (config.database.kind === 'postgres' && source !== 'env') {
      logger.warn('BERTH_ENCRYPTION_KEY is not set: every server process on this PostgreSQL must share the key file of this data directory');
    }
    const bus = config.database.kind === 'postgres' ? await PostgresEventBus.connect(config.database.url) : new LocalEventBus();
    const encryptor = new Encryptor(key);
    const registry = config.registry ? await openRegistry(config.registry, config.dataDir, key) : undefined;
    if (registry)
      logger.info(
        { registry: config.registry?.location.host, bundle: registry.bundleFile },
        'image registry: point its auth.token.rootcertbundle at the bundle',
      );
    const uploadStore = new UploadStore({
      dir: path.join(config.dataDir, 'uploads'),
      signer: new TokenSigner(deriveKey(key, 'upload-url')),
      // A built archive stops counting against the pending-upload limits at once.
      onDiscarded: (objectPaths) => releaseUploadArchives(db, objectPaths),
    });
    const services = createServices(
      { db, encryptor, bus },
      {
        revisionsKept: config.revisionsKept,
        idempotencyKeyTtlMs: config.idempotencyKeyTtlMs,
        sessionTtlMs: config.sessionTtlMs,
        codehost: codehostOptions(config),
        uploadStore,
        uploadLimits: config.uploads,
        registry,
        provisioning: provisioningPolicy(config),
        outboundAllowPrivate: config.outboundAllowPrivate,
        runnerLeaseMs: config.build.runnerLeaseMs,
        previewsAllowForks: config.previewsAllowForks,
        logger: logger.child({ component: 'previews' }),
        runnerArchiveSigner: new TokenSigner(deriveKey(key, 'runner-archive-url')),
      },
    );
    return { db, bus, encryptor, services, masterKey: key, registry, uploadStore };
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

async function startEngine(core: Core, config: Config, logger: Logger, overrides: BerthOverrides): Promise<Engine> {
  const runtime = overrides.runtime ?? runtimeFor(config.engine);
  const codehost = codehostOptions(config);
  const builder = overrides.builder ?? builderFor(config, core);
  const provisioners = provisionersFor(config);
  const engine = new Engine(
    {
      db: core.db,
      bus: core.bus,
      encryptor: core.encryptor,
      runtime,
      builder,
      codehost,
      provisioners,
      uploads: core.uploadStore,
      registry: core.registry,
      logger: logger.child({ component: 'engine' }),
    },
    {
      concurrency: config.engine.concurrency,
      ...(config.engine.workspaceSlots === undefined ? {} : { workspaceSlots: config.engine.workspaceSlots }),
      maxBuildTimeoutSeconds: config.engine.maxBuildTimeoutSeconds,
      maxDeployTimeoutSeconds: config.engine.maxDeployTimeoutSeconds,
      ...overrides.engineSettings,
    },
  );
  await engine.start();
  const sweeper = startUploadSweeper(core.db, core.uploadStore, logger.child({ component: 'uploads' }));
  engine.onStop(() => sweeper.stop());
  const reaper = startImageReaper({ db: core.db, bus: core.bus, builder, runtime, registry: core.registry, logger: logger.child({ component: 'images' }) });
  engine.onStop(() => reaper.stop());
  const retention = startRetention(
    core.db,
    { audit: config.auditRetentionDays, webhookDeliveries: config.webhookDeliveryRetentionDays },
    logger.child({ component: 'retention' }),
  );
  engine.onStop(() => retention.stop());
  const deliverer = startWebhookDeliverer(
    { db: core.db, bus: core.bus, encryptor: core.encryptor, logger: logger.child({ component: 'webhooks' }) },
    { allowPrivate: config.outboundAllowPrivate, ...overrides.webhookDelivery },
  );
  engine.onStop(() => deliverer.stop());
  const notifier = startGitHubNotifier(
    { db: core.db, bus: core.bus, encryptor: core.encryptor, logger: logger.child({ component: 'github-notices' }), publicUrl: config.publicUrl },
    overrides.githubNotices,
  );
  engine.onStop(() => notifier.stop());
  const previewSweep = startPreviewSweep(core.services.previews, logger.child({ component: 'previews' }), overrides.previewSweepMs);
  engine.onStop(() => previewSweep.stop());
  if (config.codehost.pollSeconds > 0) {
    const poller = startGitPoller(core.services.pushBuilds, config.codehost.pollSeconds, logger.child({ component: 'git-poller' }));
    engine.onStop(() => poller.stop());
  }
  const unavailable = await runtime.unavailableReason();
  logger.info({ runtime: runtime.name, worker: engine.settings.workerId, ...(unavailable ? { unavailable } : {}) }, 'engine started');
  // Said at start rather than at the first build; the check sets the build sandbox up.
  void builder
    .unavailableReason?.()
    .then((reason) => {
      if (reason) logger.warn({ reason }, 'code-host builds will fail until this is fixed');
    })
    .catch(() => {});
  return engine;
}

/**
 * The API server, listening on the configured address, with the engine inside unless
 * `BERTH_ENGINE=off`. The server listens before the engine starts: whatever the engine
 * finds to do at start, health checks and clients are answered from the first moment.
 */
export async function startBerth(config: Config, logger: Logger, overrides: BerthOverrides = {}): Promise<Berth> {
  const core = await openCore(config, logger, overrides.databaseLog);
  let engine: Engine | undefined;
  let app: FastifyInstance | undefined;
  try {
    await bootstrap(config, core.services, logger);
    const metrics = { token: config.metrics?.token, revisionCounts: () => countRevisionsByStatus(core.db) };
    app = await buildApp({
      services: core.services,
      logger,
      limits: config.limits,
      publicUrl: config.publicUrl,
      registry: core.registry,
      metrics,
      dashboardDir: overrides.dashboardDir,
    });
    const address = await app.listen({ port: config.port, host: config.host });
    if (config.engine.enabled) engine = await startEngine(core, config, logger, overrides);
    const sweeper = sweepIdempotencyKeys(core, logger);
    const listening = app;
    return {
      ...core,
      app: listening,
      address,
      engine,
      async close() {
        clearInterval(sweeper);
        await engine?.stop();
        await listening.close();
        await core.bus.close();
        await core.db.destroy();
      },
    };
  } catch (error) {
    await engine?.stop();
    await app?.close();
    await core.bus.close();
    await core.db.destroy();
    throw error;
  }
}

/**
 * Expired idempotency keys are ignored when met; this removes the ones never met again.
 * Every API process sweeps: the delete is one indexed statement and replicas racing on it is harmless.
 */
function sweepIdempotencyKeys(core: Core, logger: Logger): NodeJS.Timeout {
  const timer = setInterval(() => {
    core.services.idempotency.sweep().catch((error: unknown) => logger.warn({ err: error }, 'sweeping expired idempotency keys failed'));
  }, IDEMPOTENCY_SWEEP_MS);
  timer.unref();
  return timer;
}

const IDEMPOTENCY_SWEEP_MS = 10 * 60_000;

/** The engine alone (`berth engine`), to scale revision work out beside API replicas. */
export async function startEngineOnly(config: Config, logger: Logger): Promise<{ close(): Promise<void> }> {
  const core = await openCore(config, logger);
  const { enginePort, token } = config.metrics ?? {};
  const metrics =
    enginePort === undefined
      ? undefined
      : await serveEngineMetrics({ port: enginePort, host: config.host, token, revisionCounts: () => countRevisionsByStatus(core.db) }).catch(async (error) => {
          await core.bus.close();
          await core.db.destroy();
          throw error;
        });
  if (metrics) logger.info({ address: metrics.address }, 'engine metrics served at /metrics');
  const engine = await startEngine(core, config, logger, {});
  return {
    async close() {
      await engine.stop();
      await metrics?.close();
      await core.bus.close();
      await core.db.destroy();
    },
  };
}

function codehostOptions(config: Config) {
  return {
    allowLocal: config.codehost.allowLocal,
    knownHostsFile: path.join(config.dataDir, 'git', 'known_hosts'),
    gitTimeoutMs: config.codehost.gitTimeoutMs,
  };
}

function builderFor(config: Config, core: Core): BuildDriver {
  const registry = core.registry;
  const choice = config.build.builder;
  if (choice === 'none') return new UnavailableBuildDriver();
  if (choice === 'runners') {
    return new RunnerBuildDriver({
      db: core.db,
      bus: core.bus,
      encryptor: core.encryptor,
      registry: registry?.settings.location,
      waitMs: config.build.runnerWaitMs,
    });
  }
  return new LangGraphBuildDriver({
    dataDir: config.dataDir,
    builder: choice,
    baseImages: config.build.baseImages,
    ...(config.build.sandbox ? { sandbox: config.build.sandbox } : {}),
    ...codehostOptions(config),
    ...(registry
      ? {
          registry: {
            host: registry.settings.location.host,
            pathPrefix: registry.settings.location.pathPrefix,
            tlsVerify: registry.settings.tlsVerify,
            // Minted per push, for that repository alone.
            pushCredentials: async (repository) => ({ username: 'oauth2accesstoken', password: await registry.pushCredential('berth-builder', repository) }),
          },
        }
      : {}),
  });
}

function runtimeFor(engine: Config['engine']): RuntimeDriver {
  // The deploy step's own timeout (per deployment) bounds the health wait, not the driver's.
  if (engine.runtime === 'none') return new NoRuntime();
  const standby = { keepMs: engine.standbySeconds * 1000, perDeployment: engine.standbyPerDeployment };
  return new LocalContainerRuntime({ runtime: engine.runtime, healthTimeoutMs: null, network: engine.network, standby });
}

/** What the API checks at create; undefined when this server provisions nothing (the engine checks anyway). */
function provisioningPolicy(config: Config): ProvisioningPolicy | undefined {
  const { postgresUrl, redisUrl, perWorkspace } = config.provisioning;
  const kinds = [...(postgresUrl ? (['postgres'] as const) : []), ...(redisUrl ? (['redis'] as const) : [])];
  return kinds.length > 0 ? { kinds, perWorkspace } : undefined;
}

function provisionersFor(config: Config): Provisioners {
  const { postgresUrl, redisUrl, containerHost, perWorkspace } = config.provisioning;
  const where = { perWorkspace, ...(containerHost ? { containerHost } : {}) };
  return {
    ...(postgresUrl ? { postgres: new PostgresProvisioner({ adminUrl: postgresUrl, ...where }) } : {}),
    ...(redisUrl ? { redis: new RedisProvisioner({ adminUrl: redisUrl, ...where }) } : {}),
  };
}

async function bootstrap(config: Config, services: Services, logger: Logger): Promise<void> {
  const result = await services.tenancy.bootstrap(config.bootstrapApiKey);
  if (!result.created) return;
  logger.info({ workspaceId: result.workspaceId }, "created organization 'default', workspace 'default' and an admin API key");
  if (!result.generated) return;
  fs.mkdirSync(config.dataDir, { recursive: true });
  const file = path.join(config.dataDir, 'bootstrap-api-key');
  fs.writeFileSync(file, `${result.apiKey}\n`, { mode: 0o600 });
  // Printed once, to the terminal and not through the logger: log lines never carry keys.
  process.stderr.write(
    `\nBerth created an admin API key for workspace 'default' (${result.workspaceId}).\n` +
      `It is shown only now and saved in ${file}:\n\n    ${result.apiKey}\n\n`,
  );
}
