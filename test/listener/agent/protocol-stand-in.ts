import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { Check } from 'typebox/value';
import {
  type DesiredDeploymentView,
  HeartbeatBody,
  LISTENER_PROTOCOL_HEADER,
  LISTENER_PROTOCOL_PREFIX,
  ReportsBody,
  type ReportsInput,
  type ReportsResultView,
} from '../../../src/contract/listener-protocol.js';

type Outcome = 'applied' | 'unchanged' | 'fenced';

/**
 * Berth's side of the listener protocol, in memory: the contract's three routes with the
 * same authentication, long poll and report outcomes, for testing the agent before (and
 * independently of) the real server. Bodies the agent sends are checked against the contract.
 */
export class ProtocolStandIn {
  readonly listenerId = randomUUID();
  readonly key = `lk_${randomUUID()}`;
  generation = 1;
  readonly deployments = new Map<string, DesiredDeploymentView & { url?: string }>();
  /** Deployments being deleted: their name and namespace. */
  readonly deletions = new Map<string, { name: string; namespace: string | null }>();
  /** The DEPLOYED revision a new one replaces; it is the target again when the new one fails. */
  private readonly previous = new Map<string, DesiredDeploymentView & { url?: string }>();
  /** Every revision report received, in order, with the outcome it got. */
  readonly revisionReports: { revision_id: string; status: string; url?: string | null; message?: string | null; logs: number; outcome: Outcome }[] = [];
  readonly deletionReports: { deployment_id: string; outcome: Outcome }[] = [];
  readonly rejectedBodies: string[] = [];
  heartbeats = 0;
  private waiters = new Set<() => void>();
  private server: http.Server | null = null;
  private sockets = new Set<net.Socket>();
  port = 0;

