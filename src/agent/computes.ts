import { KubeConfig } from '@kubernetes/client-node';
import type { ListenerCompute } from './compute.js';
import type { AgentConfig } from './config.js';
import { ContainerHostCompute } from './container-host.js';
import { KubernetesCompute } from './kubernetes/compute.js';

/** The compute the agent's settings name: this host's container runtime, or the cluster it runs in (or KUBECONFIG names). */
export function computeFor(settings: AgentConfig['compute'], env: NodeJS.ProcessEnv = process.env): ListenerCompute {
  if (settings.kind === 'container') return new ContainerHostCompute(settings, env);
  const kubeConfig = new KubeConfig();
  // In a pod: its service account; elsewhere KUBECONFIG or ~/.kube/config.
  kubeConfig.loadFromDefault();
  return new KubernetesCompute(kubeConfig, settings);
}
