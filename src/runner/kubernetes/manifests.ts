import { createHash } from 'node:crypto';
import type { KubernetesObject, V1Job, V1ResourceRequirements, V1Secret } from '@kubernetes/client-node';

/** Labels on every object of a build, so an operator (and the runner) can find a build's Job by its job, revision or deployment. */
export const BUILD_LABEL = {
  managedBy: 'app.kubernetes.io/managed-by',
  component: 'app.kubernetes.io/component',
  buildJobId: 'berth.dev/build-job-id',
  deploymentId: 'berth.dev/deployment-id',
  revisionId: 'berth.dev/revision-id',
  workspaceId: 'berth.dev/workspace-id',
} as const;

/** Where the pod finds the job's Secret: a file, never an environment variable (a pod's env is visible to whoever may read the pod). */
export const JOB_FILE_DIR = '/var/run/berth/job';
export const JOB_FILE_KEY = 'job.json';
/** The builder's working directory: sources, and buildah's vfs store. */
export const WORK_DIR = '/var/lib/berth-build';
export const BUILD_CONTAINER = 'build';
/** The builder's user: any non-root uid works; this one is the builder image's. */
const BUILDER_UID = 1000;

export interface BuildResources {
  cpu: number;
  memoryMb: number;
  cpuLimit: number;
  memoryLimitMb: number;
}

export interface BuildJobInput {
  namespace: string;
  /** The Job's name (buildObjectName). */
  name: string;
  buildJobId: string;
  workspaceId: string;
  deploymentId: string;
  revisionId: string;
  builderImage: string;
  resources: BuildResources;
  timeoutSeconds: number;
  /** How long Kubernetes keeps a finished Job should the runner's own deletion not happen (the runner died). */
  ttlSecondsAfterFinished: number;
  serviceAccountName?: string;
}

/**
 * The Job's name: the build job's id, with a short digest of this claim's lease so that a
 * runner that takes a build over (the first one's lease expired) never collides with what
 * the first one left behind. 12 + 36 + 1 + 8 = 57 characters, under the 63 a Job's name
 * may have (it becomes its pods' `job-name` label).
 */
export function buildObjectName(buildJobId: string, leaseToken: string): string {
  return `berth-build-${buildJobId.toLowerCase()}-${createHash('sha256').update(leaseToken).digest('hex').slice(0, 8)}`;
}

export function buildSelector(buildJobId: string): string {
  return `${BUILD_LABEL.managedBy}=berth,${BUILD_LABEL.buildJobId}=${buildJobId.toLowerCase()}`;
}

function labels(input: BuildJobInput): Record<string, string> {
  return {
    [BUILD_LABEL.managedBy]: 'berth',
    [BUILD_LABEL.component]: 'build',
    [BUILD_LABEL.buildJobId]: input.buildJobId.toLowerCase(),
    [BUILD_LABEL.deploymentId]: input.deploymentId.toLowerCase(),
    [BUILD_LABEL.revisionId]: input.revisionId.toLowerCase(),
    [BUILD_LABEL.workspaceId]: input.workspaceId.toLowerCase(),
  };
}

/** Kubernetes quantities: millicores and mebibytes, so a fraction of a core is exact. */
function quantities(cpu: number, memoryMb: number): Record<string, string> {
  return { cpu: `${Math.max(1, Math.round(cpu * 1000))}m`, memory: `${Math.max(1, Math.round(memoryMb))}Mi` };
}

function resources(spec: BuildResources): V1ResourceRequirements {
  return { requests: quantities(spec.cpu, spec.memoryMb), limits: quantities(spec.cpuLimit, spec.memoryLimitMb) };
}

/**
 * One build as a Job: a single pod, never retried (a failed build is reported, and the
 * control plane decides), running Berth's builder as a non-root user with no capabilities,
 * no privilege escalation and the runtime's default seccomp profile. buildah builds with
 * chroot isolation into a vfs store (neither needs a privilege: no overlay mount, no new
 * namespaces of its own). The source and push credentials come from the Secret mounted
 * read-only as a file; the service account's token is not mounted (the build needs no API).
 */
export function renderBuildJob(input: BuildJobInput): V1Job {
  const objectLabels = labels(input);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: input.name, namespace: input.namespace, labels: objectLabels },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: input.timeoutSeconds,
      ttlSecondsAfterFinished: input.ttlSecondsAfterFinished,
      template: {
        metadata: { labels: objectLabels },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          ...(input.serviceAccountName ? { serviceAccountName: input.serviceAccountName } : {}),
          securityContext: {
            runAsNonRoot: true,
            runAsUser: BUILDER_UID,
            runAsGroup: BUILDER_UID,
            fsGroup: BUILDER_UID,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: BUILD_CONTAINER,
              image: input.builderImage,
              command: ['berth', 'builder-pod', '--job', `${JOB_FILE_DIR}/${JOB_FILE_KEY}`, '--work-dir', WORK_DIR],
              env: [
                { name: 'BUILDAH_ISOLATION', value: 'chroot' },
                { name: 'STORAGE_DRIVER', value: 'vfs' },
                { name: 'HOME', value: WORK_DIR },
                { name: 'TMPDIR', value: '/tmp' },
              ],
              resources: resources(input.resources),
              securityContext: {
                runAsNonRoot: true,
                allowPrivilegeEscalation: false,
                privileged: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
                seccompProfile: { type: 'RuntimeDefault' },
              },
              volumeMounts: [
                { name: 'job', mountPath: JOB_FILE_DIR, readOnly: true },
                { name: 'work', mountPath: WORK_DIR },
                { name: 'tmp', mountPath: '/tmp' },
              ],
            },
          ],
          volumes: [
            { name: 'job', secret: { secretName: input.name, defaultMode: 0o400 } },
            { name: 'work', emptyDir: {} },
            { name: 'tmp', emptyDir: {} },
          ],
        },
      },
    },
  };
}

/** What the builder pod reads from its Secret: everything to fetch, build and push, credentials (and an archive's token) included. */
export interface PodJob {
  image: string;
  graph_config_path: string;
  install_command: string | null;
  build_command: string | null;
  workspace_id: string;
  deployment_id: string;
  deployment_name: string;
  revision_id: string;
  source:
    | {
        kind: 'git';
        url: string;
        ref: string;
        credentials: { kind: 'basic'; username: string; password: string } | { kind: 'ssh-key'; private_key: string; known_hosts?: string } | null;
      }
    /** An uploaded project, fetched from the runner (archive-server.ts) with a token valid while the build runs. */
    | { kind: 'archive'; url: string; sha256: string };
  push: { registry: string; path_prefix: string; repository: string; tls_verify: boolean; username: string; password: string } | null;
}

/** The Job's Secret, owned by the Job (Kubernetes deletes it with the Job even if the runner cannot). */
export function renderBuildSecret(input: BuildJobInput, job: PodJob, owner: KubernetesObject): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: input.name,
      namespace: input.namespace,
      labels: labels(input),
      ownerReferences: [
        {
          apiVersion: 'batch/v1',
          kind: 'Job',
          name: owner.metadata?.name ?? input.name,
          uid: owner.metadata?.uid ?? '',
          controller: false,
          blockOwnerDeletion: false,
        },
      ],
    },
    data: { [JOB_FILE_KEY]: Buffer.from(JSON.stringify(job)).toString('base64') },
  };
}
