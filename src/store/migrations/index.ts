import type { Migration, MigrationProvider } from 'kysely';
import { initialSchema } from './001-initial-schema.js';
import { engineSchema } from './002-engine.js';
import { listingIndex } from './003-listing-index.js';

/** Ordered migrations; the same list runs on SQLite and PostgreSQL. Never edit a landed one. */
const migrations: Record<string, Migration> = {
  '001-initial-schema': initialSchema,
  '002-engine': engineSchema,
  '003-listing-index': listingIndex,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
