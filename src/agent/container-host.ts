import type { DesiredDeploymentView, DesiredStateView } from '../contract/listener-protocol.js';
import type { RunningRevision } from '../containers/driver.js';
import { errorMessage } from '../domain/error-message.js';
import type { AgentLink, ListenerCompute } from './compute.js';
import type { ContainerHostSettings } from './config.js';
import { type Action, type ObservedContainer, reconcile } from './reconciler.js';
import { ContainerRunner, recordingContext } from './runner.js';

/**
 * A container host (compute type docker/podman): each deployment runs as a container of the
 * local runtime, found again by its labels, so a restart (after SIGKILL or a reboot) neither
 * loses nor repeats a change. What to do comes from `reconcile`; this carries it out.
 */
export class ContainerHostCompute implements ListenerCompute {
  private readonly runner: ContainerRunner;

  private readonly publicHost: string;

  constructor(settings: ContainerHostSettings, env: NodeJS.ProcessEnv = process.env) {
    this.runner = new ContainerRunner(settings.runtime, settings.publishAddress, env);
    this.publicHost = settings.publicHost;
  }

  unavailableReason(): Promise<string | null> {
    return this.runner.unavailableReason();
  }

  async apply(desired: DesiredStateView, link: AgentLink, failed: ReadonlySet<string>): Promise<undefined> {
    const running = await this.runner.observe(link.listenerId);
    const operation = new Operation(this.runner, link, this.publicHost);
    for (const action of reconcile({ desired, running, failedRevisions: failed })) {
      if (link.signal.aborted) return undefined;
      await operation.perform(action);
    }
    return undefined;
  }
}

/** One pass over the actions, with the link to Berth it reports through. */
class Operation {
  constructor(
    private readonly runner: ContainerRunner,
    private readonly link: AgentLink,
    private readonly publicHost: string,
  ) {}

  private get stopped(): boolean {
    return this.link.signal.aborted;
  }

  async perform(action: Action): Promise<void> {
    switch (action.kind) {
      case 'deploy':
        return this.deploy(action.deployment, action.rollout, action.replaces);
      case 'adopt':
        return this.adopt(action.deployment, action.container, action.replaces);
      case 'resume':
        return this.resume(action.deployment, action.container, action.replaces);
      case 'retire':
      case 'remove-orphans': {
        await this.runner
          .remove(action.names, this.quietContext(action.deploymentId))
          .catch((error: unknown) => this.link.logger.warn({ error: errorMessage(error) }, 'could not remove containers'));
        return;
      }
      case 'delete':
        return this.delete(action.deploymentId);
    }
  }

  private async deploy(deployment: DesiredDeploymentView, rollout: boolean, replaces: string[]): Promise<void> {
    if (rollout) {
      const outcome = await this.link.reportRevision(deployment, 'DEPLOYING', {});
      if (outcome !== 'applied' && outcome !== 'unchanged') return;
    }
    const context = this.deployContext(deployment);
    let started: RunningRevision;
    try {
      started = await this.runner.start(this.link.listenerId, deployment, context);
    } catch (error) {
      // Stopping: the runtime removed what it started; the next agent rolls the revision out again.
      if (this.stopped) return;
      if (!rollout) {
        this.link.logger.warn(
          { deployment: deployment.deployment_name, error: errorMessage(error) },
          'could not start the deployed revision again; will retry',
        );
        return;
      }
      await this.link.markFailed(deployment.revision_id);
      await this.link.reportRevision(deployment, 'DEPLOY_FAILED', { message: errorMessage(error), logs: context.lines });
      return;
    } finally {
      context.done();
    }
    await this.finishRollout(deployment, started, replaces, context);
  }

