import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Encryptor } from '../../src/security/encryption.js';
import { createDeploymentRecords } from '../../src/services/deployment-records.js';
import { createTenancyService } from '../../src/services/tenancy.js';
import type { Db } from '../../src/store/database.js';
import { insertDeployment } from '../../src/store/repositories/deployments.js';
import { openTestDatabase } from '../support/database.js';
import { deploymentRow } from '../support/rows.js';

/**
 * The decrypted secrets kept per secret set are bounded in characters as well as in
 * count: a client may store large secrets, and reading many revisions must not grow the
 * server without limit. Whatever the cache holds or drops, reads answer the stored secrets.
 */
describe('secrets kept in memory per secret set', () => {
  let db: Db;
  let close: () => Promise<void>;
  let deploymentId: string;
  const encryptor = new Encryptor(randomBytes(32));

  before(async () => {
    ({ db, close } = await openTestDatabase('sqlite'));
    const org = await createTenancyService(db).createOrganization(`org-${randomUUID()}`);
    assert.ok(org, 'organization created');
    deploymentId = randomUUID();
    await insertDeployment(db, deploymentRow(org.workspaceId, { id: deploymentId, name: 'records' }));
  });
  after(async () => close());

  /** A stored secret set with one secret of `size` characters, written by another records instance (another server). */
  async function storedRevision(seq: number, size: number) {
    const secrets = [{ name: 'BIG', value: `${seq}-`.padEnd(size, 'x') }];
    const id = await createDeploymentRecords(encryptor).storeSecrets(db, deploymentId, secrets, new Date().toISOString());
    assert.ok(id, 'a set was stored');
    return { id, secrets };
  }

  test('reading many large revisions keeps the cache within its character budget', async () => {
    const budget = 10_000;
    const records = createDeploymentRecords(encryptor, budget);
    const revisions = [];
    for (let seq = 1; seq <= 20; seq++) revisions.push(await storedRevision(seq, 2_000));
    for (const revision of revisions) {
      const read = await records.secretsOf(db, [revision.id]);
      assert.deepEqual(read.get(revision.id), revision.secrets);
    }
    const usage = records.cacheUsage();
    assert.ok(usage.characters <= budget, `cache holds ${usage.characters} characters, over its budget of ${budget}`);
    assert.ok(usage.sets >= 1 && usage.sets < revisions.length, `cache holds ${usage.sets} sets`);

    // Dropped entries are read again from the database, decrypted, and still right.
    const all = await records.secretsOf(
      db,
      revisions.map((r) => r.id),
    );
    for (const revision of revisions) assert.deepEqual(all.get(revision.id), revision.secrets);
  });

  test('a set larger than the whole budget is answered but not kept', async () => {
    const records = createDeploymentRecords(encryptor, 1_000);
    const huge = await storedRevision(100, 5_000);
    assert.deepEqual((await records.secretsOf(db, [huge.id])).get(huge.id), huge.secrets);
    assert.deepEqual(records.cacheUsage(), { sets: 0, characters: 0 });
    assert.deepEqual((await records.secretsOf(db, [huge.id])).get(huge.id), huge.secrets);
  });
});
