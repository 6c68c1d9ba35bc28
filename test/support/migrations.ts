import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Migrator } from 'kysely';
import { type Db, openDatabase } from '../../src/store/database.js';
import { migrationProvider } from '../../src/store/migrations/index.js';
import { createPostgresDatabase, type DatabaseKind } from './server.js';

/** A database migrated up to (and including) `last`, as an earlier version of Berth left it. */
export async function databaseAt(kind: DatabaseKind, last: string): Promise<{ db: Db; close: () => Promise<void> }> {
  let db: Db;
  let drop: () => Promise<void>;
  if (kind === 'postgres') {
    const postgres = await createPostgresDatabase();
    db = openDatabase({ kind: 'postgres', url: postgres.url });
    drop = postgres.drop;
  } else {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-migration-'));
    db = openDatabase({ kind: 'sqlite', file: path.join(dir, 'berth.sqlite') });
    drop = async () => fs.rmSync(dir, { recursive: true, force: true });
  }
  const { error } = await new Migrator({ db, provider: migrationProvider }).migrateTo(last);
  if (error) throw error;
  return {
    db,
    close: async () => {
      await db.destroy();
      await drop();
    },
  };
}

/** A `build_jobs` row as migration 021 made it (columns of later migrations go in `more`), for migration tests to insert before migrating on. */
export function buildJobRow(id: string, revisionId: string, status: string, at: string, more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    organization_id: 'org',
    workspace_id: 'ws',
    deployment_id: 'dep',
    revision_id: revisionId,
    request: '{}',
    source_encrypted: null,
    required_labels: '[]',
    status,
    lease_token: null,
    lease_expires_at: null,
    runner_key_id: 'key',
    attempts: 1,
    deadline_at: at,
    result: null,
    env_encrypted: null,
    error: null,
    created_at: at,
    updated_at: at,
    ...more,
  };
}

/**
 * A pending `github_notices` row as migration 026 made it: a revision's status notice, or with
 * `revision` null a preview refusal of `commit` (columns the caller names in `more` win).
 */
export function githubNoticeRow(
  id: string,
  revision: string | null,
  position: number,
  createdAt: string,
  more: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id,
    kind: revision === null ? 'preview_refused' : 'revision',
    revision_id: revision,
    deployment_id: 'dep',
    commit_sha: revision === null ? 'a'.repeat(40) : null,
    position,
    status: revision === null ? null : 'BUILDING',
    message: `${id}.`,
    created_at: createdAt,
    state: 'pending',
    steps_done: 0,
    attempts: 0,
    next_attempt_at: createdAt,
    leased_until: null,
    last_error: null,
    ...more,
  };
}
