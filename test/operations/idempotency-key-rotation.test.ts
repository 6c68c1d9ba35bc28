import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { KEYED_VALUES } from '../../src/operations/encrypted-values.js';
import { Encryptor } from '../../src/security/encryption.js';
import { createIdempotencyService } from '../../src/services/idempotency.js';
import { migrateToLatest, openDatabase } from '../../src/store/database.js';
import { createPostgresDatabase } from '../support/server.js';
import { skippedWithout, DATABASE_KINDS } from '../support/database.js';

// The whole rotation (with a running server) is test/operations/rotate-encryption-key.test.ts;
// this checks that idempotency keys, replays included, survive it.
for (const kind of DATABASE_KINDS) {
  test(`key rotation re-encrypts idempotency keys, which replay under the new key [${kind}]`, async (t) => {
    if (await skippedWithout(kind, t)) return;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-idem-rotation-'));
    const postgres = kind === 'postgres' ? await createPostgresDatabase() : undefined;
    const db = openDatabase(postgres ? { kind: 'postgres', url: postgres.url } : { kind: 'sqlite', file: path.join(dir, 'berth.db') });
    t.after(async () => {
      await db.destroy();
      await postgres?.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    });
    await migrateToLatest(db);
    const current = new Encryptor(randomBytes(32));
    const next = new Encryptor(randomBytes(32));
    const before = createIdempotencyService({ db, encryptor: current }, { ttlMs: 60_000 });
    const scope = randomUUID();
    const answered = await before.claim(scope, 'answered', 'fingerprint-1');
    assert.equal(answered.kind, 'run');
    if (answered.kind === 'run') await before.answer(answered.id, { status: 201, contentType: 'application/json', body: '{"key":"shown once"}' });
    assert.equal((await before.claim(scope, 'running', 'fingerprint-2')).kind, 'run');

    const rotated = KEYED_VALUES.filter((values) => values.table === 'idempotency_keys');
    assert.deepEqual(rotated.map((values) => values.name).sort(), ['idempotency_keys.fingerprint_encrypted', 'idempotency_keys.response_encrypted']);
    await db.transaction().execute(async (trx) => {
      for (const values of rotated) await values.rotate(trx, { current, next });
    });

    const after = createIdempotencyService({ db, encryptor: next }, { ttlMs: 60_000 });
    const replay = await after.claim(scope, 'answered', 'fingerprint-1');
    assert.deepEqual(replay, { kind: 'replay', answer: { status: 201, contentType: 'application/json', body: '{"key":"shown once"}' } });
    assert.equal((await after.claim(scope, 'answered', 'another')).kind, 'reused');
    assert.equal((await after.claim(scope, 'running', 'fingerprint-2')).kind, 'in_progress');
  });
}
