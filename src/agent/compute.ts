import type { Logger } from 'pino';
import type { DesiredDeploymentView, DesiredStateView, ReportedLogLevel } from '../contract/listener-protocol.js';

/** A deploy log line, sent to Berth with the report that ends a rollout. */
export interface LogLine {
  level: ReportedLogLevel;
  message: string;
  timestamp: string;
}

export type ReportOutcome = 'applied' | 'unchanged' | 'fenced';

/** What a compute may ask of the agent: report to Berth, remember failures, know when to stop. */
export interface AgentLink {
  readonly listenerId: string;
  readonly logger: Logger;
  /** Aborted when the agent stops: start nothing new. */
  readonly signal: AbortSignal;
  /** Undefined when no answer came (the agent is stopping, or Berth refused the report). */
  reportRevision(
    deployment: DesiredDeploymentView,
    status: 'DEPLOYING' | 'DEPLOYED' | 'DEPLOY_FAILED',
    extra: { url?: string; message?: string; logs?: LogLine[] },
  ): Promise<ReportOutcome | undefined>;
  /** Everything of the deployment is gone. */
  reportDeletion(deploymentId: string): Promise<void>;
  /** Remembered across restarts, so a failed revision is not tried again while Berth still lists it. */
  markFailed(revisionId: string): Promise<void>;
}

/**
 * Where a listener runs deployments: a container host or a Kubernetes cluster. The agent
 * speaks the protocol; a compute turns each desired state into what runs there.
 */
export interface ListenerCompute {
  /** Why this compute cannot run at all (no container runtime, no cluster configured); null when it can. */
  unavailableReason(): Promise<string | null>;
  /**
   * Brings what runs in line with `desired`, reporting through `link`. Revisions in `failed`
   * were reported DEPLOY_FAILED before: leave them. Answers how many seconds it may wait at
   * most before it wants to look again (a rollout in progress), or undefined when the next
   * change of the desired state, or the end of the poll period, is soon enough.
   */
  apply(desired: DesiredStateView, link: AgentLink, failed: ReadonlySet<string>): Promise<number | undefined>;
}
