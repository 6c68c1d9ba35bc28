import type { ResourceSpec, RevisionConfig, SourceConfig } from '../domain/deployment-config.js';
import type { DeploymentStatus } from '../domain/deployment-status.js';
import type { RevisionStatus } from '../domain/revision-status.js';
import { canonicalSource } from '../domain/deployment-config.js';
import type { DeploymentState } from '../domain/patch.js';
import type { Secret } from '../domain/secrets.js';
import type { Encryptor } from '../security/encryption.js';
import type { Executor } from '../store/database.js';
import type { DeploymentRow } from '../store/repositories/deployments.js';
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
 * Deployment views for rows, with their latest revisions and secrets read in two batched
 * queries whatever the number of rows (list pages stay at three queries).
 */
export async function deploymentViews(db: Executor, encryptor: Encryptor, rows: DeploymentRow[]): Promise<DeploymentView[]> {
  const latestIds = rows.map((r) => r.latest_revision_id).filter((id): id is string => id !== null);
  const [latest, secretRows] = await Promise.all([revisions.findRevisionsByIds(db, latestIds), revisions.secretsOfRevisions(db, latestIds)]);
  const revisionById = new Map(latest.map((r) => [r.id, r]));
  const secretsByRevision = new Map<string, RevisionSecretRow[]>();
  for (const row of secretRows) secretsByRevision.set(row.revision_id, [...(secretsByRevision.get(row.revision_id) ?? []), row]);
  return rows.map((row) => {
    const revision = row.latest_revision_id ? revisionById.get(row.latest_revision_id) : undefined;
    const secrets = row.latest_revision_id ? (secretsByRevision.get(row.latest_revision_id) ?? []) : [];
    return deploymentView(row, revision, decryptSecrets(encryptor, secrets));
  });
}

function deploymentView(row: DeploymentRow, revision: RevisionRow | undefined, secrets: Secret[]): DeploymentView {
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

/** The deployment as the domain rules see it: settings plus its latest revision. */
export async function deploymentState(db: Executor, encryptor: Encryptor, row: DeploymentRow): Promise<DeploymentState> {
  const [view] = await deploymentViews(db, encryptor, [row]);
  if (!view) throw new Error('deployment view missing');
  const { resource_spec, ...sourceConfig } = view.source_config;
  const { langgraph_config_path: _alias, ...revisionConfig } = view.source_revision_config;
  return {
    name: row.name,
    source: canonicalSource(row.source),
    sourceConfig,
    revisionConfig,
    resourceSpec: resource_spec ?? {},
    secrets: view.secrets,
  };
}
