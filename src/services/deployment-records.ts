import { LRUCache } from 'lru-cache';
import type { ResourceSpec, RevisionConfig, SourceConfig } from '../domain/deployment-config.js';
import type { DeploymentStatus } from '../domain/deployment-status.js';
import type { RevisionStatus } from '../domain/revision-status.js';
import { canonicalSource } from '../domain/deployment-config.js';
import type { DeploymentState } from '../domain/patch.js';
import type { Secret } from '../domain/secrets.js';
import type { Encryptor } from '../security/encryption.js';
import type { Executor } from '../store/database.js';
import type { DeploymentRow, DeploymentWithLatest } from '../store/repositories/deployments.js';
import * as revisions from '../store/repositories/revisions.js';
import type { RevisionRow, RevisionSecretRow } from '../store/repositories/revisions.js';

/** `source_revision_config` as answered: both spellings of the config path (real-clients.md 1.1). */
export type RevisionConfigView = RevisionConfig & { langgraph_config_path: string | null };

export interface DeploymentView {
  id: string;
  tenant_id: string;
  name: string;
  display_name: string | null;
  source: string;
  source_config: SourceConfig & { resource_spec: ResourceSpec | null };
  source_revision_config: RevisionConfigView;
  secrets: Secret[];
  status: DeploymentStatus;
  latest_revision_id: string | null;
  active_revision_id: string | null;
  image_version: string | null;
  url: string | null;
  remote_reconciled: boolean;
  created_at: string;
  updated_at: string;
}

export interface RevisionView {
  id: string;
  deployment_id: string;
  revision_number: number;
  status: RevisionStatus;
  status_message: string | null;
  source: string;
  source_revision_config: RevisionConfigView;
  resource_spec: ResourceSpec | null;
  url: string | null;
  remote_reconciled: boolean;
  created_at: string;
  updated_at: string;
}

export const secretContext = (revisionId: string, name: string) => `revision_secret:${revisionId}:${name}`;

export function encryptSecrets(encryptor: Encryptor, revisionId: string, secrets: Secret[]): RevisionSecretRow[] {
  return secrets.map((secret, position) => ({
    revision_id: revisionId,
    position,
    name: secret.name,
    value_encrypted: encryptor.encrypt(secret.value, secretContext(revisionId, secret.name)),
  }));
}

function decryptSecrets(encryptor: Encryptor, rows: RevisionSecretRow[]): Secret[] {
  return rows.map((row) => ({ name: row.name, value: encryptor.decrypt(row.value_encrypted, secretContext(row.revision_id, row.name)) }));
}

/** A revision's secrets straight from the database (the engine, which needs them once per step). */
export async function revisionSecrets(db: Executor, encryptor: Encryptor, revisionId: string): Promise<Secret[]> {
  return decryptSecrets(encryptor, await revisions.secretsOfRevisions(db, [revisionId]));
}

export function revisionConfigView(config: RevisionConfig): RevisionConfigView {
  return { ...config, langgraph_config_path: config.graph_config_path };
}

