import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Static } from 'typebox';
import type {
  ClaimRequest,
  GitJobSource,
  HeartbeatView,
  JobSourceView,
  LogBatch,
  RunnerInputsAnswer,
  RunnerInputsReport,
  RunnerJobView,
  RunnerResult,
} from '../contract/build-runners.js';
import { buildKey, runnerBuildInputs } from '../domain/build-inputs.js';
import { fail } from '../domain/errors.js';
import type { Principal } from '../domain/tenancy.js';
import type { EventBus } from '../events/bus.js';
import { classifyImage } from '../registry/image-names.js';
import type { Registry } from '../registry/setup.js';
import { jobEnvContext, jobSourceContext } from '../security/build-job-contexts.js';
import type { Encryptor } from '../security/encryption.js';
import { TokenError, type TokenSigner } from '../security/signed-tokens.js';
import { type Db, nowIso } from '../store/database.js';
import {
  type BuildJobRecord,
  claimBuildJob,
  extendBuildJobLease,
  findBuildJob,
  finishBuildJob,
  insertBuildJobLogs,
  recordBuildJobInputs,
  touchBuildRunner,
} from '../store/repositories/build-jobs.js';
import { builtWithKey } from '../store/repositories/revisions.js';
import { allFieldsRead } from './all-fields-read.js';

/** How long a push credential given with a claim lasts: a build that pushes later asks again at its heartbeat. */
const PUSH_CREDENTIAL_SECONDS = 600;
/** How long an uploaded archive's download URL lasts: a runner fetches it right after asking for the source. */
const ARCHIVE_URL_SECONDS = 600;
const ARCHIVE_PURPOSE = 'runner-archive';
/** The safety net behind the bus for a waiting claim (a notification lost between processes). */
const CLAIM_RECHECK_MS = 5_000;

export interface BuildRunnerDeps {
  db: Db;
  bus: EventBus;
  encryptor: Encryptor;
  registry: Registry | undefined;
  /** BERTH_RUNNER_LEASE_SECONDS, in ms: a runner that does not heartbeat within it loses its job to another. */
  leaseMs: number;
  /** Signs archive download URLs, bound to a job and its claim. */
  archiveSigner: TokenSigner;
}

/** A job's source as the engine sealed it (engine/runner-build.ts). */
type SealedSource =
  | {
      kind: 'git';
      url: string;
      ref: string;
      auth?: { kind: 'basic'; username: string; password: string } | { kind: 'ssh-key'; privateKey: string; knownHosts?: string };
    }
  | { kind: 'archive'; path: string };

/**
 * The runner side of build jobs (docs/build-runners.md). Every call about a job is fenced
 * by its lease token: a runner whose lease was taken over is refused 409, whatever it
 * reports. Jobs are of the key's organization only; another organization's job is not found.
 */