  async start(port = 0): Promise<string> {
    const server = http.createServer((request, response) => void this.handle(request, response));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
    return `http://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    this.wake();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Places a new deployment (its first revision AWAITING_DEPLOY). */
  place(name: string, image: string, deployTimeoutSeconds = 60, extra: Partial<DesiredDeploymentView> = {}): DesiredDeploymentView {
    const deployment: DesiredDeploymentView = {
      deployment_id: randomUUID(),
      deployment_name: name,
      revision_id: randomUUID(),
      revision_status: 'AWAITING_DEPLOY',
      image_uri: image,
      resource_spec: { cpu: 0.25, memory_mb: 32 },
      secrets: [{ name: 'AGENT_TEST_SECRET', value: `secret-${randomUUID()}` }],
      namespace: null,
      deploy_timeout_seconds: deployTimeoutSeconds,
      ...extra,
    };
    this.deployments.set(deployment.deployment_id, deployment);
    this.changed();
    return deployment;
  }

  /** A PATCH with a new image: a new revision becomes the target. */
  update(deploymentId: string, image: string): string {
    const current = this.deployments.get(deploymentId);
    if (!current) throw new Error(`no deployment ${deploymentId}`);
    const revisionId = randomUUID();
    if (current.revision_status === 'DEPLOYED') this.previous.set(deploymentId, current);
    this.deployments.set(deploymentId, { ...current, revision_id: revisionId, revision_status: 'AWAITING_DEPLOY', image_uri: image, url: undefined });
    this.changed();
    return revisionId;
  }

  remove(deploymentId: string): void {
    const current = this.deployments.get(deploymentId);
    if (!current) throw new Error(`no deployment ${deploymentId}`);
    this.deployments.delete(deploymentId);
    this.deletions.set(deploymentId, { name: current.deployment_name, namespace: current.namespace });
    this.changed();
  }

  private changed(): void {
    this.generation++;
    this.wake();
  }

  private wake(): void {
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  private snapshot() {
    return {
      protocol_version: 1 as const,
      listener_id: this.listenerId,
      generation: this.generation,
      deployments: [...this.deployments.values()].map(({ url: _url, ...deployment }) => deployment),
      deletions: [...this.deletions].map(([deployment_id, { name, namespace }]) => ({ deployment_id, deployment_name: name, namespace })),
    };
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const reply = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    const url = new URL(request.url ?? '/', 'http://stand-in');
    if (request.headers['x-api-key'] !== this.key) return reply(401, { detail: 'Invalid API key', code: 'unauthorized' });
    if (request.headers[LISTENER_PROTOCOL_HEADER] !== '1') return reply(400, { detail: 'protocol', code: 'listener_protocol_unsupported' });
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const route = `${request.method} ${url.pathname.replace(LISTENER_PROTOCOL_PREFIX, '')}`;

    if (route === 'POST /heartbeat') {
      if (!Check(HeartbeatBody, JSON.parse(text))) return this.reject(text, reply);
      this.heartbeats++;
      return reply(200, { listener_id: this.listenerId, heartbeat_interval_seconds: 2, offline_after_seconds: 10 });
    }
    if (route === 'GET /state') {
      const since = url.searchParams.has('since') ? Number(url.searchParams.get('since')) : undefined;
      const wait = Math.min(60, Number(url.searchParams.get('wait') ?? 0));
      if (since !== undefined && this.generation <= since && wait > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait * 1000);
          this.waiters.add(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      if (response.destroyed) return;
      return reply(200, this.snapshot());
    }
    if (route === 'POST /reports') {
      const body = JSON.parse(text) as ReportsInput;
      if (!Check(ReportsBody, body)) return this.reject(text, reply);
      return reply(200, this.apply(body));
    }
    return reply(404, { detail: 'Not Found' });
  }

  private reject(text: string, reply: (status: number, body: unknown) => void): void {
    this.rejectedBodies.push(text);
    reply(422, { detail: 'body does not match the contract', code: 'validation_error' });
  }

  private apply(body: ReportsInput): ReportsResultView {
    const result: ReportsResultView = { revisions: [], deletions: [] };
    for (const report of body.revisions ?? []) {
      const target = this.deployments.get(report.deployment_id);
      let outcome: Outcome = 'fenced';
      if (target && target.revision_id === report.revision_id) {
        if (report.status === 'DEPLOYING') {
          outcome = target.revision_status === 'AWAITING_DEPLOY' ? 'applied' : 'unchanged';
          if (outcome === 'applied') this.deployments.set(target.deployment_id, { ...target, revision_status: 'DEPLOYING' });
        } else if (report.status === 'DEPLOYED') {
          outcome = target.revision_status === 'DEPLOYED' && target.url === report.url ? 'unchanged' : 'applied';
          if (outcome === 'applied') this.deployments.set(target.deployment_id, { ...target, revision_status: 'DEPLOYED', url: report.url ?? undefined });
        } else {
          // The failed revision stops being the target; the one it was to replace serves on.
          const previous = this.previous.get(target.deployment_id);
          if (previous) this.deployments.set(target.deployment_id, previous);
          else this.deployments.delete(target.deployment_id);
          outcome = 'applied';
        }
        if (outcome === 'applied') this.changed();
      }
      this.revisionReports.push({
        revision_id: report.revision_id,
        status: report.status,
        url: report.url,
        message: report.message,
        logs: report.logs?.length ?? 0,
        outcome,
      });
      result.revisions.push({ revision_id: report.revision_id, outcome });
    }
    for (const report of body.deletions ?? []) {
      let outcome: Outcome = 'unchanged';
      if (this.deletions.has(report.deployment_id)) {
        this.deletions.delete(report.deployment_id);
        this.changed();
        outcome = 'applied';
      } else if (this.deployments.has(report.deployment_id)) {
        outcome = 'fenced';
      }
      this.deletionReports.push({ deployment_id: report.deployment_id, outcome });
      result.deletions.push({ deployment_id: report.deployment_id, outcome });
    }
    return result;
  }

  /** The URL Berth would show for the deployment (reported with DEPLOYED). */
  urlOf(deploymentId: string): string | undefined {
    return this.deployments.get(deploymentId)?.url;
  }

  statusOf(deploymentId: string): string | undefined {
    return this.deployments.get(deploymentId)?.revision_status;
  }
}
