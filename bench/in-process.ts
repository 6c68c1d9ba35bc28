/**
 * The Berth the in-process scenarios (bench/engine.ts, bench/fairness.ts) measure: started
 * with startBerth in this process, the instant runtime (bench/instant-runtime.ts) and a
 * fake builder, the product's engine settings (BERTH_ENGINE_CONCURRENCY 4 unless set), no
 * rate limit, and SQLite in a temporary directory unless DATABASE_URL names PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Config, DEFAULT_LIMITS } from '../src/config.js';
import type { BuildDriver } from '../src/engine/drivers/types.js';
import { createLogger } from '../src/logger.js';
import { type Berth, startBerth } from '../src/server.js';
import type { Db } from '../src/store/database.js';
import { testConfig } from '../test/support/config.js';
import { FakeBuildDriver } from '../test/support/drivers/fake-build.js';
import { createPostgresDatabase } from '../test/support/server.js';
import { InstantRuntime } from './instant-runtime.js';

export interface BenchBerth {
  berth: Berth;
  config: Config;
  /** The bootstrap admin key, bound to the `default` workspace. */
  adminKey: string;
  /** Stops Berth and its runtime and removes its data (and its own database, if it made one). */
  close(): Promise<void>;
}

export interface BenchBerthOptions {
  /** `name`: the data directory's prefix (and, with `ownDatabase`, the database's). */
  name: string;
  builder?: BuildDriver;
  /** More settings, over the defaults above. */
  env?: Record<string, string>;
  /** On PostgreSQL, a fresh database of its own rather than DATABASE_URL's (dropped on close). */
  ownDatabase?: boolean;
}

export async function startBenchBerth(options: BenchBerthOptions): Promise<BenchBerth> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `berth-bench-${options.name}-`));
  const url = process.env.DATABASE_URL?.trim();
  const given = url && /^postgres(ql)?:\/\//.test(url) ? url : undefined;
  const database = given && options.ownDatabase ? await createPostgresDatabase(given, `berth_bench_${options.name}`) : undefined;
  const postgres = database?.url ?? given;
  const adminKey = `berth_bench_${randomUUID()}`;
  const config: Config = testConfig(
    {
      PORT: '0',
      BERTH_DATA_DIR: dataDir,
      BERTH_BOOTSTRAP_API_KEY: adminKey,
      LOG_LEVEL: 'warn',
      BERTH_CONTAINER_RUNTIME: 'none',
      BERTH_BUILDER: 'none',
      BERTH_ENGINE_CONCURRENCY: process.env.BERTH_ENGINE_CONCURRENCY ?? '4',
      ...(process.env.BERTH_ENCRYPTION_KEY ? { BERTH_ENCRYPTION_KEY: process.env.BERTH_ENCRYPTION_KEY } : {}),
      ...(postgres ? { DATABASE_URL: postgres } : {}),
      ...options.env,
    },
    { limits: { ...DEFAULT_LIMITS, rateLimitPerMinute: 0 } },
  );
  const runtime = new InstantRuntime();
  const removeData = async () => {
    await database?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  let berth: Berth;
  try {
    berth = await startBerth(config, createLogger('warn'), { runtime, builder: options.builder ?? new FakeBuildDriver() });
  } catch (error) {
    await runtime.close();
    await removeData();
    throw error;
  }
  return {
    berth,
    config,
    adminKey,
    async close() {
      try {
        await berth.close();
        await runtime.close();
      } finally {
        await removeData();
      }
    },
  };
}

/** Milliseconds from each revision's creation to its first QUEUED event (the engine's pick-up delay). */
export async function pickupDelays(db: Db, ids: string[]): Promise<number[]> {
  const delays: number[] = [];
  for (let at = 0; at < ids.length; at += 500) {
    const rows = await db
      .selectFrom('revisions as r')
      .innerJoin('deployment_events as e', (join) => join.onRef('e.revision_id', '=', 'r.id').on('e.kind', '=', 'status').on('e.status', '=', 'QUEUED'))
      .select(['r.id', 'r.created_at', (eb) => eb.fn.min('e.created_at').as('queued_at')])
      .where('r.id', 'in', ids.slice(at, at + 500))
      .groupBy(['r.id', 'r.created_at'])
      .execute();
    for (const row of rows) delays.push(Date.parse(String(row.queued_at)) - Date.parse(row.created_at));
  }
  if (delays.length !== ids.length) throw new Error(`${ids.length - delays.length} revisions have no QUEUED event`);
  return delays;
}
