import type { Generated } from 'kysely';


/**
 * Table shapes shared by SQLite and PostgreSQL. Both databases get the same portable
 * column types: ids are UUID text, timestamps are ISO-8601 UTC text (they sort as
 * strings), booleans are 0/1 integers and structured values are JSON text. The
 * repositories convert to and from domain values.
 */
export interface Database {
  organizations: { id: string; name: string; created_at: string };
  workspaces: { id: string; organization_id: string; name: string; created_at: string };
  api_keys: {
    id: string;
    organization_id: string;
    workspace_id: string | null;
    name: string;
    role: string;
    key_hash: string;
    key_hint: string;
    created_at: string;
  };
  deployments: {
    id: string;
    workspace_id: string;
    name: string;
    display_name: string | null;
    source: string;
    source_config: string;
    deployment_type: string;
    listener_id: string | null;
    image_version: string | null;
    status: string;
    remote_reconciled: number;
    latest_revision_id: string | null;
    active_revision_id: string | null;
    revision_count: number;
    lease_owner: string | null;
    lease_expires_at: string | null;
    url: string | null;
    created_at: string;
    updated_at: string;
  };
  revisions: {
    id: string;
    deployment_id: string;
    seq: number;
    source: string;
    source_revision_config: string;
    resource_spec: string | null;
    status: string;
    status_message: string | null;
    remote_reconciled: number;
    image_ref: string | null;
    runtime_handle: string | null;
    url: string | null;
    created_at: string;
    updated_at: string;
  };
  revision_secrets: {
    revision_id: string;
    position: number;
    name: string;
    value_encrypted: string;
  };
  listeners: {
    id: string;
    workspace_id: string;
    compute_type: string;
    compute_id: string;
    compute_config: string;
    version: string | null;
    created_at: string;
    updated_at: string;
  };
  /** Status changes and log lines of a deployment's revisions, in one ordered stream. */
  deployment_events: {
    id: Generated<number>;
    deployment_id: string;
    revision_id: string | null;
    kind: 'status' | 'log';
    log_type: 'build' | 'deploy' | null;
    level: string | null;
    status: string | null;
    message: string | null;
    created_at: string;
  };
  /** One row per engine step execution: who ran what, when, with which outcome. */
  engine_step_runs: {
    id: Generated<number>;
    revision_id: string;
    step: string;
    worker: string;
    started_at: string;
    finished_at: string | null;
    outcome: string | null;
  };
  oauth_providers: {
    id: string;
    organization_id: string;
    provider_id: string;
    name: string;
    client_id: string;
    client_secret_encrypted: string;
    auth_url: string;
    token_url: string;
    uses_pkce: number;
    code_challenge_method: string | null;
    provider_type: string | null;
    created_at: string;
    updated_at: string;
  };
}

