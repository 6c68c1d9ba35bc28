import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { DeploymentView, RevisionConfigView, RevisionView } from '../contract/deployments.js';
import { canonicalSource, type RevisionConfig } from '../domain/deployment-config.js';
import type { DeploymentState } from '../domain/patch.js';
import { DEFAULT_PREVIEW_SETTINGS } from '../domain/previews.js';
import type { Secret } from '../domain/secrets.js';
import type { Encryptor } from '../security/encryption.js';
import { decryptSecretSet, encryptSecretSet, secretSetDigest } from '../security/secret-sets.js';
import type { Executor } from '../store/database.js';
import type { DeploymentForView, DeploymentRecord, DeploymentWithLatest, LatestForView } from '../store/repositories/deployments.js';
import { buildOfImage, findRevisionById, type RevisionRecord, setRevisionBuild } from '../store/repositories/revisions.js';
import { decryptConfigEnv, encryptConfigEnv } from '../security/config-env.js';
import { findSecretSetByDigest, insertSecretSet, secretEntries } from '../store/repositories/secret-sets.js';

export function revisionConfigView(config: RevisionConfig): RevisionConfigView {
  // Revisions stored before uploads existed have no source_tarball_path.
  return { ...config, source_tarball_path: config.source_tarball_path ?? null, langgraph_config_path: config.graph_config_path };
}

export function revisionView(revision: RevisionRecord): RevisionView {
  return {
    id: revision.id,
    deployment_id: revision.deployment_id,
    revision_number: revision.seq,
    status: revision.status,
    status_message: revision.status_message,
    source: revision.source,
    source_revision_config: revisionConfigView(revision.source_revision_config),
    resource_spec: revision.resource_spec,
    url: revision.url,
    remote_reconciled: revision.remote_reconciled,
    build_inputs: revision.build,
    created_at: revision.created_at,
    updated_at: revision.updated_at,
  };
}

/**
 * Secret sets whose decrypted contents are kept in memory. A set never changes once
 * written (other secrets make another set), so an entry cannot go stale, on this server
 * or on another; without it every read of a deployment decrypted its secrets and read
 * them in a query of their own (bench/results.md).
 */
const CACHED_SECRET_SETS = 10_000;

/**
 * And at most this many characters of secret names and values in all: a client may store
 * secrets of up to a request body each, and the count alone would not bound the memory.
 */
const CACHED_SECRET_CHARACTERS = 8 * 1024 * 1024;

/** Characters held for a set, plus a little for each entry so that empty ones count. */
function cachedSize(secrets: Secret[]): number {
  return secrets.reduce((size, secret) => size + secret.name.length + secret.value.length, 64);
}

/** Shared by every answer that shows them: a change by mistake throws instead of leaking into the next. */
function frozen(secrets: readonly Secret[]): Secret[] {
  return Object.freeze(secrets.map((secret) => Object.freeze({ ...secret }))) as Secret[];
}

const NO_SECRETS: Secret[] = frozen([]);