export function createBuildRunnerService(deps: BuildRunnerDeps) {
  const { db, bus, encryptor } = deps;

  function runnerLabels(principal: Principal, asked: string[] | undefined): string[] {
    const allowed = principal.runnerLabels ?? [];
    if (asked === undefined) return [...allowed];
    const extra = asked.find((label) => !allowed.includes(label));
    if (extra !== undefined)
      throw fail('role_forbids', `This runner key may not advertise the label '${extra}' (its labels: ${allowed.join(', ') || 'none'}).`);
    return asked;
  }

  async function held(principal: Principal, jobId: string, token: string): Promise<BuildJobRecord> {
    const job = await findBuildJob(db, jobId.toLowerCase());
    if (!job || job.organization_id !== principal.organizationId) throw fail('build_job_not_found', `Build job ${jobId} not found.`);
    if (job.lease_token !== token || job.runner_key_id !== principal.keyId) {
      throw fail(
        'build_lease_lost',
        'This runner does not hold the job (its lease expired and another runner took it, or it never held it): stop building it.',
      );
    }
    return job;
  }

  async function view(job: BuildJobRecord): Promise<RunnerJobView> {
    const request = job.request as {
      deployment_name: string;
      graph_config_path: string;
      install_command: string | null;
      build_command: string | null;
      image: string;
      repository: string;
      /** Absent on jobs queued before the engine wrote them. */
      build_timeout_seconds?: number | null;
      resources?: RunnerJobView['resources'];
    };
    const registry = deps.registry;
    const push = registry
      ? {
          registry: registry.settings.location.host,
          path_prefix: registry.settings.location.pathPrefix,
          repository: request.repository,
          tls_verify: registry.settings.tlsVerify,
          username: 'oauth2accesstoken',
          password: await registry.pushCredential(`berth-runner:${job.runner_key_id ?? ''}`, request.repository, PUSH_CREDENTIAL_SECONDS),
        }
      : null;
    return {
      id: job.id,
      lease_token: job.lease_token ?? '',
      lease_expires_at: job.lease_expires_at ?? nowIso(),
      lease_seconds: Math.round(deps.leaseMs / 1000),
      workspace_id: job.workspace_id,
      deployment_id: job.deployment_id,
      deployment_name: request.deployment_name,
      revision_id: job.revision_id,
      graph_config_path: request.graph_config_path,
      install_command: request.install_command,
      build_command: request.build_command,
      image: request.image,
      push,
      build_timeout_seconds: request.build_timeout_seconds ?? null,
      resources: request.resources ?? null,
    };
  }

  /** Given out while the job is claimed only: it is erased when the job ends. */
  function sealedSource(job: BuildJobRecord): SealedSource {
    if (job.status !== 'claimed' || job.source_encrypted === null) throw fail('build_lease_lost', 'The job is over: its source is no longer given out.');
    return JSON.parse(encryptor.decrypt(job.source_encrypted, jobSourceContext(job.id))) as SealedSource;
  }

  /**
   * The newest image of the job's workspace built from the same inputs, other than by the
   * job's own revision. Only images in Berth's registry under the workspace's own name count:
   * Berth removes those only once no revision names them (engine/image-reaper.ts), while an
   * image left on a runner's machine (no BERTH_REGISTRY) is nowhere another runner can use.
   */
  async function reusableImage(job: BuildJobRecord, key: string) {
    const location = deps.registry?.settings.location;
    if (!location) return undefined;
    const candidates = await builtWithKey(db, job.workspace_id, key);
    return candidates.find((candidate) => {
      if (candidate.revision_id === job.revision_id) return false;
      const image = classifyImage(candidate.image_ref, location);
      return (
        image.kind === 'managed' &&
        image.place === 'registry' &&
        image.claims.some((claim) => claim.layout === 'workspace' && claim.workspaceId === job.workspace_id)
      );
    });
  }

  const announce = (job: BuildJobRecord) => bus.publish({ topic: 'build-job', deploymentId: job.deployment_id, jobId: job.id });

  return {
    /** Claims a job for this runner, waiting up to `wait` seconds for one to be queued. */
    async claim(principal: Principal, input: ClaimRequest, signal: AbortSignal): Promise<{ job: RunnerJobView | null }> {
      const { labels: asked, wait = 0, ...unread } = input;
      allFieldsRead(unread);
      const labels = runnerLabels(principal, asked);
      const claimer = { organizationId: principal.organizationId, keyId: principal.keyId, labels };
      const deadline = Date.now() + wait * 1000;
      let wake: () => void = () => {};
      // Subscribed before the first read, so a job queued in between is not missed.
      const unsubscribe = bus.subscribe((message) => {
        if (message.topic === 'build-job') wake();
      });
      const onAbort = () => wake();
      signal.addEventListener('abort', onAbort);
      try {
        for (;;) {
          const woken = new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, Math.max(0, Math.min(CLAIM_RECHECK_MS, deadline - Date.now()))).unref();
          });
          await touchBuildRunner(db, { keyId: principal.keyId, organizationId: principal.organizationId, labels }, nowIso());
          const job = await claimBuildJob(db, claimer, deps.leaseMs, new Date());
          if (job) {
            announce(job);
            return { job: await view(job) };
          }
          if (Date.now() >= deadline || signal.aborted) return { job: null };
          await woken;
        }
      } finally {
        unsubscribe();
        signal.removeEventListener('abort', onAbort);
      }
    },

    async heartbeat(principal: Principal, jobId: string, token: string): Promise<HeartbeatView> {
      const job = await held(principal, jobId, token);
      if (job.status === 'cancelled') return { action: 'cancel', lease_expires_at: job.lease_expires_at ?? nowIso() };
      const extended = await extendBuildJobLease(db, job.id, token, deps.leaseMs, new Date());
      if (!extended) throw fail('build_lease_lost', 'This runner no longer holds the job: stop building it.');
      await touchBuildRunner(db, { keyId: principal.keyId, organizationId: principal.organizationId, labels: principal.runnerLabels ?? [] }, nowIso());
      return { action: extended.status === 'claimed' ? 'continue' : 'cancel', lease_expires_at: extended.lease_expires_at ?? nowIso() };
    },

    /** `baseUrl`: Berth's address as the runner reaches it, for an archive's download URL. */
    async source(principal: Principal, jobId: string, token: string, baseUrl: string): Promise<JobSourceView> {
      const job = await held(principal, jobId, token);
      const source = sealedSource(job);
      if (source.kind === 'archive') {
        const { token: signed, claims } = deps.archiveSigner.sign({
          purpose: ARCHIVE_PURPOSE,
          ttlSeconds: ARCHIVE_URL_SECONDS,
          bound: { job: job.id, claim: String(job.attempts) },
        });
        return {
          kind: 'archive',
          url: `${baseUrl}/v1/runner/jobs/${job.id}/archive?token=${encodeURIComponent(signed)}`,
          expires_at: new Date(claims.exp * 1000).toISOString(),
        };
      }
      const auth = source.auth;
      const credentials: Static<typeof GitJobSource>['credentials'] = !auth
        ? null
        : auth.kind === 'basic'
          ? { kind: 'basic', username: auth.username, password: auth.password }
          : { kind: 'ssh-key', private_key: auth.privateKey, ...(auth.knownHosts ? { known_hosts: auth.knownHosts } : {}) };
      return { kind: 'git', url: source.url, ref: source.ref, credentials };
    },

    /**
     * The uploaded archive of a job, for the URL `source` signed: the token names the job and
     * the claim, and the runner key must be the one holding that claim still.
     */
    async archive(principal: Principal, jobId: string, token: string): Promise<{ stream: Readable; bytes: number }> {
      let claims;
      try {
        claims = deps.archiveSigner.verify(token, { purpose: ARCHIVE_PURPOSE, bound: { job: jobId.toLowerCase() } });
      } catch (error) {
        if (!(error instanceof TokenError)) throw error;
        throw fail('build_archive_url_invalid', `This archive URL is not valid (${error.message}): ask for the job's source again.`);
      }
      const job = await findBuildJob(db, jobId.toLowerCase());
      if (!job || job.organization_id !== principal.organizationId) throw fail('build_job_not_found', `Build job ${jobId} not found.`);
      if (job.runner_key_id !== principal.keyId || String(job.attempts) !== claims.bound.claim) {
        throw fail('build_lease_lost', 'This runner does not hold the job any more (another runner took it): stop building it.');
      }
      const source = sealedSource(job);
      if (source.kind !== 'archive') throw fail('build_archive_url_invalid', 'This job builds from a repository, not from an uploaded archive.');
      const found = await stat(source.path).catch(() => null);
      if (!found?.isFile()) throw fail('upload_url_gone', 'The uploaded archive of this job is no longer there; the revision must be uploaded again.');
      return { stream: createReadStream(source.path), bytes: found.size };
    },

    async logs(principal: Principal, jobId: string, input: LogBatch): Promise<{ stored: boolean }> {
      const { lease_token: token, seq, lines, ...unread } = input;
      allFieldsRead(unread);
      const job = await held(principal, jobId, token);
      if (job.status !== 'claimed') throw fail('build_lease_lost', 'The job is over: no more log lines are taken.');
      const stored = await insertBuildJobLogs(db, job.id, job.attempts, seq, lines, nowIso());
      if (stored) announce(job);
      return { stored };
    },

    /**
     * The build's inputs as the runner worked them out before building (docs/build-runners.md,
     * "Build reuse"). The key is the control plane's: the job's workspace and build settings
     * with what was reported. When an image of that workspace, in Berth's registry, was built
     * from the same inputs, the job ends with it (`reused`) and the engine moves the revision
     * on as a local reuse does; otherwise the inputs are kept for the revision (`build`). The
     * answer names no image: the runner builds nothing either way it could learn from.
     */
    async inputs(principal: Principal, jobId: string, input: RunnerInputsReport): Promise<RunnerInputsAnswer> {
      const { lease_token: token, inputs: reported, env, ...unread } = input;
      allFieldsRead(unread);
      const job = await held(principal, jobId, token);
      if (job.status !== 'claimed') throw fail('build_lease_lost', 'The job is over: its inputs are not wanted any more.');
      const request = job.request as { install_command: string | null; build_command: string | null };
      const inputs = runnerBuildInputs(reported, {
        sourceKind: sealedSource(job).kind,
        install_command: request.install_command,
        build_command: request.build_command,
      });
      if (!inputs) {
        throw fail(
          'bad_request',
          "The inputs name another kind of source than the job's: a repository's are `commit:<commit_sha>`, an upload's `archive:sha256:<hex>` with commit_sha null.",
        );
      }
      const key = buildKey(job.workspace_id, inputs);
      const sealedEnv = env && Object.keys(env).length > 0 ? encryptor.encrypt(JSON.stringify(env), jobEnvContext(job.id)) : null;
      const found = await reusableImage(job, key);
      const now = nowIso();
      if (found) {
        const build = { ...inputs, key, reused_from_revision_id: found.revision_id };
        const result = {
          image: found.image_ref,
          digest: null,
          commit_sha: inputs.commit_sha,
          reused: { revision_id: found.revision_id, seq: found.seq, deployment_id: found.deployment_id },
        };
        if (!(await finishBuildJob(db, job.id, token, { status: 'succeeded', result, envEncrypted: sealedEnv, inputs: build }, now))) {
          throw fail('build_lease_lost', 'This runner no longer holds the job.');
        }
        announce(job);
        return { action: 'reused' };
      }
      if (!(await recordBuildJobInputs(db, job.id, token, { ...inputs, key, reused_from_revision_id: null }, sealedEnv, now))) {
        throw fail('build_lease_lost', 'This runner no longer holds the job.');
      }
      announce(job);
      return { action: 'build' };
    },

    async result(principal: Principal, jobId: string, input: RunnerResult): Promise<{ outcome: 'applied' | 'unchanged' }> {
      const { lease_token: token, status, image, digest = null, commit_sha = null, env, message, ...unread } = input;
      allFieldsRead(unread);
      const job = await held(principal, jobId, token);
      // A retried report of what was already taken.
      if (job.status === 'succeeded' || job.status === 'failed') return { outcome: 'unchanged' };
      if (job.status !== 'claimed') throw fail('build_lease_lost', 'The job was cancelled: its outcome is not wanted any more.');
      let outcome: Parameters<typeof finishBuildJob>[3];
      if (status === 'succeeded') {
        const expected = (job.request as { image: string }).image;
        if (image !== expected) throw fail('bad_request', `A succeeded build reports the image it pushed, which must be the job's image '${expected}'.`);
        const sealedEnv = env && Object.keys(env).length > 0 ? encryptor.encrypt(JSON.stringify(env), jobEnvContext(job.id)) : null;
        outcome = { status: 'succeeded', result: { image: expected, digest, commit_sha }, envEncrypted: sealedEnv };
      } else {
        outcome = { status: 'failed', error: message ?? 'the build runner reported a failure without a message.' };
      }
      if (!(await finishBuildJob(db, job.id, token, outcome, nowIso()))) throw fail('build_lease_lost', 'This runner no longer holds the job.');
      announce(job);
      return { outcome: 'applied' };
    },
  };
}
