import { createHash, randomUUID } from 'node:crypto';
import { type Kysely, type Migration, sql } from 'kysely';
import { canonicalJson } from '../../domain/canonical-json.js';

/**
 * Resource specs and secrets stored once per distinct content and referred to by the
 * revisions that use them: before, every revision copied both, so twenty revisions of a
 * deployment with large secrets stored them twenty times.
 *
 * Existing secrets move as they are: each revision's secrets become a set whose id is
 * the revision id, so the ciphertexts (bound to `revision_secret:<id>:<name>`) stay valid
 * without the encryption key, which migrations do not have. Such sets have no digest and
 * are simply not shared.
 */
export const revisionInputs: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('resource_specs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('deployment_id', 'text', (c) => c.notNull().references('deployments.id').onDelete('cascade'))
      .addColumn('digest', 'text', (c) => c.notNull())
      .addColumn('spec', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addUniqueConstraint('resource_specs_deployment_digest_unique', ['deployment_id', 'digest'])
      .execute();
    await db.schema
      .createTable('secret_sets')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('deployment_id', 'text', (c) => c.notNull().references('deployments.id').onDelete('cascade'))
      .addColumn('digest', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    // Unique where present; migrated sets (no digest) may be many.
    await sql`create unique index secret_sets_deployment_digest_unique on secret_sets (deployment_id, digest) where digest is not null`.execute(db);
    await db.schema
      .createTable('secret_set_entries')
      .addColumn('set_id', 'text', (c) => c.notNull().references('secret_sets.id').onDelete('cascade'))
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('value_encrypted', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('secret_set_entries_pk', ['set_id', 'name'])
      .execute();
    await db.schema
      .alterTable('revisions')
      .addColumn('resource_spec_id', 'text', (c) => c.references('resource_specs.id'))
      .execute();
    await db.schema
      .alterTable('revisions')
      .addColumn('secret_set_id', 'text', (c) => c.references('secret_sets.id'))
      .execute();

    await moveSecrets(db);
    await moveResourceSpecs(db);

    await db.schema.dropTable('revision_secrets').execute();
    await db.schema.alterTable('revisions').dropColumn('resource_spec').execute();
  },
};

async function moveSecrets(db: Kysely<unknown>): Promise<void> {
  await sql`
    insert into secret_sets (id, deployment_id, digest, created_at)
    select r.id, r.deployment_id, null, r.created_at from revisions r
    where exists (select 1 from revision_secrets s where s.revision_id = r.id)`.execute(db);
  await sql`
    insert into secret_set_entries (set_id, position, name, value_encrypted)
    select revision_id, position, name, value_encrypted from revision_secrets`.execute(db);
  await sql`update revisions set secret_set_id = id where exists (select 1 from secret_sets s where s.id = revisions.id)`.execute(db);
}

/** Read in pages and addressed by content here, in JavaScript: neither database has SHA-256 in plain SQL alike. */
async function moveResourceSpecs(db: Kysely<unknown>): Promise<void> {
  const PAGE = 1000;
  let after = '';
  for (;;) {
    const { rows } = await sql<{ id: string; deployment_id: string; resource_spec: string; created_at: string }>`
      select id, deployment_id, resource_spec, created_at from revisions
      where resource_spec is not null and id > ${after} order by id limit ${PAGE}`.execute(db);
    for (const row of rows) {
      const spec = canonicalJson(JSON.parse(row.resource_spec));
      const digest = createHash('sha256').update(spec).digest('hex');
      await sql`
        insert into resource_specs (id, deployment_id, digest, spec, created_at)
        values (${randomUUID()}, ${row.deployment_id}, ${digest}, ${spec}, ${row.created_at})
        on conflict (deployment_id, digest) do nothing`.execute(db);
      await sql`
        update revisions set resource_spec_id =
          (select id from resource_specs where deployment_id = ${row.deployment_id} and digest = ${digest})
        where id = ${row.id}`.execute(db);
    }
    if (rows.length < PAGE) return;
    after = (rows.at(-1) as { id: string }).id;
  }
}
