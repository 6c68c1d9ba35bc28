import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config, ContainerRuntimeChoice } from './config.js';
import type { EngineSettings } from './engine/context.js';
import { LocalContainerRuntime } from './engine/drivers/local-container/index.js';
import type { BuildDriver, RuntimeDriver } from './engine/drivers/types.js';
import { NoRuntime, UnavailableBuildDriver } from './engine/drivers/unavailable.js';
import { Engine } from './engine/engine.js';
import { type EventBus, LocalEventBus, PostgresEventBus } from './events/bus.js';
import { buildApp } from './http/app.js';
import { loadEncryptionKey, Encryptor } from './security/encryption.js';
import { createServices, type Services } from './services/index.js';
import { type Db, migrateToLatest, openDatabase } from './store/database.js';

/** Drivers and settings tests and benchmarks put in place of the configured ones. */
export interface BerthOverrides {
  runtime?: RuntimeDriver;
  builder?: BuildDriver;
  engineSettings?: Partial<EngineSettings>;
}

export interface Berth {
  app: FastifyInstance;
  engine: Engine | undefined;
  db: Db;
  services: Services;
  bus: EventBus;
  close(): Promise<void>;
}

interface Core {
  db: Db;
  bus: EventBus;
  encryptor: Encryptor;
  services: Services;
}

/** Opens the database, migrates it, loads the encryption key and connects the bus. */
async function openCore(config: Config, logger: Logger): Promise<Core> {
  const db = openDatabase(config.database);
  try {
    await migrateToLatest(db);
    const { key, source } = loadEncryptionKey(config.encryptionKey, config.dataDir);
    if (source === 'generated') logger.info({ dir: config.dataDir }, 'generated a new encryption key file in the data directory');
    if (config.database.kind === 'postgres' && source !== 'env') {
      logger.warn('BERTH_ENCRYPTION_KEY is not set: every server process on this PostgreSQL must share the key file of this data directory');
    }
    const bus = config.database.kind === 'postgres' ? await PostgresEventBus.connect(config.database.url) : new LocalEventBus();
    const encryptor = new Encryptor(key);
    return { db, bus, encryptor, services: createServices({ db, encryptor, bus }) };
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

async function startEngine(core: Core, config: Config, logger: Logger, overrides: BerthOverrides): Promise<Engine> {
  const runtime = overrides.runtime ?? runtimeFor(config.engine.runtime);
  const builder = overrides.builder ?? new UnavailableBuildDriver();
  const engine = new Engine(
    { db: core.db, bus: core.bus, encryptor: core.encryptor, runtime, builder, logger: logger.child({ component: 'engine' }) },
    { concurrency: config.engine.concurrency, ...overrides.engineSettings },
  );
  await engine.start();
  const unavailable = await runtime.unavailableReason();
  logger.info({ runtime: runtime.name, worker: engine.settings.workerId, ...(unavailable ? { unavailable } : {}) }, 'engine started');
  return engine;
}

/** The API server, with the engine inside unless `BERTH_ENGINE=off`. */
export async function startBerth(config: Config, logger: Logger, overrides: BerthOverrides = {}): Promise<Berth> {
  const core = await openCore(config, logger);
  let engine: Engine | undefined;
  try {
    await bootstrap(config, core.services, logger);
    const app = await buildApp({ services: core.services, logger, limits: config.limits });
    if (config.engine.enabled) engine = await startEngine(core, config, logger, overrides);
    return {
      ...core,
      app,
      engine,
      async close() {
        await engine?.stop();
        await app.close();
        await core.bus.close();
        await core.db.destroy();
      },
    };
  } catch (error) {
    await engine?.stop();
    await core.bus.close();
    await core.db.destroy();
    throw error;
  }
}

/** The engine alone (`berth engine`), to scale revision work out beside API replicas. */
export async function startEngineOnly(config: Config, logger: Logger): Promise<{ close(): Promise<void> }> {
  const core = await openCore(config, logger);
  const engine = await startEngine(core, config, logger, {});
  return {
    async close() {
      await engine.stop();
      await core.bus.close();
      await core.db.destroy();
    },
  };
}

function runtimeFor(choice: ContainerRuntimeChoice): RuntimeDriver {
  // The deploy step's own timeout (per deployment) bounds the health wait, not the driver's.
  return choice === 'none' ? new NoRuntime() : new LocalContainerRuntime({ runtime: choice, healthTimeoutMs: null });
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
