import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TokenEndpointResponse, TokenRequest } from '../../src/registry/token-endpoint.js';
import { DEFAULT_REGISTRY_SERVICE, DEFAULT_TOKEN_ISSUER, loadOrCreateSigningKey, writeCertificateBundle } from '../../src/registry/index.js';
import { type BerthProcess, freePort, spawnBerth } from './process.js';
import { deadline } from './deadline.js';

/** The route Berth serves its token realm on; the test token server uses the same path. */
export const TOKEN_PATH = '/v2/registry/token';

export interface TokenRegistryOptions {
  /** URL of the token endpoint (`auth.token.realm`). */
  realm: string;
  /** `auth.token.service`: the `aud` tokens must carry. */
  service: string;
  /** `auth.token.issuer`: the `iss` tokens must carry. */
  issuer: string;
  /** PEM file of certificates that token signing certificates must chain to (`auth.token.rootcertbundle`). */
  rootCertBundle: string;
  /** Stops the registry when aborted. */
  signal?: AbortSignal;
  /** Listen on this loopback port (when the registry's address must be known before it starts); else a free one. */
  port?: number;
}

export interface TokenRegistry {
  /** `127.0.0.1:<port>`, as image references name it. */
  host: string;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** What the registry printed so far (for failure messages). */
  output(): string;
  /** Stops the registry and removes its storage and configuration. Safe to call twice. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = deadline(20_000);
const STOP_GRACE_MS = deadline(5_000);
const START_ATTEMPTS = 3;

/**
 * Starts Debian's `docker-registry serve` on a free loopback port with filesystem storage in a
 * temporary directory and `auth: token:` as given, and waits until it answers `GET /v2/` (401 with
 * a Bearer challenge). Plain HTTP: podman needs `--tls-verify=false` for ports other than 5000.
 */
export async function startTokenRegistry(options: TokenRegistryOptions): Promise<TokenRegistry> {
  let lastFailure = '';
  for (let attempt = 0; attempt < (options.port ? 1 : START_ATTEMPTS); attempt++) {
    const port = options.port ?? (await freePort());
    const started = await startOnce(options, port);
    if ('registry' in started) return started.registry;
    lastFailure = started.failure;
    // Another process may have taken the port between freePort() and the registry's bind.
    if (!/address already in use/.test(lastFailure)) break;
  }
  throw new Error(`docker-registry did not start:\n${lastFailure}`);
}

async function startOnce(options: TokenRegistryOptions, port: number): Promise<{ registry: TokenRegistry } | { failure: string }> {
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'berth-registry-'));
  const configFile = path.join(workDir, 'config.yml');
  // JSON is YAML; the registry's parser reads it as its own format.
  const config = {
    version: '0.1',
    log: { level: 'info', formatter: 'text', accesslog: { disabled: true } },
    storage: { filesystem: { rootdirectory: path.join(workDir, 'storage') }, delete: { enabled: true } },
    http: { addr: `127.0.0.1:${port}`, secret: randomBytes(16).toString('hex') },
    auth: {
      token: {
        realm: options.realm,
        service: options.service,
        issuer: options.issuer,
        rootcertbundle: options.rootCertBundle,
      },
    },
  };
  await writeFile(configFile, JSON.stringify(config, null, 2), { mode: 0o600 });

  // Its own process group, so stop() ends it and anything it started.
  const child = spawn('docker-registry', ['serve', configFile], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: string[] = [];
  const collect = (chunk: Buffer) => {
    chunks.push(chunk.toString());
    if (chunks.length > 2000) chunks.splice(0, 1000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  child.once('error', (error) => chunks.push(`could not run docker-registry: ${error.message}\n`));

  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      options.signal?.removeEventListener('abort', onAbort);
      await killGroup(child, exited);
      await rm(workDir, { recursive: true, force: true });
    })();
    return stopped;
  };
  const onAbort = () => void stop();
  options.signal?.addEventListener('abort', onAbort, { once: true });

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null || options.signal?.aborted) {
      await stop();
      return { failure: chunks.join('') || 'docker-registry exited at once' };
    }
    const challenge = await fetch(`${url}/v2/`).then(
      (response) => (response.status === 401 ? response.headers.get('www-authenticate') : null),
      () => null,
    );
    if (challenge?.startsWith('Bearer ')) {
      return { registry: { host: `127.0.0.1:${port}`, url, output: () => chunks.join(''), stop } };
    }
    if (Date.now() > deadline) {
      await stop();
      return { failure: `no Bearer challenge from ${url}/v2/ within ${START_TIMEOUT_MS / 1000} s:\n${chunks.join('')}` };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function killGroup(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  signalGroup(child.pid, 'SIGTERM');
  const timer = setTimeout(() => signalGroup(child.pid as number, 'SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

export interface TokenServer {
  /** The realm to configure: `http://127.0.0.1:<port>/v2/registry/token`. */
  realm: string;
  /** Every request the endpoint answered, without its Authorization header. */
  requests: { scope: string[]; service?: string; status: number }[];
  stop(): Promise<void>;
}

/**
 * Serves a token endpoint handler on a free loopback port at TOKEN_PATH, as Berth's route will:
 * GET with `service` and (repeatable) `scope` query parameters and the Authorization header.
 */
export async function serveTokenEndpoint(handle: (request: TokenRequest) => Promise<TokenEndpointResponse>): Promise<TokenServer> {
  const requests: TokenServer['requests'] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== TOKEN_PATH || req.method !== 'GET') {
      res.writeHead(404).end();
      return;
    }
    const request: TokenRequest = {
      authorization: req.headers.authorization,
      service: url.searchParams.get('service') ?? undefined,
      scope: url.searchParams.getAll('scope'),
    };
    handle(request).then(
      (answer) => {
        requests.push({ scope: url.searchParams.getAll('scope'), service: request.service, status: answer.status });
        res.writeHead(answer.status, answer.headers).end(JSON.stringify(answer.body));
      },
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    realm: `http://127.0.0.1:${port}${TOKEN_PATH}`,
    requests,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A Berth server process whose built images go to a real docker-registry that trusts its
 * tokens. Berth's signing key is made first in its data directory, so the registry can
 * start with its certificate before Berth does.
 */
export async function startBerthWithRegistry(dataDir: string, env: Record<string, string>): Promise<{ berth: BerthProcess; registry: TokenRegistry }> {
  const signingKey = await loadOrCreateSigningKey(path.join(dataDir, 'registry'));
  const bundle = path.join(dataDir, 'registry', 'token-certificates.pem');
  await writeCertificateBundle(signingKey, bundle);
  const berthPort = await freePort();
  const registry = await startTokenRegistry({
    port: await freePort(),
    realm: `http://127.0.0.1:${berthPort}${TOKEN_PATH}`,
    service: DEFAULT_REGISTRY_SERVICE,
    issuer: DEFAULT_TOKEN_ISSUER,
    rootCertBundle: bundle,
  });
  try {
    const berth = await spawnBerth({ ...env, BERTH_DATA_DIR: dataDir, BERTH_REGISTRY: registry.host }, { port: berthPort });
    return { berth, registry };
  } catch (error) {
    await registry.stop();
    throw error;
  }
}
