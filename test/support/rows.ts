import { randomUUID } from 'node:crypto';
import type { DeploymentRow } from '../../src/store/repositories/deployments.js';
import type { RevisionRow } from '../../src/store/repositories/revisions.js';

/** A deployment row for tests that write the store directly; override what the test is about. */
export function deploymentRow(workspaceId: string, overrides: Partial<DeploymentRow> = {}): DeploymentRow {
  const id = overrides.id ?? randomUUID();
  const now = new Date().toISOString();
  return {
    id,
    workspace_id: workspaceId,
    name: `dep-${id.slice(0, 8)}`,
    display_name: null,
    source: 'external_docker',
    source_config: '{}',
    deployment_type: 'prod',
    listener_id: null,
    image_version: null,
    status: 'READY',
    remote_reconciled: 0,
    latest_revision_id: null,
    active_revision_id: null,
    revision_count: 0,
    lease_owner: null,
    lease_expires_at: null,
    url: null,
    created_at: now,
    updated_at: now,
    ...overrides,
  };
}

/** A finished revision row of a deployment; override what the test is about. */
export function revisionRow(deploymentId: string, seq: number, overrides: Partial<RevisionRow> = {}): RevisionRow {
  const now = new Date().toISOString();
  return {
    id: randomUUID(),
    deployment_id: deploymentId,
    seq,
    source: 'external_docker',
    source_revision_config: '{}',
    resource_spec: null,
    status: 'DEPLOYED',
    status_message: null,
    remote_reconciled: 0,
    image_ref: null,
    runtime_handle: null,
    url: null,
    created_at: now,
    updated_at: now,
    ...overrides,
  };
}
