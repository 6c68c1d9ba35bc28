/**
 * The build runner protocol (docs/build-runners.md): a `berth builder` process, holding a
 * runner key, long-polls for build jobs, claims one under a lease, fetches its source,
 * streams its log lines and reports the image it pushed or the failure. Runners always call
 * Berth; every report carries the lease token of the claim, and a token that no longer
 * holds the job is answered 409 `build_lease_lost`.
 */
import { type Static, Type } from 'typebox';
import { DateTime, Nullable, StringEnum, Uuid } from './common.js';
import { RunnerLabel } from './admin.js';

export const RUNNER_PREFIX = '/v1/runner';
/** The longest a claim may wait for a job. */
export const MAX_CLAIM_WAIT_SECONDS = 60;
/** The most log lines in one batch. */
export const MAX_LOG_BATCH_LINES = 500;

export const ClaimBody = Type.Object(
  {
    labels: Type.Optional(
      Type.Array(RunnerLabel, { maxItems: 20, uniqueItems: true, description: "Labels this runner advertises (a subset of its key's); default: the key's." }),
    ),
    wait: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_CLAIM_WAIT_SECONDS, default: 0, description: 'Seconds to wait for a job (long poll).' })),
  },
  { title: 'RunnerClaimRequest' },
);

export const RunnerPush = Type.Object(
  {
    registry: Type.String({ description: "Berth's registry, `host[:port]`." }),
    path_prefix: Type.String(),
    repository: Type.String({ description: 'The one repository the credential may push to.' }),
    tls_verify: Type.Boolean(),
    username: Type.String(),
    password: Type.String({ description: 'A push credential for `repository` alone, valid a few minutes; never log it.' }),
  },
  { title: 'RunnerPush' },
);

export const RunnerResources = Type.Object(
  {
    cpu: Nullable(Type.Number({ exclusiveMinimum: 0, description: 'Cores requested (resource_spec.cpu).' })),
    memory_mb: Nullable(Type.Integer({ minimum: 1, description: 'Memory requested (resource_spec.memory_mb).' })),
    cpu_limit: Nullable(Type.Number({ exclusiveMinimum: 0 })),
    memory_limit_mb: Nullable(Type.Integer({ minimum: 1 })),
  },
  {
    title: 'RunnerResources',
    description: "The deployment's resource_spec, for a runner that sizes each build (a Kubernetes Job); null: the runner's default.",
  },
);

export const RunnerJob = Type.Object(
  {
    id: Uuid(),
    lease_token: Type.String({ description: 'Send it with every call about this job; never log it.' }),
    lease_expires_at: DateTime(),
    lease_seconds: Type.Integer({ description: 'Heartbeat well within this.' }),
    workspace_id: Uuid(),
    deployment_id: Uuid(),
    deployment_name: Type.String(),
    revision_id: Uuid(),
    graph_config_path: Type.String(),
    install_command: Nullable(Type.String()),
    build_command: Nullable(Type.String()),
    image: Type.String({ description: 'The name to build and push the image as.' }),
    push: Nullable(RunnerPush),
    build_timeout_seconds: Type.Optional(
      Nullable(Type.Integer({ minimum: 1, description: "The deployment's `build_timeout_seconds`; null or absent: the runner's own default." })),
    ),
    resources: Type.Optional(Nullable(RunnerResources)),
  },
  { title: 'RunnerJob' },
);

export const ClaimResult = Type.Object({ job: Nullable(RunnerJob) }, { title: 'RunnerClaimResult' });

export const JobParams = Type.Object({ job_id: Uuid() });
export const LeaseBody = Type.Object({ lease_token: Type.String({ minLength: 1, maxLength: 200 }) }, { title: 'RunnerLease' });

export const HeartbeatResult = Type.Object(
  {
    action: StringEnum(['continue', 'cancel'] as const, {
      description: '`cancel`: stop the build (interrupted, timed out, or no longer wanted) and report nothing more.',
    }),
    lease_expires_at: DateTime(),
  },
  { title: 'RunnerHeartbeatResult' },
);

export const GitCredentials = Type.Union(
  [
    Type.Object({ kind: Type.Literal('basic'), username: Type.String(), password: Type.String() }),
    Type.Object({ kind: Type.Literal('ssh-key'), private_key: Type.String(), known_hosts: Type.Optional(Type.String()) }),
  ],
  { title: 'RunnerGitCredentials' },
);

export const GitJobSource = Type.Object(
  {
    kind: Type.Literal('git'),
    url: Type.String(),
    ref: Type.String({ description: 'The branch, tag or commit the revision names.' }),
    credentials: Nullable(GitCredentials),
  },
  {
    title: 'RunnerGitSource',
    description: 'Credentials are the integration’s (short-lived where the code host issues them so: GitHub installation tokens); never log them.',
  },
);

