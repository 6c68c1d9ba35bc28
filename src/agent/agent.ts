import { setTimeout as delay } from 'node:timers/promises';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { DesiredDeploymentView, DesiredStateView, ReportsInput, ReportsResultView } from '../contract/listener-protocol.js';
import { errorMessage } from '../domain/error-message.js';
import type { AgentLink, ListenerCompute, LogLine, ReportOutcome } from './compute.js';
import type { AgentConfig } from './config.js';
import { ProtocolClient, ProtocolError } from './protocol.js';
import { type AgentState, lockDataDir, readState, writeState } from './state-file.js';

/** After SIGTERM, a report already being sent gets this long to finish. */
const REPORT_GRACE_MS = 10_000;
const MAX_LOG_LINES = 500;
const MAX_MESSAGE = 4096;

function agentVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return `berth-listener/${manifest.version ?? 'unknown'}`;
  } catch {
    return 'berth-listener/unknown';
  }
}

export interface BackoffSettings {
  baseMs: number;
  capMs: number;
}

/** Capped exponential backoff with jitter: between half and all of min(cap, base·2^attempt). */
export function backoffDelay(attempt: number, settings: BackoffSettings, random: () => number = Math.random): number {
  const ceiling = Math.min(settings.capMs, settings.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Waits, or less when the signal aborts (which ends the wait, not the caller). */
const sleep = (ms: number, signal: AbortSignal): Promise<void> => delay(ms, undefined, { signal }).catch(() => undefined);

/** Logs the connection to Berth once per change (connected/disconnected), not once per retry. */
class Link {
  private state: 'unknown' | 'up' | 'down' = 'unknown';
  constructor(private readonly logger: Logger) {}
  up(): void {
    if (this.state !== 'up') this.logger.info('connected to Berth');
    this.state = 'up';
  }
  down(reason: string): void {
    if (this.state !== 'down') this.logger.warn({ reason }, 'disconnected from Berth; retrying with backoff');
    this.state = 'down';
  }
}

/**
 * `berth listener`: heartbeats, long-polls the desired state, hands it to its compute (a
 * container host or a Kubernetes cluster) and sends what the compute reports back to Berth.
 * The compute reads what runs from the runtime every time, so a restart (after SIGKILL or a
 * reboot) neither loses nor repeats a change.
 */
export class ListenerAgent {
  private readonly stopping = new AbortController();
  /** Aborted a while after stopping: a report in flight may finish until then. */
  private readonly reporting = new AbortController();
  private readonly client: ProtocolClient;
  private readonly link: Link;
  private readonly backoff: BackoffSettings;
  private listenerId = '';
  private state: AgentState = { listener_id: null, failed_revisions: [] };
  /** Failures reported (and answered) by this process; others in the state file are reported again. */
  private readonly failuresAnswered = new Set<string>();
  private heartbeatSeconds = 30;
  private running: Promise<void> | null = null;

  constructor(
    private readonly config: AgentConfig,
    private readonly compute: ListenerCompute,
    private readonly logger: Logger,
    options: { backoff?: BackoffSettings } = {},
  ) {
    this.client = new ProtocolClient(config.berthUrl, config.listenerKey, agentVersion());
    this.link = new Link(logger);
    this.backoff = options.backoff ?? { baseMs: 1_000, capMs: 30_000 };
  }

  /** Resolves when the agent has stopped; rejects when it cannot run at all. */
  run(): Promise<void> {
    this.running ??= this.main();
    return this.running;
  }

  /** Stops polling and starting; a report in flight finishes; what runs keeps running. */
  async stop(): Promise<void> {
    this.stopping.abort(new Error('the listener agent is stopping'));
    const grace = setTimeout(() => this.reporting.abort(new Error('stopped')), REPORT_GRACE_MS);
    grace.unref();
    await this.running?.catch(() => undefined);
    clearTimeout(grace);
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private async main(): Promise<void> {
    const unlock = await lockDataDir(this.config.dataDir);
    try {
      const unavailable = await this.compute.unavailableReason();
      if (unavailable) throw new Error(unavailable);
      this.state = await readState(this.config.dataDir);
      this.logger.info({ berth: this.config.berthUrl, dataDir: this.config.dataDir, compute: this.config.compute.kind }, 'berth listener starting');

      const first = await this.retrying(() => this.client.heartbeat(this.stopping.signal), this.stopping.signal);
      if (!first) return;
      this.listenerId = first.listener_id;
      this.heartbeatSeconds = Math.max(1, first.heartbeat_interval_seconds);
      if (this.state.listener_id && this.state.listener_id !== this.listenerId) {
        this.logger.warn(
          { previous: this.state.listener_id, listener: this.listenerId },
          'this data directory served another listener before; what that listener runs is left as it is',
        );
      }
      if (this.state.listener_id !== this.listenerId) await this.saveState({ listener_id: this.listenerId, failed_revisions: [] });
      this.logger.info({ listener: this.listenerId }, 'berth listener running');

      const heartbeats = this.heartbeatLoop();
      await this.pollLoop();
      await heartbeats;
    } finally {
      await unlock();
    }
  }

  /** Heartbeats only when no other call reached Berth within the interval: a polling agent sends none. */
  private async heartbeatLoop(): Promise<void> {
    let triedAt = Date.now();
    while (!this.stopped) {
      const due = Math.max(this.client.heardAt(), triedAt) + this.heartbeatSeconds * 1000 - Date.now();
      if (due > 0) {
        await sleep(due, this.stopping.signal);
        continue;
      }
      triedAt = Date.now();
      try {
        const answer = await this.client.heartbeat(this.stopping.signal);
        this.heartbeatSeconds = Math.max(1, answer.heartbeat_interval_seconds);
        this.link.up();
      } catch (error) {
        if (!this.stopped) this.link.down(errorMessage(error));
      }
    }
  }

  private async pollLoop(): Promise<void> {
    let since: number | undefined;
    let recheck: number | undefined;
    let failures = 0;
    while (!this.stopped) {
      // An unchanged answer at the end of the wait also re-checks what runs; a rollout in progress asks sooner.
      const wait = since === undefined ? 0 : Math.min(this.config.pollSeconds, recheck ?? Infinity);
      const desired = await this.retrying(() => this.client.state(since, wait, this.stopping.signal), this.stopping.signal);
      if (!desired) return;
      try {
        recheck = await this.apply(desired);
        since = desired.generation;
        failures = 0;
      } catch (error) {
        // The runtime failed (podman broken, cluster unreachable, disk full): say so, and look again after a pause.
        this.logger.error({ error: errorMessage(error) }, 'could not apply the desired state; trying again');
        since = undefined;
        await sleep(backoffDelay(failures++, this.backoff), this.stopping.signal);
      }
    }
  }

  /**
   * Calls until an answer, backing off between attempts; undefined once `signal` is aborted.
   * Even a refusal is retried: the agent outlives a misconfigured or half-upgraded Berth.
   */
  private async retrying<T>(call: () => Promise<T>, signal: AbortSignal): Promise<T | undefined> {
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        const answer = await call();
        this.link.up();
        return answer;
      } catch (error) {
        if (signal.aborted) return undefined;
        if (!(error instanceof ProtocolError)) throw error;
        this.link.down(error.message);
        await sleep(backoffDelay(attempt, this.backoff), signal);
      }
    }
    return undefined;
  }

  private async apply(desired: DesiredStateView): Promise<number | undefined> {
    const listed = new Set(desired.deployments.filter((d) => d.revision_status !== 'DEPLOYED').map((d) => d.revision_id));
    const failed = this.state.failed_revisions.filter((id) => listed.has(id));
    if (failed.length !== this.state.failed_revisions.length) await this.saveState({ ...this.state, failed_revisions: failed });

    for (const deployment of desired.deployments) {
      if (failed.includes(deployment.revision_id) && !this.failuresAnswered.has(deployment.revision_id)) {
        // Failed before a restart, maybe unreported: say it again (Berth answers `unchanged` if it knew).
        await this.reportRevision(deployment, 'DEPLOY_FAILED', {
          message: 'The deploy failed on the listener before the agent restarted; see the earlier deploy logs.',
        });
      }
    }
    return this.compute.apply(desired, this.computeLink(), new Set(failed));
  }

  private computeLink(): AgentLink {
    return {
      listenerId: this.listenerId,
      logger: this.logger,
      signal: this.stopping.signal,
      reportRevision: (deployment, status, extra) => this.reportRevision(deployment, status, extra),
      reportDeletion: (deploymentId) => this.reportDeletion(deploymentId),
      markFailed: async (revisionId) => {
        if (!this.state.failed_revisions.includes(revisionId)) {
          await this.saveState({ ...this.state, failed_revisions: [...this.state.failed_revisions, revisionId] });
        }
      },
    };
  }

  private async reportRevision(
    deployment: DesiredDeploymentView,
    status: 'DEPLOYING' | 'DEPLOYED' | 'DEPLOY_FAILED',
    extra: { url?: string; message?: string; logs?: LogLine[] },
  ): Promise<ReportOutcome | undefined> {
    const logs = extra.logs?.slice(-MAX_LOG_LINES).map((line) => ({ ...line, message: line.message.slice(0, MAX_MESSAGE) }));
    const answer = await this.report({
      revisions: [
        {
          deployment_id: deployment.deployment_id,
          revision_id: deployment.revision_id,
          status,
          ...(extra.url ? { url: extra.url } : {}),
          ...(extra.message ? { message: extra.message.slice(0, MAX_MESSAGE) } : {}),
          ...(logs && logs.length > 0 ? { logs } : {}),
        },
      ],
    });
    const outcome = answer?.revisions.find((item) => item.revision_id === deployment.revision_id)?.outcome;
    if (outcome && status === 'DEPLOY_FAILED') this.failuresAnswered.add(deployment.revision_id);
    if (outcome === 'fenced') {
      this.logger.info(
        { deployment: deployment.deployment_name, revision: deployment.revision_id, status },
        'Berth no longer wants this revision here; dropped',
      );
    } else if (outcome) {
      this.logger.info({ deployment: deployment.deployment_name, revision: deployment.revision_id, status, outcome }, 'reported');
    }
    return outcome;
  }

  private async reportDeletion(deploymentId: string): Promise<void> {
    const answer = await this.report({ deletions: [{ deployment_id: deploymentId }] });
    const outcome = answer?.deletions.find((item) => item.deployment_id === deploymentId)?.outcome;
    if (outcome) this.logger.info({ deployment: deploymentId, outcome }, 'reported the deletion');
  }

  /** Sends until answered; after SIGTERM no new attempt starts, but the one in flight may finish. */
  private async report(body: ReportsInput): Promise<ReportsResultView | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        const answer = await this.client.reports(body, this.reporting.signal);
        this.link.up();
        return answer;
      } catch (error) {
        if (this.stopped || this.reporting.signal.aborted) return undefined;
        if (error instanceof ProtocolError && !error.retryable) {
          this.logger.error({ error: error.message }, 'Berth refused a report; dropped');
          return undefined;
        }
        this.link.down(errorMessage(error));
        await sleep(backoffDelay(attempt, this.backoff), this.stopping.signal);
        if (this.stopped) return undefined;
      }
    }
  }

  private async saveState(next: AgentState): Promise<void> {
    this.state = next;
    await writeState(this.config.dataDir, next);
  }
}
