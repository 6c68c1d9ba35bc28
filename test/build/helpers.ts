import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { freePort } from '../support/process.js';
import { deadline } from '../support/deadline.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** The environment every podman, buildah and skopeo call of these tests runs with. */
export function containersEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CONTAINERS_CONF: process.env.CONTAINERS_CONF ?? '/etc/berth/containers.conf',
    CONTAINERS_REGISTRIES_CONF: process.env.CONTAINERS_REGISTRIES_CONF ?? '/etc/berth/registries.conf',
  };
}

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** `timeoutMs` is a base for an idle machine, scaled by BERTH_TEST_DEADLINE_FACTOR. */
export function run(command: string, args: string[], timeoutMs = 600_000): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { env: containersEnv(), timeout: deadline(timeoutMs), maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

export async function runOk(command: string, args: string[], timeoutMs?: number): Promise<string> {
  const result = await run(command, args, timeoutMs);
  if (result.code !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.code}):\n${result.stderr || result.stdout}`);
  return result.stdout;
}

/** Ids of buildah's working containers (every build's, not only this test's). */
export async function workingContainerIds(): Promise<Set<string>> {
  const listed = JSON.parse((await runOk('buildah', ['containers', '--json'])) || 'null') as { id: string }[] | null;
  return new Set((listed ?? []).map((row) => row.id));
}

/** Ids of the intermediate images a build reported committing (not the ones it took from the cache). */
export function committedLayers(lines: string[]): string[] {
  return lines.flatMap((line, index) => {
    const layer = /^--> ([0-9a-f]{10,64})$/.exec(line)?.[1];
    return layer && !lines[index - 1]?.startsWith('--> Using cache') ? [layer] : [];
  });
}

export async function imageExists(id: string): Promise<boolean> {
  return (await run('buildah', ['inspect', '--type', 'image', '--format', '{{.FromImageID}}', id])).code === 0;
}

/** Processes (zombies aside) whose command line contains `needle`. */
export async function liveProcessesWith(needle: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' ');
    if (!cmdline.includes(needle)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state && state !== 'Z' && state !== 'X') found.push(Number(entry));
  }
  return found;
}

export async function buildTestAgentImage(tag: string): Promise<void> {
  await runOk(path.join(ROOT, 'scripts/build-test-image.sh'), [tag]);
}

/** Removes images and containers, ignoring the ones already gone. */
export async function removeContainers(...names: string[]): Promise<void> {
  for (const name of names) await run('podman', ['rm', '--force', '--time', '0', name]);
}

export async function removeImages(...images: string[]): Promise<void> {
  for (const image of images) await run('podman', ['rmi', '--force', image]);
}

/** `timeoutMs` is already scaled by the caller (see deadline()). */
export async function waitForOk(url: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(`${url}/ok`, { signal: AbortSignal.timeout(2_000) })
      .then((response) => response.status === 200)
      .catch(() => false);
    if (ok) return;
    if (Date.now() > until) throw new Error(`${url}/ok did not answer 200 within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface LocalRegistry {
  /** host:port */
  address: string;
  stop(): Promise<void>;
}

/**
 * Debian's docker-registry on 127.0.0.1 over plain HTTP, in a temporary directory;
 * with `user`, it accepts only that user (htpasswd, bcrypt).
 */
export async function startRegistry(user?: { username: string; password: string }): Promise<LocalRegistry> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'berth-test-registry-'));
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  let auth = '';
  if (user) {
    await writeFile(path.join(dir, 'htpasswd'), `${user.username}:${bcrypt.hashSync(user.password, 6)}\n`);
    auth = `auth:\n  htpasswd:\n    realm: berth-test\n    path: ${path.join(dir, 'htpasswd')}\n`;
  }
  const config = `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${path.join(dir, 'data')}\nhttp:\n  addr: ${address}\n${auth}`;
  await writeFile(path.join(dir, 'config.yml'), config);
  const child: ChildProcess = spawn('docker-registry', ['serve', path.join(dir, 'config.yml')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  const until = Date.now() + deadline(15_000);
  for (;;) {
    const status = await fetch(`http://${address}/v2/`)
      .then((response) => response.status)
      .catch(() => 0);
    if (status === 200 || status === 401) return { address, stop };
    if (child.exitCode !== null || Date.now() > until) {
      await stop();
      throw new Error(`docker-registry did not start:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
