import type { Generated } from 'kysely';
import type { SourceSpelling } from '../domain/deployment-config.js';
import type { DeploymentStatus } from '../domain/deployment-status.js';
import type { RevisionStatus } from '../domain/revision-status.js';
import type { ApiKeyRole } from '../domain/tenancy.js';

/**
 * Table shapes shared by SQLite and PostgreSQL. Both databases get the same portable
 * column types: ids are UUID text, timestamps are ISO-8601 UTC text (they sort as
 * strings), booleans are 0/1 integers and structured values are JSON text. These are the
 * raw columns: repositories decode them into typed records and encode on write, so no
 * JSON column is read or written outside `store/`.
 */
export interface Database {
  /** One row per change; `changed_fields` and `secret_names` are JSON arrays of names. */
  audit_log: {
    id: string;
    organization_id: string;
    workspace_id: string | null;
    created_at: string;
    actor_type: 'api_key' | 'berth';
    actor_key_id: string | null;
    actor_key_name: string | null;
    actor_role: string | null;
    /** Why Berth acted, on rows of changes it made itself; null on a key's. */
    actor_reason: string | null;
    client_address: string | null;
    request_id: string | null;
    action: string;
    target_type: string;
    target_id: string;
    target_name: string | null;
    outcome: 'success';
    changed_fields: string;
    secret_names: string;
  };
  /** Outbound webhook subscriptions; `events` is a JSON array of event types, `secret` the signing secret encrypted. */
  webhook_subscriptions: {
    id: string;
    workspace_id: string;
    url: string;
    events: string;
    secret_encrypted: string;
    description: string | null;
    created_at: string;
    failing_since: string | null;
    disabled_at: string | null;
    disabled_reason: string | null;
  };
  /** The outbox: one row per event, written in the change's transaction and removed once its deliveries are made; `payload` is JSON. */
  webhook_events: { id: string; workspace_id: string; type: string; payload: string; occurred_at: string };
  /** One event for one subscription; `body` is the exact JSON sent and signed. */
  webhook_deliveries: {
    id: string;
    subscription_id: string;
    event_id: string;
    event_type: string;
    body: string;
    state: 'pending' | 'delivered' | 'failed';
    attempts: number;
    created_at: string;
    next_attempt_at: string | null;
    leased_until: string | null;
    last_status_code: number | null;
    last_error: string | null;
    redelivery_of: string | null;
  };
  webhook_attempts: {
    id: string;
    delivery_id: string;
    number: number;
    started_at: string;
    duration_ms: number;
    status_code: number | null;
    response_excerpt: string | null;
    error: string | null;
  };
  organizations: { id: string; name: string; created_at: string };
  /** `name_key`: the name in the form that makes it unique without regard to case (domain/tenancy.ts). */
  workspaces: { id: string; organization_id: string; name: string; name_key: string | null; created_at: string };
  api_keys: {
    id: string;
    organization_id: string;
    workspace_id: string | null;
    name: string;
    role: ApiKeyRole;
    key_hash: string;
    key_hint: string;
    created_at: string;
    /** Set for `listener` keys: the one listener the key speaks for. */
    listener_id: string | null;
    /** For `deployer` keys: JSON array of the deployment ids the key may act on; null for other roles. */
    deployment_ids: string | null;
    /** For `runner` keys: JSON array of the labels the runner may advertise; null for other roles. */
    runner_labels: string | null;
  };
  /** A build handed to runners (migration 021, docs/build-runners.md). */
  build_jobs: {
    id: string;
    organization_id: string;
    workspace_id: string;
    deployment_id: string;
    revision_id: string;
    /** JSON: the build request without credentials. */
    request: string;
    /** Encrypted JSON of the source's credentials while the job is open; null after. */
    source_encrypted: string | null;
    /** JSON array: labels a runner must have to claim the job. */
    required_labels: string;
    status: 'queued' | 'claimed' | 'succeeded' | 'failed' | 'cancelled';
    lease_token: string | null;
    lease_expires_at: string | null;
    runner_key_id: string | null;
    attempts: number;
    /** When the job stops waiting for a runner (queued) or for its build (BERTH_RUNNER_WAIT_SECONDS, the build timeout). */
    deadline_at: string;
    /** JSON: the built image, for `succeeded`. */
    result: string | null;
    /** Encrypted JSON of langgraph.json's env a runner reported with its image (migration 024), in a column of its own so key rotation covers it. */
    env_encrypted: string | null;
    error: string | null;
    /** The last log batch the engine relayed into the revision's build log (migration 028): claim and seq; (0, -1) before the first. */
    relayed_attempt: number;
    relayed_seq: number;
    /** When an engine took the job's outcome into its revision (migration 029); null while nobody has. */
    answered_at: string | null;
    /** JSON of the RevisionBuild its runner's reported inputs make (migration 030); null until reported. */
    inputs: string | null;
    created_at: string;
    updated_at: string;
  };
  build_job_logs: {
    job_id: string;
    /** The claim (build_jobs.attempts) whose runner sent the batch: each claim numbers its batches from 0. */
    attempt: number;
    seq: number;
    /** JSON array of {level, message}. */
    lines: string;
    created_at: string;
  };
  build_runners: {
    key_id: string;
    organization_id: string;
    labels: string;
    last_seen_at: string;
  };
  /** Labels a runner must advertise to build for a workspace or for deployments on a listener (migration 024). */
  runner_label_requirements: {
    scope: 'workspace' | 'listener';
    scope_id: string;
    organization_id: string;
    /** JSON array. */
    labels: string;
    updated_at: string;
  };
  /** Dashboard sessions: `secret_hash` is the SHA-256 digest of the cookie's secret, never the secret. */
  sessions: {
    id: string;
    secret_hash: string;
    key_id: string;
    organization_id: string;
    csrf_token: string;
    created_at: string;
    expires_at: string;
    revoked_at: string | null;
  };
  deployments: {
    id: string;
    workspace_id: string;
    name: string;
    display_name: string | null;
    source: SourceSpelling;
    /** JSON: SourceConfig. */
    source_config: string;
    deployment_type: string;
    listener_id: string | null;
    /** The code-host integration a code-host deployment builds from (also in source_config). */
    integration_id: string | null;
    image_version: string | null;
    status: DeploymentStatus;
    remote_reconciled: number;
    latest_revision_id: string | null;
    active_revision_id: string | null;
    revision_count: number;
    /** The revision a rollback pinned the deployment to (build on push then makes none), and since when. */
    pinned_revision_id: string | null;
    pinned_at: string | null;
    /** JSON: PreviewSettings of a parent (migration 023). */
    preview_settings: string | null;
    /** Set on previews only: their parent, `pr:<n>` or `branch:<name>`, JSON PreviewOrigin, and their last new commit. */
    parent_deployment_id: string | null;
    preview_key: string | null;
    preview_origin: string | null;
    preview_active_at: string | null;
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
    source: SourceSpelling;
    /** JSON: RevisionConfig. */
    source_revision_config: string;
    resource_spec_id: string | null;
    secret_set_id: string | null;
    status: RevisionStatus;
    status_message: string | null;
    remote_reconciled: number;
    image_ref: string | null;
    /** The built image's id in the local store it was built into (migration 014). */
    image_id: string | null;
    /** The built image's manifest digest in Berth's registry, when it was pushed there. */
    image_digest: string | null;
    runtime_handle: string | null;
    url: string | null;
    /** JSON: BuildInputs; null until the engine worked them out (and for image revisions). */
    build_inputs: string | null;
    /** Digest of the workspace and the build inputs: revisions with the same key can share an image. */
    build_key: string | null;
    /** langgraph.json's `env` as read for this revision (JSON object of names to values), encrypted. */
    config_env_encrypted: string | null;
    created_at: string;
    updated_at: string;
    /** Its deployment's workspace, for the engine's index of work in progress (migration 032); a trigger fills it when an insert leaves it out. */
    workspace_id?: string | null;
  };
  /**
   * Resource specs by content, per deployment: revisions that share one (every PATCH
   * that does not change it) refer to the same row instead of copying it.
   */
  resource_specs: {
    id: string;
    deployment_id: string;
    /** SHA-256 of the spec's canonical JSON. */
    digest: string;
    /** JSON: ResourceSpec. */
    spec: string;
    created_at: string;
  };
  /**
   * Secret sets by content, per deployment, shared by the revisions that use the same
   * secrets. The digest is keyed (HMAC with a key derived from the encryption key), so it
   * tells nothing about the values; sets migrated from before it existed have none.
   */
  secret_sets: {
    id: string;
    deployment_id: string;
    digest: string | null;
    created_at: string;
  };
  secret_set_entries: {
    set_id: string;
    position: number;
    name: string;
    /** AES-256-GCM, bound to the set id and the name. */
    value_encrypted: string;
  };
  codehost_integrations: {
    id: string;
    workspace_id: string;
    provider: 'git' | 'github';
    name: string;
    /** GitHub's installation id; for `git`, a number derived from the integration id. */
    installation_id: number | string;
    /** JSON: the provider's settings without credentials. */
    settings: string;
    /** AES-256-GCM of the JSON credentials, bound to the integration id. */
    credentials_encrypted: string | null;
    created_at: string;
    updated_at: string;
  };
  /** Commit statuses and GitHub deployments to send (migrations 022 and 026, docs/webhooks.md). */
  github_notices: {
    id: string;
    /** `revision`: a revision's status change; `preview_refused`: a pull request refused a preview (docs/previews.md). */
    kind: Generated<'revision' | 'preview_refused'>;
    /** Set for `revision` notices only. */
    revision_id: string | null;
    /** The revision's deployment, or the parent that refused a preview. */
    deployment_id: string;
    /** The commit a `preview_refused` notice is posted on (a revision's is read from the revision). */
    commit_sha: string | null;
    /** Order among the notices of one status change (a move through several statuses). */
    position: number;
    /** Set for `revision` notices only; a refusal's reason is its `message`. */
    status: RevisionStatus | null;
    message: string | null;
    created_at: string;
    state: 'pending' | 'sent' | 'dropped' | 'failed';
    /** Bits of the calls that succeeded: 1 the GitHub deployment's status, 2 the commit status. */
    steps_done: number;
    attempts: number;
    next_attempt_at: string | null;
    leased_until: string | null;
    last_error: string | null;
  };
  /** The GitHub deployment made for a revision (its id as GitHub gave it). */
  github_deployments: { revision_id: string; github_deployment_id: string; created_at: string };
  /** What the git poller last saw of each branch, to start builds only on change. */
  codehost_branch_heads: {
    integration_id: string;
    repository: string;
    branch: string;
    commit_sha: string;
    seen_at: string;
  };
  /** Push deliveries acted on, so a redelivered push builds nothing twice. */
  codehost_deliveries: {
    integration_id: string;
    delivery_id: string;
    received_at: string;
  };
  /** A built image whose revision is gone, to be removed from where Berth put it (migration 014). */
  image_removals: {
    image_ref: string;
    workspace_id: string;
    deployment_id: string;
    /** The image's id in the local store: only an image with this id is removed under `image_ref`. */
    image_id: string | null;
    /** Its manifest digest in Berth's registry: only a tag naming this digest is removed there. */
    image_digest: string | null;
    attempts: number;
    next_attempt_at: string;
    last_error: string | null;
    created_at: string;
  };
  /** A pending uploaded archive (see migration 010): `bytes` reserved while `stored` is 0, its size once 1. */
  upload_archives: {
    object_path: string;
    deployment_id: string;
    workspace_id: string;
    /** PostgreSQL answers bigint as text. */
    bytes: number | string;
    stored: number;
    updated_at: string;
  };
  /** A database or cache provisioned for a deployment. */
  deployment_resources: {
    deployment_id: string;
    kind: 'postgres' | 'redis';
    /** AES-256-GCM of the URI the deployment's containers get, bound to the deployment and kind. */
    uri_encrypted: string;
    created_at: string;
    /** JSON: the random names (PostgresNames or RedisNames); null for rows of earlier versions, named after the deployment id. */
    names: string | null;
    /** 0 while the names are chosen but the server may not have them yet. */
    ready: number;
  };
  listeners: {
    id: string;
    workspace_id: string;
    compute_type: 'k8s' | 'docker' | 'podman';
    compute_id: string;
    /** JSON: ComputeConfig. */
    compute_config: string;
    version: string | null;
    created_at: string;
    updated_at: string;
    /** Grows with every change of the listener's desired state (the protocol's cursor). */
    generation: number;
    /** When the listener's agent last called Berth. */
    last_seen_at: string | null;
    /** When its going offline was last announced to webhooks (listener.offline). */
    offline_announced_at: string | null;
  };
  /** Status changes and log lines of a deployment's revisions, in one ordered stream. */
  deployment_events: {
    id: Generated<number>;
    deployment_id: string;
    revision_id: string | null;
    kind: 'status' | 'log' | 'push_ignored_pinned';
    log_type: 'build' | 'deploy' | null;
    level: string | null;
    status: RevisionStatus | null;
    message: string | null;
    /** For `push_ignored_pinned`: the commit the push named. */
    commit_sha: string | null;
    created_at: string;
  };
  /** When each workspace last got an engine slot (fair claims, store/repositories/leases.ts). */
  engine_turns: { workspace_id: string; turn_at: string };
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
  /** Idempotency keys of POST requests (migration 012); `response_encrypted` is null while the first request runs. */
  idempotency_keys: {
    id: string;
    /** The workspace id, or the organization id for organization-wide routes. */
    scope: string;
    key: string;
    /** AES-256-GCM of the request's fingerprint (SHA-256 of what makes it the same request). */
    fingerprint_encrypted: string;
    /** AES-256-GCM of the stored answer (status, content type, body). */
    response_encrypted: string | null;
    locked_until: string;
    created_at: string;
    expires_at: string;
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

/** Some columns of a table's row with plain values: what an UPDATE sets. */
export type ColumnChanges<Table extends keyof Database> = { [Column in keyof Database[Table]]?: Database[Table][Column] };