export function revisionView(row: RevisionRow): RevisionView {
  return {
    id: row.id,
    deployment_id: row.deployment_id,
    revision_number: row.seq,
    status: row.status as RevisionStatus,
    status_message: row.status_message,
    source: row.source,
    source_revision_config: revisionConfigView(JSON.parse(row.source_revision_config) as RevisionConfig),
    resource_spec: row.resource_spec === null ? null : (JSON.parse(row.resource_spec) as ResourceSpec),
    url: row.url,
    remote_reconciled: row.remote_reconciled === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Revisions whose decrypted secrets are kept in memory. A revision's secrets never change
 * once written (a change of secrets is a new revision), so an entry cannot go stale, on
 * this server or on another; without it every read of a deployment decrypted its secrets
 * and read them in a query of their own (bench/results.md).
 */
const CACHED_REVISION_SECRETS = 10_000;

/**
 * And at most this many characters of secret names and values in all: a client may store
 * secrets of up to a request body each, and the count alone would not bound the memory.
 */
const CACHED_SECRET_CHARACTERS = 8 * 1024 * 1024;

/** Characters held for a revision's secrets, plus a little for each entry so that empty ones count. */
function cachedSize(secrets: Secret[]): number {
  return secrets.reduce((size, secret) => size + secret.name.length + secret.value.length, 64);
}

/** Shared by every answer that shows them: a change by mistake throws instead of leaking into the next. */
function frozen(secrets: Secret[]): Secret[] {
  return Object.freeze(secrets.map((secret) => Object.freeze({ ...secret }))) as Secret[];
}

/** Deployments as the API shows them and the domain rules see them, with their secrets. */
export class DeploymentRecords {
  readonly #encryptor: Encryptor;
  readonly #secrets: LRUCache<string, Secret[]>;

  constructor(encryptor: Encryptor, cacheCharacters = CACHED_SECRET_CHARACTERS) {
    this.#encryptor = encryptor;
    // An entry larger than the whole cache is simply not kept (lru-cache skips it).
    this.#secrets = new LRUCache({ max: CACHED_REVISION_SECRETS, maxSize: cacheCharacters, sizeCalculation: cachedSize });
  }

  /** What the cache holds, for tests: revisions and characters. */
  cacheUsage(): { revisions: number; characters: number } {
    return { revisions: this.#secrets.size, characters: this.#secrets.calculatedSize };
  }

  /** The rows to store for a new revision's secrets. */
  encryptSecrets(revisionId: string, secrets: Secret[]): RevisionSecretRow[] {
    this.#secrets.set(revisionId, frozen(secrets));
    return encryptSecrets(this.#encryptor, revisionId, secrets);
  }

  async secretsOf(db: Executor, revisionIds: string[]): Promise<Map<string, Secret[]>> {
    const found = new Map<string, Secret[]>();
    const missing: string[] = [];
    for (const id of revisionIds) {
      const cached = this.#secrets.get(id);
      if (cached) found.set(id, cached);
      else missing.push(id);
    }
    if (missing.length === 0) return found;
    const rows = await revisions.secretsOfRevisions(db, missing);
    for (const id of missing) {
      const secrets = frozen(decryptSecrets(this.#encryptor, rows.filter((row) => row.revision_id === id)));
      this.#secrets.set(id, secrets);
      found.set(id, secrets);
    }
    return found;
  }

  async views(db: Executor, entries: DeploymentWithLatest[]): Promise<DeploymentView[]> {
    const secrets = await this.secretsOf(db, entries.flatMap((entry) => (entry.latest ? [entry.latest.id] : [])));
    return entries.map(({ deployment, latest }) => deploymentView(deployment, latest, (latest && secrets.get(latest.id)) ?? []));
  }

  async view(db: Executor, entry: DeploymentWithLatest): Promise<DeploymentView> {
    const [view] = await this.views(db, [entry]);
    return view as DeploymentView;
  }

  /** For a deployment row read without its latest revision (a locked row, say). */
  async withLatest(db: Executor, deployment: DeploymentRow): Promise<DeploymentWithLatest> {
    const [latest] = deployment.latest_revision_id ? await revisions.findRevisionsByIds(db, [deployment.latest_revision_id]) : [];
    return { deployment, latest };
  }

  /** The deployment as the domain rules see it: settings plus its latest revision. */
  async state(db: Executor, entry: DeploymentWithLatest): Promise<DeploymentState> {
    const view = await this.view(db, entry);
    const { resource_spec, ...sourceConfig } = view.source_config;
    const { langgraph_config_path: _alias, ...revisionConfig } = view.source_revision_config;
    return {
      name: entry.deployment.name,
      source: canonicalSource(entry.deployment.source),
      sourceConfig,
      revisionConfig,
      resourceSpec: resource_spec ?? {},
      secrets: view.secrets,
    };
  }
}

export function deploymentView(row: DeploymentRow, revision: RevisionRow | undefined, secrets: Secret[]): DeploymentView {
  const revisionConfig: RevisionConfig = revision
    ? (JSON.parse(revision.source_revision_config) as RevisionConfig)
    : { repo_ref: null, graph_config_path: null, image_uri: null, repo_commit_sha: null, tracked_packages: null };
  return {
    id: row.id,
    tenant_id: row.workspace_id,
    name: row.name,
    display_name: row.display_name,
    source: row.source,
    source_config: {
      ...(JSON.parse(row.source_config) as SourceConfig),
      resource_spec: revision?.resource_spec ? (JSON.parse(revision.resource_spec) as ResourceSpec) : null,
    },
    source_revision_config: revisionConfigView(revisionConfig),
    secrets,
    status: row.status as DeploymentStatus,
    latest_revision_id: row.latest_revision_id,
    active_revision_id: row.active_revision_id,
    image_version: row.image_version,
    url: row.url,
    remote_reconciled: row.remote_reconciled === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
