import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import type { Db } from '../../src/store/database.js';
import { preparedQuery } from '../../src/store/prepared.js';
import { openTestDatabase, describeEachDatabase } from '../support/database.js';

describeEachDatabase('prepared queries', (kind) => {
  let db: Db;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ db, close: cleanup } = await openTestDatabase(kind));
    const at = new Date().toISOString();
    await db
      .insertInto('organizations')
      .values([
        { id: 'org-a', name: 'alpha', created_at: at },
        { id: 'org-b', name: 'beta', created_at: at },
      ])
      .execute();
    await db
      .insertInto('workspaces')
      .values([
        { id: 'ws-a1', organization_id: 'org-a', name: 'one', created_at: at },
        { id: 'ws-a2', organization_id: 'org-a', name: 'two', created_at: at },
        { id: 'ws-b1', organization_id: 'org-b', name: 'one', created_at: at },
      ])
      .execute();
  });
  after(async () => cleanup());

  const workspaceNamed = preparedQuery((executor, organizationId: string, name: string) =>
    executor.selectFrom('workspaces').select(['id', 'name']).where('organization_id', '=', organizationId).where('name', '=', name).where('id', '!=', 'never'),
  );

  test('each run binds its own values, in the order the SQL needs them', async () => {
    assert.deepEqual(await workspaceNamed(db, 'org-a', 'one'), [{ id: 'ws-a1', name: 'one' }]);
    assert.deepEqual(await workspaceNamed(db, 'org-a', 'two'), [{ id: 'ws-a2', name: 'two' }]);
    assert.deepEqual(await workspaceNamed(db, 'org-b', 'one'), [{ id: 'ws-b1', name: 'one' }]);
    assert.deepEqual(await workspaceNamed(db, 'org-b', 'two'), []);
  });

  test('a parameter used twice is bound in both places', async () => {
    const sameIdTwice = preparedQuery((executor, id: string) =>
      executor
        .selectFrom('workspaces')
        .select('id')
        .where('id', '=', id)
        .where('organization_id', 'in', executor.selectFrom('workspaces').select('organization_id').where('id', '=', id)),
    );
    assert.deepEqual(await sameIdTwice(db, 'ws-a2'), [{ id: 'ws-a2' }]);
    assert.deepEqual(await sameIdTwice(db, 'ws-b1'), [{ id: 'ws-b1' }]);
  });

  test('inside a transaction it sees the transaction’s own writes', async () => {
    await db.transaction().execute(async (trx) => {
      await trx.insertInto('workspaces').values({ id: 'ws-a3', organization_id: 'org-a', name: 'three', created_at: new Date().toISOString() }).execute();
      assert.deepEqual(await workspaceNamed(trx, 'org-a', 'three'), [{ id: 'ws-a3', name: 'three' }]);
    });
    assert.deepEqual(await workspaceNamed(db, 'org-a', 'three'), [{ id: 'ws-a3', name: 'three' }]);
  });

  // Only PostgreSQL has named prepared statements: the SQLite run declares no such test.
  if (kind === 'postgres') {
    test('on PostgreSQL it is a named prepared statement, and a migration adding a column does not break it', async () => {
      assert.deepEqual(await workspaceNamed(db, 'org-a', 'one'), [{ id: 'ws-a1', name: 'one' }]);
      // Queries one after the other reuse the pool's one idle connection, which holds the statement.
      const { rows } = await sql<{ name: string; statement: string }>`SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'berth_%'`.execute(db);
      assert.ok(
        rows.some((row) => row.statement.includes('"workspaces"') && row.statement.includes('"organization_id" =')),
        `prepared: ${JSON.stringify(rows)}`,
      );
      await sql`ALTER TABLE workspaces ADD COLUMN added_by_a_later_migration text`.execute(db);
      assert.deepEqual(await workspaceNamed(db, 'org-a', 'two'), [{ id: 'ws-a2', name: 'two' }]);
      await sql`ALTER TABLE workspaces DROP COLUMN added_by_a_later_migration`.execute(db);
    });
  }

  test('a record sets its defined keys only, and each set of keys is its own statement', async () => {
    const rename = preparedQuery((executor, id: string, changes: { name?: string; organization_id?: string }) =>
      executor.updateTable('workspaces').set(changes).where('id', '=', id).returning(['id', 'name', 'organization_id']),
    );
    await db.insertInto('workspaces').values({ id: 'ws-r', organization_id: 'org-a', name: 'r0', created_at: new Date().toISOString() }).execute();
    assert.deepEqual(await rename(db, 'ws-r', { name: 'r1', organization_id: undefined }), [{ id: 'ws-r', name: 'r1', organization_id: 'org-a' }]);
    assert.deepEqual(await rename(db, 'ws-r', { organization_id: 'org-b' }), [{ id: 'ws-r', name: 'r1', organization_id: 'org-b' }]);
    assert.deepEqual(await rename(db, 'ws-r', { organization_id: 'org-a', name: 'r2' }), [{ id: 'ws-r', name: 'r2', organization_id: 'org-a' }]);
    await db.deleteFrom('workspaces').where('id', '=', 'ws-r').execute();
  });

  test('rows of one insert: each row binds its own values, whatever their number', async () => {
    const insertRows = preparedQuery((executor, rows: readonly { id: string; organization_id: string; name: string; created_at: string }[]) =>
      executor.insertInto('workspaces').values(rows).returning('id'),
    );
    const at = new Date().toISOString();
    const row = (n: number) => ({ id: `ws-i${n}`, organization_id: 'org-b', name: `i${n}`, created_at: at });
    assert.deepEqual(await insertRows(db, [row(1), row(2)]), [{ id: 'ws-i1' }, { id: 'ws-i2' }]);
    assert.deepEqual(await insertRows(db, [row(3)]), [{ id: 'ws-i3' }]);
    assert.deepEqual(await insertRows(db, [row(4), row(5)]), [{ id: 'ws-i4' }, { id: 'ws-i5' }]);
    const names = await db.selectFrom('workspaces').select('name').where('id', 'like', 'ws-i%').orderBy('name').execute();
    assert.deepEqual(
      names.map((r) => r.name),
      ['i1', 'i2', 'i3', 'i4', 'i5'],
    );
    // Past the cap on values (a statement per length would pile up): built each time, same answer.
    const many = Array.from({ length: 80 }, (_, i) => row(100 + i));
    assert.equal((await insertRows(db, many)).length, 80);
    await db.deleteFrom('workspaces').where('id', 'like', 'ws-i%').execute();
  });

  test('a parameter transformed before binding is refused rather than bound wrong', async () => {
    const pattern = preparedQuery((executor, fragment: string) =>
      executor
        .selectFrom('workspaces')
        .select('id')
        .where(sql<boolean>`name like ${`%${fragment}%`}`),
    );
    await assert.rejects(pattern(db, 'on'), /transformed before binding/);
    const unused = preparedQuery((executor, _ignored: string) => executor.selectFrom('workspaces').select('id'));
    await assert.rejects(unused(db, 'x'), /value 0 of the parameters is not bound/);
  });
});
