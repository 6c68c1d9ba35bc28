/**
 * The settings of `berth builder --executor kubernetes` (docs/build-runners.md): where the
 * build Jobs go, which image they run, and the resources and timeout of a build whose job
 * does not say. Read apart from runner/config.ts: the rest of the runner's settings do not
 * change with the executor.
 */
export interface KubernetesBuildConfig {
  namespace: string;
  builderImage: string;
  serviceAccountName: string | undefined;
  defaultCpu: number;
  defaultMemoryMb: number;
  defaultTimeoutSeconds: number;
  ttlSecondsAfterFinished: number;
  /** Where build pods fetch an uploaded project from this runner (BERTH_BUILDER_ARCHIVE_URL); undefined: uploads are refused. */
  archiveUrl: string | undefined;
  /** The port the runner serves archives on, on every interface, while an upload builds (BERTH_BUILDER_ARCHIVE_PORT). */
  archivePort: number;
}

export type Executor = 'local' | 'kubernetes';

export const KUBERNETES_BUILD_VARIABLES = [
  'BERTH_BUILDER_EXECUTOR',
  'BERTH_BUILDER_NAMESPACE',
  'BERTH_BUILDER_IMAGE',
  'BERTH_BUILDER_SERVICE_ACCOUNT',
  'BERTH_BUILDER_CPU',
  'BERTH_BUILDER_MEMORY_MB',
  'BERTH_BUILDER_TIMEOUT_SECONDS',
  'BERTH_BUILDER_TTL_SECONDS',
  'BERTH_BUILDER_ARCHIVE_URL',
  'BERTH_BUILDER_ARCHIVE_PORT',
] as const;

export class KubernetesBuildConfigError extends Error {
  override name = 'KubernetesBuildConfigError';
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function positive(name: string, raw: string | undefined, fallback: number, max: number, problems: string[], integer = true): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw.trim());
  if (!Number.isFinite(value) || value <= 0 || value > max || (integer && !Number.isInteger(value))) {
    problems.push(`${name} must be ${integer ? 'an integer' : 'a number'} above 0 and at most ${max} (got '${raw.trim()}')`);
  }
  return value;
}

/** `--executor` over BERTH_BUILDER_EXECUTOR; `local` (build on this machine) by default. */
export function executorOf(env: NodeJS.ProcessEnv, flag?: string): Executor {
  const executor = (flag ?? env.BERTH_BUILDER_EXECUTOR ?? 'local').trim() || 'local';
  if (executor !== 'local' && executor !== 'kubernetes') {
    throw new KubernetesBuildConfigError(`berth builder cannot start:\n  BERTH_BUILDER_EXECUTOR (--executor) must be local or kubernetes (got '${executor}')`);
  }
  return executor;
}

/** Every problem at once, naming the variable. */
export function loadKubernetesBuildConfig(env: NodeJS.ProcessEnv): KubernetesBuildConfig {
  const problems: string[] = [];
  const namespace = (env.BERTH_BUILDER_NAMESPACE ?? '').trim();
  if (!DNS_LABEL.test(namespace)) problems.push(`BERTH_BUILDER_NAMESPACE is required: the namespace build Jobs run in (a DNS label; got '${namespace}')`);
  const builderImage = (env.BERTH_BUILDER_IMAGE ?? '').trim();
  if (builderImage === '' || /\s/.test(builderImage))
    problems.push("BERTH_BUILDER_IMAGE is required: Berth's image with buildah and git (deploy/builder-kubernetes)");
  const serviceAccount = (env.BERTH_BUILDER_SERVICE_ACCOUNT ?? '').trim();
  if (serviceAccount !== '' && !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(serviceAccount))
    problems.push(`BERTH_BUILDER_SERVICE_ACCOUNT must be a service account's name (got '${serviceAccount}')`);
  const archiveUrl = (env.BERTH_BUILDER_ARCHIVE_URL ?? '').trim().replace(/\/+$/, '');
  if (archiveUrl !== '' && !URL.canParse(archiveUrl)) problems.push(`BERTH_BUILDER_ARCHIVE_URL must be an http:// or https:// URL (got '${archiveUrl}')`);
  else if (archiveUrl !== '' && !/^https?:$/.test(new URL(archiveUrl).protocol))
    problems.push(`BERTH_BUILDER_ARCHIVE_URL must be an http:// or https:// URL (got '${archiveUrl}')`);
  const config: KubernetesBuildConfig = {
    namespace,
    builderImage,
    serviceAccountName: serviceAccount || undefined,
    defaultCpu: positive('BERTH_BUILDER_CPU', env.BERTH_BUILDER_CPU, 1, 64, problems, false),
    defaultMemoryMb: positive('BERTH_BUILDER_MEMORY_MB', env.BERTH_BUILDER_MEMORY_MB, 4096, 262_144, problems),
    defaultTimeoutSeconds: positive('BERTH_BUILDER_TIMEOUT_SECONDS', env.BERTH_BUILDER_TIMEOUT_SECONDS, 1800, 86_400, problems),
    ttlSecondsAfterFinished: positive('BERTH_BUILDER_TTL_SECONDS', env.BERTH_BUILDER_TTL_SECONDS, 600, 604_800, problems),
    archiveUrl: archiveUrl || undefined,
    archivePort: positive('BERTH_BUILDER_ARCHIVE_PORT', env.BERTH_BUILDER_ARCHIVE_PORT, 9470, 65_535, problems),
  };
  if (problems.length > 0) throw new KubernetesBuildConfigError(`berth builder cannot start:\n  ${problems.join('\n  ')}`);
  return config;
}
