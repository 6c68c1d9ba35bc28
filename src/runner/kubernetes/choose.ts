import { KubeConfig } from '@kubernetes/client-node';
import type { DriverFor } from '../job.js';
import { executorOf, loadKubernetesBuildConfig } from './config.js';
import { kubernetesDriverFor } from './executor.js';

/**
 * The runner's executor: undefined builds on this machine (the runner's default driver);
 * `kubernetes` builds each job as a Job, with the in-cluster service account or KUBECONFIG.
 * Throws KubernetesBuildConfigError naming what is missing.
 */
export function executorDriverFor(env: NodeJS.ProcessEnv, flag: string | undefined): DriverFor | undefined {
  if (executorOf(env, flag) === 'local') return undefined;
  const config = loadKubernetesBuildConfig(env);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  return kubernetesDriverFor(config, kubeConfig);
}