/** Deployments as the API shows them and the domain rules see them, with their secrets. */
export function createDeploymentRecords(encryptor: Encryptor, cacheCharacters = CACHED_SECRET_CHARACTERS) {
  // An entry larger than the whole cache is simply not kept (lru-cache skips it).
  const cache = new LRUCache<string, Secret[]>({ max: CACHED_SECRET_SETS, maxSize: cacheCharacters, sizeCalculation: cachedSize });

  /** The secrets of each set, decrypted (from the cache where possible). */
  async function secretsOf(db: Executor, setIds: readonly (string | null)[]): Promise<Map<string, Secret[]>> {
    const found = new Map<string, Secret[]>();
    const missing: string[] = [];
    for (const id of setIds) {
      if (id === null || found.has(id)) continue;
      const cached = cache.get(id);
      if (cached) found.set(id, cached);
      else missing.push(id);
    }
    if (missing.length === 0) return found;
    const entries = await secretEntries(db, missing);
    for (const id of missing) {
      const secrets = frozen(
        decryptSecretSet(
          encryptor,
          entries.filter((entry) => entry.set_id === id),
        ),
      );
      cache.set(id, secrets);
      found.set(id, secrets);
    }
    return found;
  }

  async function secretsOfRevision(db: Executor, revision: RevisionRecord | undefined): Promise<Secret[]> {
    if (!revision?.secret_set_id) return NO_SECRETS;
    return (await secretsOf(db, [revision.secret_set_id])).get(revision.secret_set_id) ?? NO_SECRETS;
  }

  async function views(db: Executor, entries: readonly DeploymentForView[]): Promise<DeploymentView[]> {
    const secrets = await secretsOf(
      db,
      entries.map((entry) => entry.latest?.secret_set_id ?? null),
    );
    return entries.map(({ deployment, latest }) =>
      deploymentView(deployment, latest, (latest?.secret_set_id && secrets.get(latest.secret_set_id)) || NO_SECRETS),
    );
  }

  return {
    /** What the cache holds, for tests: secret sets and characters. */
    cacheUsage(): { sets: number; characters: number } {
      return { sets: cache.size, characters: cache.calculatedSize };
    },

    /**
     * The id of the deployment's stored set with exactly these secrets, stored now (encrypted)
     * if it is new; null for no secrets. Revisions that keep their secrets share the set. A
     * deployment inserted in the same transaction has no set yet: nothing is looked up.
     */
    async storeSecrets(
      trx: Executor,
      deploymentId: string,
      secrets: readonly Secret[],
      now: string,
      { deploymentIsNew = false }: { deploymentIsNew?: boolean } = {},
    ): Promise<string | null> {
      if (secrets.length === 0) return null;
      const digest = secretSetDigest(encryptor, secrets);
      const existing = deploymentIsNew ? undefined : await findSecretSetByDigest(trx, deploymentId, digest);
      if (existing) return existing;
      const id = randomUUID();
      await insertSecretSet(trx, { id, deployment_id: deploymentId, digest, created_at: now }, encryptSecretSet(encryptor, id, secrets));
      cache.set(id, frozen(secrets));
      return id;
    },

    /**
     * A revision that runs an image built before (a redeploy, or an upload deployment's new
     * secrets) carries the build inputs and langgraph.json env of the revision it took the
     * image from: the env reaches its container as it reached the first one's.
     */
    async inheritBuild(trx: Executor, revision: RevisionRecord): Promise<void> {
      if (!revision.image_ref) return;
      const from = await buildOfImage(trx, revision.deployment_id, revision.image_ref, revision.id);
      if (!from || (from.build === null && from.config_env_encrypted === null)) return;
      const { build } = from;
      if (build) build.reused_from_revision_id ??= from.id;
      revision.build = build;
      const env = decryptConfigEnv(encryptor, from.id, from.config_env_encrypted);
      await setRevisionBuild(trx, revision.id, {
        build,
        build_key: from.build_key,
        config_env_encrypted: encryptConfigEnv(encryptor, revision.id, env),
      });
    },

    secretsOf,
    secretsOfRevision,
    views,

    async view(db: Executor, entry: DeploymentForView): Promise<DeploymentView> {
      const [view] = await views(db, [entry]);
      return view as DeploymentView;
    },

    /** For a deployment read without its latest revision (a locked row, say). */
    async withLatest(db: Executor, deployment: DeploymentRecord): Promise<DeploymentWithLatest> {
      const latest = deployment.latest_revision_id ? await findRevisionById(db, deployment.latest_revision_id) : undefined;
      return { deployment, latest };
    },

    /** The deployment as the domain rules see it: settings plus its latest revision. */
    async state(db: Executor, { deployment, latest }: DeploymentWithLatest): Promise<DeploymentState> {
      return {
        name: deployment.name,
        source: canonicalSource(deployment.source),
        sourceConfig: deployment.source_config,
        revisionConfig: latest?.source_revision_config ?? emptyRevisionConfig(),
        resourceSpec: latest?.resource_spec ?? {},
        secrets: await secretsOfRevision(db, latest),
        latestImage: latest?.image_ref ?? null,
      };
    },
  };
}

export type DeploymentRecords = ReturnType<typeof createDeploymentRecords>;

function emptyRevisionConfig(): RevisionConfig {
  return { repo_ref: null, graph_config_path: null, image_uri: null, repo_commit_sha: null, tracked_packages: null, source_tarball_path: null };
}

export function deploymentView(deployment: DeploymentRecord, revision: LatestForView | undefined, secrets: Secret[]): DeploymentView {
  return {
    id: deployment.id,
    tenant_id: deployment.workspace_id,
    name: deployment.name,
    display_name: deployment.display_name,
    source: deployment.source,
    source_config: { ...deployment.source_config, resource_spec: revision?.resource_spec ?? null },
    source_revision_config: revisionConfigView(revision?.source_revision_config ?? emptyRevisionConfig()),
    secrets,
    status: deployment.status,
    latest_revision_id: deployment.latest_revision_id,
    active_revision_id: deployment.active_revision_id,
    pinned_revision_id: deployment.pinned_revision_id,
    pinned_at: deployment.pinned_at,
    image_version: deployment.image_version,
    url: deployment.url,
    remote_reconciled: deployment.remote_reconciled,
    previews: deployment.preview_settings ?? DEFAULT_PREVIEW_SETTINGS,
    parent_deployment_id: deployment.parent_deployment_id,
    preview: previewOriginView(deployment),
    created_at: deployment.created_at,
    updated_at: deployment.updated_at,
  };
}

function previewOriginView({ preview_origin: origin, preview_active_at: activeAt, created_at }: DeploymentRecord): DeploymentView['preview'] {
  if (!origin) return null;
  return {
    kind: origin.kind,
    pull_request_number: origin.kind === 'pull_request' ? origin.number : null,
    branch: origin.kind === 'pull_request' ? origin.head_ref : origin.branch,
    head_sha: origin.head_sha,
    fork: origin.kind === 'pull_request' && origin.fork,
    last_activity_at: activeAt ?? created_at,
  };
}
