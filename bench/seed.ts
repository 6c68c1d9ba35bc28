/**
 * Fills the bootstrap workspace with deployments straight through the store layer, in
 * bulk: each deployment with its first revision (finished: DEPLOYED or DEPLOY_FAILED, so
 * the engine has nothing to do), its secrets encrypted exactly as the API encrypts them,
 * and the revision's final status event. Run with the server stopped, with the same
 * environment as the server (DATABASE_URL or BERTH_DATA_DIR, BERTH_ENCRYPTION_KEY,
 * BERTH_BOOTSTRAP_API_KEY):
 *
 *   node --import tsx bench/seed.ts --deployments 100000
 *
 * With `--queued N` instead, N deployments whose first revision waits for the engine, in a
 * new organization of their own; this may run while the server does (the backlog scenario).
 *
 * Prints one JSON line: the workspace, how many were inserted, how long it took and a
 * sample of deployment ids spread over the whole set.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { completeResourceSpec, completeRevisionConfig, newSourceConfig } from '../src/domain/deployment-config.js';
import { loadEncryptionKey, Encryptor } from '../src/security/encryption.js';
import { canonicalJson } from '../src/domain/canonical-json.js';
import { encryptSecretSet, secretSetDigest } from '../src/security/secret-sets.js';
import { createTenancyService } from '../src/services/tenancy.js';
import { openDatabase, type Db } from '../src/store/database.js';
import type { Database } from '../src/store/schema.js';

export const TEAMS = [
  'billing',
  'search',
  'support',
  'growth',
  'payments',
  'infra',
  'ml',
  'data',
  'mobile',
  'web',
  'security',
  'ops',
  'sales',
  'marketing',
  'finance',
  'legal',
  'people',
  'platform',
  'identity',
  'catalog',
];
const WORDS = ['agent', 'assistant', 'router', 'planner', 'summarizer', 'classifier', 'retriever', 'triage', 'copilot', 'reviewer'];

/** Rows per INSERT statement (below both databases' bound-parameter limits) and per transaction. */
const ROWS_PER_STATEMENT = 500;
const ROWS_PER_TRANSACTION = 5000;

export interface SeedResult {
  workspaceId: string;
  seeded: number;
  ms: number;
  sampleIds: string[];
}

export function seededName(i: number): string {
  return `${TEAMS[i % TEAMS.length]}-${WORDS[Math.floor(i / TEAMS.length) % WORDS.length]}-${String(i).padStart(6, '0')}`;
}

/**
 * `queued`: each deployment is as a create leaves it, its first revision CREATING and not
 * yet picked up (no status event), named apart so that it can share a workspace with a
 * finished seeding: a backlog for the engine to drain.
 */
