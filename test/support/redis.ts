import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClient } from 'redis';
import { freePort } from './process.js';
import { deadline } from './deadline.js';

export type RedisClient = ReturnType<typeof createClient>;

export interface TestRedis {
  /** An admin user's URL (every command, key and channel). */
  adminUrl: string;
  /** The port, for URLs with other users. */
  port: number;
  stop(): Promise<void>;
}

/** Why a Redis of a test's own cannot be started here, or null. */
export function redisServerMissing(): string | null {
  return spawnSync('redis-server', ['--version']).status === 0 ? null : 'redis-server is not installed';
}

/**
 * A Redis server of the test's own (the machine's redis-server binary, on a free loopback
 * port, nothing saved to disk), set up the way per-deployment users need it: the
 * `default` user off (unless `openDefaultUser`), and an admin user for Berth. Stop it in `after`.
 */
export async function startRedis(options: { databases?: number; openDefaultUser?: boolean } = {}): Promise<TestRedis> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-redis-'));
  const port = await freePort();
  const password = randomBytes(16).toString('hex');
  fs.writeFileSync(
    path.join(dir, 'redis.conf'),
    [
      `port ${port}`,
      'bind 127.0.0.1',
      'save ""',
      'appendonly no',
      `dir ${dir}`,
      `databases ${options.databases ?? 16}`,
      `user admin on >${password} ~* &* +@all`,
      options.openDefaultUser ? 'user default on nopass ~* &* +@all' : 'user default off',
    ].join('\n'),
    { mode: 0o600 },
  );
  const server = spawn('redis-server', [path.join(dir, 'redis.conf')], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const stop = async () => {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
    await exited;
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const adminUrl = `redis://admin:${password}@127.0.0.1:${port}`;
  try {
    const until = Date.now() + deadline(10_000);
    for (;;) {
      try {
        (await connectRedis(adminUrl)).destroy();
        break;
      } catch (error) {
        if (Date.now() > until || server.exitCode !== null) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { adminUrl, port, stop };
}

/** A client that fails instead of reconnecting; destroy it when done. */
export async function connectRedis(url: string): Promise<RedisClient> {
  const client = createClient({ url, socket: { connectTimeout: 3000, reconnectStrategy: false } });
  client.on('error', () => {});
  await client.connect();
  return client;
}
