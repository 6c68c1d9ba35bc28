import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { buildApp } from './http/app.js';
import { loadEncryptionKey, Encryptor } from './security/encryption.js';
import { createServices, type Services } from './services/index.js';
import { type Db, migrateToLatest, openDatabase } from './store/database.js';

export interface Berth {
  app: FastifyInstance;
  db: Db;
  services: Services;
  close(): Promise<void>;
}

/** Opens the database, migrates it, bootstraps the first organization and builds the HTTP app. */
export async function startBerth(config: Config, logger: Logger): Promise<Berth> {
  const db = openDatabase(config.database);
  try {
    await migrateToLatest(db);
    const { key, source } = loadEncryptionKey(config.encryptionKey, config.dataDir);
    if (source === 'generated') logger.info({ dir: config.dataDir }, 'generated a new encryption key file in the data directory');
    if (config.database.kind === 'postgres' && source !== 'env') {
      logger.warn('BERTH_ENCRYPTION_KEY is not set: every server process on this PostgreSQL must share the key file of this data directory');
    }
    const services = createServices({ db, encryptor: new Encryptor(key) });
    await bootstrap(config, services, logger);
    const app = await buildApp({ services, logger });
    return {
      app,
      db,
      services,
      async close() {
        await app.close();
        await db.destroy();
      },
    };
  } catch (error) {
    await db.destroy();
    throw error;
  }
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