export const ArchiveJobSource = Type.Object(
  {
    kind: Type.Literal('archive'),
    url: Type.String({
      description:
        'Where to GET the uploaded project (`.tar.gz`), with the runner key, before `expires_at`; good for this claim only. ' +
        'Its content is the uploader’s: unpack it as Berth does (no path out of the directory, no links out, bounded size).',
    }),
    expires_at: DateTime(),
  },
  { title: 'RunnerArchiveSource' },
);

export const JobSource = Type.Union([GitJobSource, ArchiveJobSource], { title: 'RunnerJobSource' });

/** The signed token of an archive URL. */
export const ArchiveQuery = Type.Object({ token: Type.String({ minLength: 1, maxLength: 4096, pattern: '^[A-Za-z0-9._-]+$' }) });

export const LogLine = Type.Object(
  { level: StringEnum(['DEBUG', 'INFO', 'WARNING', 'ERROR'] as const), message: Type.String({ maxLength: 8192 }) },
  { title: 'RunnerLogLine' },
);

export const LogsBody = Type.Object(
  {
    lease_token: Type.String({ minLength: 1, maxLength: 200 }),
    seq: Type.Integer({ minimum: 0, description: 'The batch’s number, from 0, one more per batch: a batch re-sent with its number is stored once.' }),
    lines: Type.Array(LogLine, { maxItems: MAX_LOG_BATCH_LINES }),
  },
  { title: 'RunnerLogBatch' },
);

export const LogsResult = Type.Object(
  { stored: Type.Boolean({ description: 'false: a batch with this number was stored before.' }) },
  { title: 'RunnerLogBatchResult' },
);

export const ResultBody = Type.Object(
  {
    lease_token: Type.String({ minLength: 1, maxLength: 200 }),
    status: StringEnum(['succeeded', 'failed'] as const),
    image: Type.Optional(Type.String({ maxLength: 500, description: 'succeeded: the image as pushed (the job’s `image`).' })),
    digest: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    commit_sha: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
    env: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'langgraph.json’s env, for the container; never logged.' })),
    message: Type.Optional(Type.String({ maxLength: 8192, description: 'failed: what failed, for a person.' })),
  },
  { title: 'RunnerResult' },
);

export const ResultOutcome = Type.Object({ outcome: StringEnum(['applied', 'unchanged'] as const) }, { title: 'RunnerResultOutcome' });

const HEX64 = '[0-9a-f]{64}';
const COMMIT = '(?:[0-9a-f]{40}|[0-9a-f]{64})';

export const ReportedInputs = Type.Object(
  {
    source: Type.String({
      pattern: `^(?:commit:${COMMIT}|archive:sha256:${HEX64})$`,
      description: '`commit:<sha>` for a repository, `archive:sha256:<hex>` for an uploaded archive.',
    }),
    commit_sha: Nullable(Type.String({ pattern: `^${COMMIT}$`, description: 'The commit the ref named (a repository); null for an archive.' })),
    graph_config_path: Type.String({ minLength: 1, maxLength: 1000 }),
    graph_config_sha256: Type.String({ pattern: `^${HEX64}$`, description: 'SHA-256 of langgraph.json as read.' }),
    base_image: Type.String({ minLength: 1, maxLength: 500, description: 'The image in FROM.' }),
    base_image_digest: Type.String({ minLength: 1, maxLength: 200, description: "Its id in the runner's image store." }),
    generator_version: Type.Integer({ minimum: 1, description: "The runner's Dockerfile generator version." }),
  },
  { title: 'RunnerBuildInputs', description: 'What the build would be made from, worked out by the runner without building.' },
);

export const InputsBody = Type.Object(
  {
    lease_token: Type.String({ minLength: 1, maxLength: 200 }),
    inputs: ReportedInputs,
    env: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'langgraph.json’s env, for the container; never logged.' })),
  },
  { title: 'RunnerInputsReport' },
);

export const InputsAnswer = Type.Object(
  {
    action: StringEnum(['build', 'reused'] as const, {
      description: '`reused`: an image of the workspace built from the same inputs serves the revision; the job is over, build nothing. `build`: build it.',
    }),
  },
  { title: 'RunnerInputsAnswer' },
);

export type RunnerJobView = Static<typeof RunnerJob>;
export type RunnerInputsReport = Static<typeof InputsBody>;
export type RunnerInputsAnswer = Static<typeof InputsAnswer>;
export type ClaimRequest = Static<typeof ClaimBody>;
export type JobSourceView = Static<typeof JobSource>;
export type LogBatch = Static<typeof LogsBody>;
export type RunnerResult = Static<typeof ResultBody>;
export type HeartbeatView = Static<typeof HeartbeatResult>;
