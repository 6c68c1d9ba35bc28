import type { DesiredDeploymentView } from '../contract/listener-protocol.js';
import { localLimits } from '../domain/deployment-config.js';
import { platformVariables } from '../domain/platform-env.js';
import { LocalContainerRuntime } from '../containers/runtime/index.js';
import { DriverError, type RunningRevision, type StepContext } from '../containers/driver.js';
import type { LogLine } from './compute.js';
import type { ObservedContainer } from './reconciler.js';

/** Containers of a listener carry its id in this label, beside the deployment and revision labels. */
export const LISTENER_LABEL = 'berth.listener';

/** A step's context that keeps its log lines (sent with the report) and hands them to `echo`. */
export function recordingContext(signal: AbortSignal, echo: (line: LogLine) => void): StepContext & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    signal,
    lines,
    async log(level, message) {
      const line = { level, message, timestamp: new Date().toISOString() };
      lines.push(line);
      echo(line);
    },
  };
}

/**
 * The container side of the agent: what runs for this listener (found by label, so it
 * survives agent restarts and host reboots) and the local container runtime's start,
 * retire and teardown.
 */
export class ContainerRunner {
  private readonly runtime: LocalContainerRuntime;

  constructor(kind: 'auto' | 'podman' | 'docker', publishAddress: string, env: NodeJS.ProcessEnv = process.env) {
    // The deploy timeout of each deployment bounds the wait for GET /ok (the step's signal).
    this.runtime = new LocalContainerRuntime({ runtime: kind, env, healthTimeoutMs: null, publishAddress });
  }

  unavailableReason(): Promise<string | null> {
    return this.runtime.unavailableReason();
  }

  async observe(listenerId: string): Promise<ObservedContainer[]> {
    const found = await this.runtime.listLabelled(LISTENER_LABEL, listenerId);
    return found.map(({ name, deploymentId, revisionId, running, hostPort }) => ({
      name,
      deploymentId,
      revisionId,
      running,
      url: hostPort === null ? null : `http://127.0.0.1:${hostPort}`,
    }));
  }

  async start(listenerId: string, deployment: DesiredDeploymentView, context: StepContext): Promise<RunningRevision> {
    try {
      return await this.startOnce(listenerId, deployment, context);
    } catch (error) {
      // A `run` left running by an agent killed mid-start can create the same container just
      // after this start removed it; the runtime removes it again on the second attempt.
      if (!(error instanceof DriverError) || !/already in use/.test(error.message) || context.signal.aborted) throw error;
      await context.log('WARNING', 'The container name was taken by an earlier, interrupted start; starting again');
      return this.startOnce(listenerId, deployment, context);
    }
  }

  private startOnce(listenerId: string, deployment: DesiredDeploymentView, context: StepContext): Promise<RunningRevision> {
    const env = Object.fromEntries(deployment.secrets.map((secret) => [secret.name, secret.value]));
    Object.assign(env, platformVariables({ id: deployment.deployment_id, name: deployment.deployment_name }, { id: deployment.revision_id }));
    return this.runtime.start(
      {
        deploymentId: deployment.deployment_id,
        revisionId: deployment.revision_id,
        instanceName: deployment.deployment_name.toLowerCase(),
        image: deployment.image_uri,
        env,
        resources: localLimits(deployment.resource_spec ?? {}),
        labels: { [LISTENER_LABEL]: listenerId },
      },
      context,
    );
  }

  resume(container: ObservedContainer, context: StepContext): Promise<RunningRevision> {
    const port = container.url ? Number(new URL(container.url).port) : null;
    return this.runtime.resume({ ...container, hostPort: port }, context);
  }

  async remove(names: string[], context: StepContext): Promise<void> {
    for (const name of names) await this.runtime.retire(name, context);
  }

  teardown(deploymentId: string, context: StepContext): Promise<void> {
    return this.runtime.teardown(deploymentId, context);
  }
}
