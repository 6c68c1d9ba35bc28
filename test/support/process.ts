import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { tempBuildDir } from './build-sandbox.js';
import { deadline } from './deadline.js';
import { nodeArguments } from './entry.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface BerthProcess {
  url: string;
  child: ChildProcess;
  output: string[];
  /** Resolves when the process has exited. */
  exited: Promise<number | null>;
  /** Resolves once the build directory the harness gave it is released, after it exited. */
  released: Promise<void>;
}

/**
 * Starts `berth serve` as a real child process and waits until it answers GET /ok: from
 * the TypeScript sources, or `compiled` from dist/ as `npm start` runs it (build it first).
 * Unless `env` names a BERTH_BUILD_DIR, the process builds in a temporary directory of its
 * own (with the default disk bound, so workspaces' disks are loop-mounted in it as in
 * production), unmounted and removed once the process has exited however it ended: the
 * default /var/lib/berth-build is the host's, and mounts left there outlive every test.
 */
export async function spawnBerth(env: Record<string, string>, options: { compiled?: boolean; port?: number } = {}): Promise<BerthProcess> {
  const port = options.port ?? (await freePort());
  const builds = env.BERTH_BUILD_DIR === undefined ? await tempBuildDir() : undefined;
  const entry = options.compiled ? [path.join(ROOT, 'dist/main.js')] : nodeArguments('src/main.ts');
  const child = spawn(process.execPath, [...entry, 'serve'], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...(builds ? { BERTH_BUILD_DIR: builds.path } : {}), ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    // Never spawned (no exit event follows): nothing runs, the directory can go.
    child.once('error', () => resolve(child.exitCode));
  });
  const released = exited.then(() => builds?.remove());
  const url = `http://127.0.0.1:${port}`;
  const limitMs = deadline(60_000);
  const until = Date.now() + limitMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await released;
      throw new Error(`berth exited during start:\n${output.join('')}`);
    }
    const ok = await fetch(`${url}/ok`)
      .then((r) => r.status === 200)
      .catch(() => false);
    if (ok) return { url, child, output, exited, released };
    if (Date.now() > until) {
      child.kill('SIGKILL');
      await released;
      throw new Error(`berth did not answer /ok within ${limitMs / 1000} s:\n${output.join('')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Stops the process and waits until it has exited and its build directory is released. */
export async function stopBerth(berth: BerthProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (berth.child.exitCode === null && berth.child.signalCode === null) berth.child.kill(signal);
  await berth.released;
}