export async function seed(db: Db, encryptor: Encryptor, workspaceId: string, count: number, samples = 5000, queued = false): Promise<SeedResult> {
  const started = performance.now();
  const sourceConfig = JSON.stringify(newSourceConfig('external_docker', {}));
  const specText = canonicalJson(completeResourceSpec({ cpu: 0.5, memory_mb: 512 }));
  const specDigest = createHash('sha256').update(specText).digest('hex');
  const yearMs = 365 * 24 * 3600_000;
  const firstAt = Date.now() - yearMs;
  const step = yearMs / count;
  const sampleEvery = Math.max(1, Math.floor(count / samples));
  const sampleIds: string[] = [];

  for (let from = 0; from < count; from += ROWS_PER_TRANSACTION) {
    const to = Math.min(count, from + ROWS_PER_TRANSACTION);
    const deployments: Database['deployments'][] = [];
    const revisions: Database['revisions'][] = [];
    const specs: Database['resource_specs'][] = [];
    const sets: Database['secret_sets'][] = [];
    const secrets: Database['secret_set_entries'][] = [];
    const events: Database['deployment_events'][] = [];
    for (let i = from; i < to; i++) {
      const name = queued ? `queued-${seededName(i)}` : seededName(i);
      const team = TEAMS[i % TEAMS.length] as string;
      const createdAt = new Date(firstAt + i * step).toISOString();
      const finishedAt = new Date(firstAt + i * step + 40_000).toISOString();
      const deploymentId = randomUUID();
      const revisionId = randomUUID();
      const specId = randomUUID();
      const setId = randomUUID();
      // One in five ended without deploying, spread evenly over every team and word (a
      // status that followed the team would make some team searches match nothing).
      const failed = !queued && Math.floor(i / TEAMS.length) % 5 === 4;
      const image = `registry.example.com/${team}/${name}:v${(i % 50) + 1}`;
      const url = failed || queued ? null : `http://127.0.0.1:${20000 + (i % 40000)}`;
      if (i % sampleEvery === 0) sampleIds.push(deploymentId);
      deployments.push({
        id: deploymentId,
        workspace_id: workspaceId,
        name,
        display_name: i % 3 === 0 ? `${team} ${name.split('-')[1]} (${i})` : null,
        source: 'external_docker',
        source_config: sourceConfig,
        deployment_type: 'prod',
        listener_id: null,
        integration_id: null,
        image_version: null,
        status: queued ? 'AWAITING_DATABASE' : failed ? 'UNUSED' : 'READY',
        remote_reconciled: 0,
        latest_revision_id: revisionId,
        active_revision_id: failed || queued ? null : revisionId,
        revision_count: 1,
        pinned_revision_id: null,
        pinned_at: null,
        preview_settings: null,
        parent_deployment_id: null,
        preview_key: null,
        preview_origin: null,
        preview_active_at: null,
        lease_owner: null,
        lease_expires_at: null,
        url,
        created_at: createdAt,
        updated_at: finishedAt,
      });
      revisions.push({
        id: revisionId,
        deployment_id: deploymentId,
        seq: 1,
        source: 'external_docker',
        source_revision_config: JSON.stringify(completeRevisionConfig('external_docker', { image_uri: image })),
        resource_spec_id: specId,
        secret_set_id: setId,
        status: queued ? 'CREATING' : failed ? 'DEPLOY_FAILED' : 'DEPLOYED',
        status_message: failed ? 'GET /ok answered 503 instead of 200.' : null,
        remote_reconciled: 0,
        image_id: null,
        image_digest: null,
        image_ref: queued ? null : image,
        runtime_handle: failed || queued ? null : `berth-${name}-${revisionId.slice(0, 8)}`,
        url,
        build_inputs: null,
        build_key: null,
        config_env_encrypted: null,
        created_at: queued ? new Date().toISOString() : createdAt,
        updated_at: queued ? new Date().toISOString() : finishedAt,
      });
      const given = [{ name: 'OPENAI_API_KEY', value: `sk-${randomBytes(24).toString('base64url')}` }];
      if (i % 2 === 0) given.push({ name: 'DATABASE_URL', value: `postgres://app:${randomBytes(12).toString('hex')}@db.internal/${team}` });
      specs.push({ id: specId, deployment_id: deploymentId, digest: specDigest, spec: specText, created_at: createdAt });
      sets.push({ id: setId, deployment_id: deploymentId, digest: secretSetDigest(encryptor, given), created_at: createdAt });
      secrets.push(...encryptSecretSet(encryptor, setId, given));
      if (!queued)
        events.push({
          deployment_id: deploymentId,
          revision_id: revisionId,
          kind: 'status',
          log_type: null,
          level: null,
          status: failed ? 'DEPLOY_FAILED' : 'DEPLOYED',
          message: failed ? 'GET /ok answered 503 instead of 200.' : null,
          created_at: finishedAt,
        } as Database['deployment_events']);
    }
    await db.transaction().execute(async (trx) => {
      for (const [table, rows] of [
        ['deployments', deployments],
        ['resource_specs', specs],
        ['secret_sets', sets],
        ['revisions', revisions],
        ['secret_set_entries', secrets],
        ['deployment_events', events],
      ] as const) {
        for (let at = 0; at < rows.length; at += ROWS_PER_STATEMENT) {
          await trx
            .insertInto(table)
            .values(rows.slice(at, at + ROWS_PER_STATEMENT) as never)
            .execute();
        }
      }
    });
  }
  return { workspaceId, seeded: count, ms: Math.round(performance.now() - started), sampleIds };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { deployments: { type: 'string', default: '100000' }, analyze: { type: 'boolean', default: false }, queued: { type: 'string' } },
  });
  const count = Number(values.queued ?? values.deployments);
  const config = loadConfig();
  if (!config.bootstrapApiKey) throw new Error('BERTH_BOOTSTRAP_API_KEY must name the key of the workspace to fill');
  const db = openDatabase(config.database);
  try {
    const principal = await createTenancyService(db).authenticate(config.bootstrapApiKey);
    if (!principal?.boundWorkspaceId) throw new Error('start Berth once with BERTH_BOOTSTRAP_API_KEY before seeding');
    const { key } = loadEncryptionKey(config.encryptionKey, config.dataDir);
    // --queued N: a backlog in a workspace of its own (another team's CI burst), beside the seeded one.
    const other = values.queued === undefined ? undefined : await createTenancyService(db).createOrganization(`backlog-${randomUUID()}`);
    const result = await seed(db, new Encryptor(key), other?.workspaceId ?? principal.boundWorkspaceId, count, 5000, other !== undefined);
    // On PostgreSQL the scenarios should meet the database as a server that has run a while
    // leaves it, not in the wake of a bulk load: statistics gathered, and the new rows'
    // visibility settled by a vacuum (otherwise each first read of a row dirties its page,
    // and backends write pages out while they answer), then a checkpoint, which 100,000 rows
    // of WAL would otherwise request in the middle of the first scenario (bench/results.md).
    // A backlog queued while the server runs (--queued) is a burst arriving, and is only
    // analyzed. SQLite gathers no statistics unless asked, and Berth never asks, so it is
    // left as a real embedded database is.
    if (config.database.kind === 'postgres' && other === undefined) {
      await sql`vacuum (analyze)`.execute(db);
      await sql`checkpoint`.execute(db);
    } else if (config.database.kind === 'postgres' || values.analyze) await sql`analyze`.execute(db);
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await db.destroy();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error) => {
    process.stderr.write(`seeding failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}
