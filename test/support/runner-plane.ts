import type { Registry } from '../../src/registry/setup.js';
import { freePort } from './process.js';
import { startTokenRegistry, TOKEN_PATH, type TokenRegistry } from './registry.js';
import { type DatabaseKind, startTestServer, type TestServer } from './server.js';

export interface RunnerPlaneOptions {
  /** BERTH_RUNNER_WAIT_SECONDS: how long a queued build waits for a runner. */
  waitSeconds: number;
  /** BERTH_RUNNER_LEASE_SECONDS, when the test wants a short lease (a runner killed mid-build). */
  leaseSeconds?: number;
}

/**
 * A control plane that never builds itself (BERTH_BUILDER=runners) with Berth's registry in
 * front of a real docker-registry, as the runner suites use it: runners claim its jobs and
 * push with the tokens it issues. The caller closes both.
 */
export async function startRunnerControlPlane(kind: DatabaseKind, options: RunnerPlaneOptions): Promise<{ server: TestServer; registry: TokenRegistry }> {
  const berthPort = await freePort();
  const registryPort = await freePort();
  const server = await startTestServer(kind, {
    configuredBuilder: true,
    env: {
      PORT: String(berthPort),
      BERTH_BUILDER: 'runners',
      ...(options.leaseSeconds === undefined ? {} : { BERTH_RUNNER_LEASE_SECONDS: String(options.leaseSeconds) }),
      BERTH_RUNNER_WAIT_SECONDS: String(options.waitSeconds),
      BERTH_REGISTRY: `127.0.0.1:${registryPort}`,
      BERTH_REGISTRY_TLS_VERIFY: 'off',
      BERTH_GIT_ALLOW_LOCAL: 'on',
    },
  });
  try {
    const berthRegistry = server.berth.registry as Registry;
    const registry = await startTokenRegistry({
      port: registryPort,
      realm: `http://127.0.0.1:${berthPort}${TOKEN_PATH}`,
      service: berthRegistry.settings.service,
      issuer: berthRegistry.settings.issuer,
      rootCertBundle: berthRegistry.bundleFile,
    });
    return { server, registry };
  } catch (error) {
    await server.close();
    throw error;
  }
}
