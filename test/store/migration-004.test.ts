import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Db, isUniqueViolation, migrateToLatest } from '../../src/store/database.js';
import { insertWorkspace } from '../../src/store/repositories/tenancy.js';
import { describeEachDatabase } from '../support/database.js';
import { databaseAt } from '../support/migrations.js';

describeEachDatabase('migration 004 on data of earlier versions', (kind) => {
  let db: Db;
  let close: () => Promise<void>;
  const at = new Date().toISOString();
  before(async () => {
    ({ db, close } = await databaseAt(kind, '003-listing-index'));
    await db.insertInto('organizations').values({ id: 'org', name: 'default', created_at: at }).execute();
    await db.insertInto('organizations').values({ id: 'org2', name: 'second', created_at: at }).execute();
    const later = (seconds: number) => new Date(Date.parse(at) + seconds * 1000).toISOString();
    await db
      .insertInto('workspaces')
      .values([
        { id: 'ws', organization_id: 'org', name: 'default', created_at: at },
        { id: 'ws-staging', organization_id: 'org', name: 'Staging', created_at: later(1) },
        { id: 'ws-staging-lower', organization_id: 'org', name: 'staging', created_at: later(2) },
        { id: 'ws-umlaut', organization_id: 'org', name: 'Übung', created_at: later(3) },
        { id: 'ws-other-org', organization_id: 'org2', name: 'staging', created_at: later(4) },
      ])
      .execute();
    const key = (id: string, hint: string) => ({
      id,
      organization_id: 'org',
      workspace_id: null,
      name: id,
      role: 'admin' as const,
      key_hash: id.padEnd(64, '0'),
      key_hint: hint,
      created_at: at,
    });
    await db
      .insertInto('api_keys')
      .values([key('generated', 'berth_AbCd…wxyz'), key('configured', 'my-long-co…9876')])
      .execute();
    await migrateToLatest(db);
  });
  after(async () => close?.());

  test('workspace names that differ only in case are kept, and no further one can be added', async () => {
    const names = await db.selectFrom('workspaces').select(['id', 'name']).orderBy('id').execute();
    assert.deepEqual(
      names.map((w) => w.name),
      ['default', 'staging', 'Staging', 'staging', 'Übung'],
    );
    for (const name of ['STAGING', 'übung', 'Default']) {
      await assert.rejects(
        insertWorkspace(db, { id: `new-${name}`, organization_id: 'org', name, created_at: at }),
        (error: unknown) => isUniqueViolation(error),
        name,
      );
    }
    await insertWorkspace(db, { id: 'new-fresh', organization_id: 'org', name: 'Fresh', created_at: at });
    await insertWorkspace(db, { id: 'new-elsewhere', organization_id: 'org2', name: 'Übung', created_at: at });
  });

  test('stored key hints keep only the last 4 characters, after the public prefix', async () => {
    const rows = await db.selectFrom('api_keys').select(['id', 'key_hint']).orderBy('id').execute();
    assert.deepEqual(rows, [
      { id: 'configured', key_hint: '…9876' },
      { id: 'generated', key_hint: 'berth_…wxyz' },
    ]);
  });
});
