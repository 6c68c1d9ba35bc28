/**
 * CPU of one listing page, measured in the server's own process: Berth in this process
 * (startBerth, engine off) on a database seeded by bench/seed.ts, N requests of the
 * listing scenario's shape (`GET /v2/deployments?name_contains=<team>&status=READY&limit=20`)
 * through Fastify's inject, `concurrency` at a time; process.cpuUsage() over them divided
 * by N. Unlike the server CPU of the autocannon scenarios, this leaves out the sockets and
 * holds up on a shared machine (other work changes wall time, not this process's CPU).
 *
 *   node --import tsx bench/list-cpu.ts [--deployments 100000] [--requests 5000] [--data-dir DIR]
 *
 * With --data-dir of an earlier run, the seeding is skipped (the same data for a before
 * and after). Prints one JSON line.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_LIMITS } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startBerth } from '../src/server.js';
import { testConfig } from '../test/support/config.js';
import { TEAMS } from './seed.js';

const { values } = parseArgs({
  options: {
    deployments: { type: 'string', default: '100000' },
    requests: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '50' },
    'data-dir': { type: 'string' },
    path: { type: 'string' },
  },
});
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);

async function main(): Promise<void> {
  const dataDir = values['data-dir'] ?? fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-list-cpu-'));
  const serverEnv = (keys: { apiKey: string; encryptionKey: string }) => ({
    PORT: '0',
    BERTH_DATA_DIR: dataDir,
    BERTH_BOOTSTRAP_API_KEY: keys.apiKey,
    BERTH_ENCRYPTION_KEY: keys.encryptionKey,
    BERTH_ENGINE: 'off',
    LOG_LEVEL: 'warn',
  });
  const keysFile = path.join(dataDir, 'bench-keys.json');
  if (!fs.existsSync(keysFile)) {
    const keys = { apiKey: `berth_bench_${randomBytes(16).toString('hex')}`, encryptionKey: randomBytes(32).toString('hex') };
    const { DATABASE_URL: _sqliteOnly, ...inherited } = process.env;
    const env = { ...inherited, BERTH_DATA_DIR: dataDir, BERTH_BOOTSTRAP_API_KEY: keys.apiKey, BERTH_ENCRYPTION_KEY: keys.encryptionKey, LOG_LEVEL: 'warn' };
    // The server creates the schema and the bootstrap key; the seed needs both.
    const first = await startBerth(testConfig(serverEnv(keys)), createLogger('warn'));
    await first.close();
    execFileSync(process.execPath, ['--import', 'tsx', 'bench/seed.ts', '--deployments', values.deployments], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    fs.writeFileSync(keysFile, JSON.stringify(keys));
  }
  const keys = JSON.parse(fs.readFileSync(keysFile, 'utf8')) as { apiKey: string; encryptionKey: string };
  const config = testConfig(serverEnv(keys), { limits: { ...DEFAULT_LIMITS, rateLimitPerMinute: 0 } });
  const berth = await startBerth(config, createLogger('warn'));
  try {
    let sent = 0;
    let bytes = 0;
    const run = async (count: number) => {
      sent = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (sent < count) {
            const team = TEAMS[sent++ % TEAMS.length] as string;
            const url = values.path ?? `/v2/deployments?name_contains=${team}&status=READY&limit=20`;
            const response = await berth.app.inject({ method: 'GET', url, headers: { 'x-api-key': keys.apiKey } });
            if (response.statusCode !== 200) throw new Error(`${url} answered ${response.statusCode}: ${response.body.slice(0, 300)}`);
            bytes += response.rawPayload.length;
          }
        }),
      );
    };
    // Warm-up: compiled queries, JIT, the secrets cache.
    await run(Math.min(2000, REQUESTS));
    bytes = 0;
    const before = process.cpuUsage();
    const started = performance.now();
    await run(REQUESTS);
    const cpu = process.cpuUsage(before);
    process.stdout.write(
      `${JSON.stringify({
        requests: REQUESTS,
        cpuMicrosPerRequest: (cpu.user + cpu.system) / REQUESTS,
        wallMicrosPerRequest: ((performance.now() - started) * 1000) / REQUESTS,
        bytesPerRequest: bytes / REQUESTS,
        dataDir,
      })}\n`,
    );
  } finally {
    await berth.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`list-cpu failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