  /** Healthy: only now are the containers it replaces removed, then DEPLOYED is reported. */
  private async finishRollout(
    deployment: DesiredDeploymentView,
    started: RunningRevision,
    replaces: string[],
    context: ReturnType<typeof recordingContext>,
  ): Promise<void> {
    if (replaces.length > 0) {
      try {
        await this.runner.remove(replaces, this.quietContext(deployment.deployment_id));
        await context.log('INFO', `Removed ${replaces.join(', ')}, which this revision replaces`);
      } catch (error) {
        await context.log('WARNING', `Could not remove the replaced containers: ${errorMessage(error)}`);
      }
    }
    await this.link.reportRevision(deployment, 'DEPLOYED', { url: this.publicUrl(started.url), logs: context.lines });
  }

  /** Users reach the published port by the name this host has for them, not by loopback. */
  private publicUrl(url: string): string {
    const parsed = new URL(url);
    parsed.hostname = this.publicHost;
    return parsed.toString().replace(/\/$/, '');
  }

  /** A step context bounded by the deployment's deploy timeout (and the agent stopping). */
  private deployContext(deployment: DesiredDeploymentView) {
    const deadline = new AbortController();
    const seconds = Math.max(1, deployment.deploy_timeout_seconds);
    const timer = setTimeout(
      () => deadline.abort(new Error(`not healthy within the deploy timeout of ${seconds} s (source_config.deploy_timeout_seconds)`)),
      seconds * 1000,
    );
    const logger = this.link.logger;
    const context = recordingContext(AbortSignal.any([this.link.signal, deadline.signal]), (line) =>
      logger.info({ deployment: deployment.deployment_name, deployLog: line.level }, line.message),
    );
    return Object.assign(context, { done: () => clearTimeout(timer) });
  }

  /**
   * The revision's container already runs (an agent stopped while starting it): wait for it to
   * answer, as the start would have, then report it; one that does not is replaced by a new start.
   */
  private async adopt(deployment: DesiredDeploymentView, container: ObservedContainer, replaces: string[]): Promise<void> {
    const context = this.deployContext(deployment);
    await context.log('INFO', `Container ${container.name} of this revision already runs; waiting for GET /ok`);
    let started: RunningRevision;
    try {
      started = await this.runner.resume(container, context);
    } catch (error) {
      if (this.stopped) return;
      await context.log('WARNING', `${errorMessage(error)}; starting it anew`);
      return this.deploy(deployment, true, replaces);
    } finally {
      context.done();
    }
    await this.finishRollout(deployment, started, replaces, context);
  }

  /** A DEPLOYED revision's container stopped (host reboot): start it again, and say where it serves now. */
  private async resume(deployment: DesiredDeploymentView, container: ObservedContainer, replaces: string[]): Promise<void> {
    const context = this.deployContext(deployment);
    let resumed: RunningRevision;
    try {
      resumed = await this.runner.resume(container, context);
    } catch (error) {
      if (this.stopped) return;
      this.link.logger.warn(
        { deployment: deployment.deployment_name, error: errorMessage(error) },
        'could not start the stopped container again; starting a new one',
      );
      return this.deploy(deployment, false, replaces);
    } finally {
      context.done();
    }
    await this.runner.remove(replaces, this.quietContext(deployment.deployment_id)).catch(() => undefined);
    // Usually the same port; if the runtime had to pick another, Berth moves the URL (else `unchanged`).
    await this.link.reportRevision(deployment, 'DEPLOYED', { url: this.publicUrl(resumed.url) });
  }

  private async delete(deploymentId: string): Promise<void> {
    try {
      await this.runner.teardown(deploymentId, this.quietContext(deploymentId));
    } catch (error) {
      this.link.logger.warn({ deployment: deploymentId, error: errorMessage(error) }, 'could not remove the deployment; will retry');
      return;
    }
    await this.link.reportDeletion(deploymentId);
  }

  private quietContext(deploymentId: string) {
    return recordingContext(AbortSignal.timeout(120_000), (line) => this.link.logger.info({ deployment: deploymentId }, line.message));
  }
}
