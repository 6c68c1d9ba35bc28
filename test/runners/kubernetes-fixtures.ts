import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import type { HeartbeatView, JobSourceView, LogBatch, RunnerJobView, RunnerResult } from '../../src/contract/build-runners.js';
import type { RunnerClient } from '../../src/runner/client.js';
import type { KubernetesBuildConfig } from '../../src/runner/kubernetes/config.js';

export const NAMESPACE = 'builds';
export const PUSH_PASSWORD = 'push-secret-7f3a9c1e5b';
export const GIT_PASSWORD = 'ghs_gitTokenAbcdef123456';

export const CONFIG: KubernetesBuildConfig = {
  namespace: NAMESPACE,
  builderImage: 'registry.example.com/berth:1.0',
  serviceAccountName: undefined,
  defaultCpu: 1,
  defaultMemoryMb: 4096,
  defaultTimeoutSeconds: 1800,
  ttlSecondsAfterFinished: 600,
  archiveUrl: undefined,
  archivePort: 9470,
};

export function claimedJob(overrides: Partial<RunnerJobView> = {}): RunnerJobView {
  return {
    id: '0b6f2a43-1111-4111-8111-111111111111',
    lease_token: 'lease-token-0123456789abcdef',
    lease_expires_at: new Date(Date.now() + 30_000).toISOString(),
    lease_seconds: 30,
    workspace_id: '1c7a3b54-2222-4222-8222-222222222222',
    deployment_id: '2d8b4c65-3333-4333-8333-333333333333',
    deployment_name: 'support-agent',
    revision_id: '3e9c5d76-4444-4444-8444-444444444444',
    graph_config_path: 'langgraph.json',
    install_command: null,
    build_command: null,
    image: 'registry.example.com/berth/ws/support-agent:rev',
    push: {
      registry: 'registry.example.com',
      path_prefix: 'berth',
      repository: 'berth/ws/support-agent',
      tls_verify: true,
      username: 'oauth2accesstoken',
      password: PUSH_PASSWORD,
    },
    build_timeout_seconds: 900,
    resources: { cpu: 0.5, memory_mb: 1024, cpu_limit: null, memory_limit_mb: 3072 },
    ...overrides,
  };
}

/**
 * The control plane's side of the protocol, in memory: the source with a credential, the
 * log batches and the result as the runner sent them, and a heartbeat a test can turn to
 * `cancel`.
 */
export class FakeControlPlane {
  readonly batches: LogBatch[] = [];
  readonly results: RunnerResult[] = [];
  cancel = false;
  /** An uploaded project instead of the repository: Berth's archive URL, and how the runner downloads it (a real RunnerClient in the tests). */
  upload: { url: string; download: RunnerClient['download'] } | undefined;

  get lines(): string[] {
    return this.batches.flatMap((batch) => batch.lines.map((line) => `${line.level} ${line.message}`));
  }

  client(): RunnerClient {
    const client: Pick<RunnerClient, 'heartbeat' | 'source' | 'download' | 'logs' | 'result'> = {
      heartbeat: async (): Promise<HeartbeatView> => ({ action: this.cancel ? 'cancel' : 'continue', lease_expires_at: new Date().toISOString() }),
      source: async (): Promise<JobSourceView> =>
        this.upload
          ? { kind: 'archive', url: this.upload.url, expires_at: new Date(Date.now() + 600_000).toISOString() }
          : {
              kind: 'git',
              url: 'https://github.com/acme/agent.git',
              ref: 'main',
              credentials: { kind: 'basic', username: 'x-access-token', password: GIT_PASSWORD },
            },
      download: async (url, file, signal) => {
        if (!this.upload) throw new Error('no upload to download');
        await this.upload.download(url, file, signal);
      },
      logs: async (_jobId, batch) => {
        this.batches.push(structuredClone(batch));
        return { stored: true };
      },
      result: async (_jobId, result) => {
        this.results.push(structuredClone(result));
        return { outcome: 'applied' };
      },
    };
    return client as RunnerClient;
  }
}

/** A logger whose every line is kept, to check that no credential reaches it. */
export function capturedLogger(): { logger: Logger; text: () => string } {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), text: () => chunks.join('') };
}
