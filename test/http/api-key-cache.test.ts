import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { API_KEY_CACHE_TTL_MS, createTenancyService } from '../../src/services/tenancy.js';
import type { Db } from '../../src/store/database.js';
import { openTestDatabase, describeEachDatabase } from '../support/database.js';

/**
 * Key lookups are cached per process for API_KEY_CACHE_TTL_MS. Two services on one
 * database stand for two server processes: a key revoked through one stops working on the
 * other once its entry expires, and at once on the one that revoked it.
 */
describeEachDatabase('API key cache', (kind) => {
  let db: Db;
  let cleanup: () => Promise<void>;
  let clock = 1_000_000;
  const now = () => clock;

  before(async () => {
    ({ db, close: cleanup } = await openTestDatabase(kind));
  });
  after(async () => cleanup());

  async function organization() {
    const admin = createTenancyService(db, { now });
    const org = await admin.createOrganization(`org-${Math.random()}`);
    assert.ok(org);
    const principal = await admin.authenticate(org.apiKey);
    assert.ok(principal);
    return { admin, principal };
  }

  test('a key revoked by another process stops working once the cache entry expires', async () => {
    const { admin, principal } = await organization();
    const created = await admin.createApiKey(principal, { name: 'ci', workspace_id: principal.boundWorkspaceId, role: 'member' });
    const replica = createTenancyService(db, { now });
    assert.equal((await replica.authenticate(created.key))?.keyId, created.id);

    await admin.revokeApiKey(principal, created.id);
    assert.equal(await admin.authenticate(created.key), null, 'the revoking process forgets the key at once');

    clock += API_KEY_CACHE_TTL_MS - 1;
    assert.equal((await replica.authenticate(created.key))?.keyId, created.id, 'still cached just before the bound');
    clock += 1;
    assert.equal(await replica.authenticate(created.key), null, 'rejected once the bound has passed');
    clock += 60_000;
    assert.equal(await replica.authenticate(created.key), null);
  });

  test('a key revoked on this process is rejected at once, even while cached', async () => {
    const { admin, principal } = await organization();
    const created = await admin.createApiKey(principal, { name: 'temp', workspace_id: null, role: 'admin' });
    assert.ok(await admin.authenticate(created.key));
    await admin.revokeApiKey(principal, created.id);
    assert.equal(await admin.authenticate(created.key), null);
  });

  test('a lookup that races a revocation on this process is not cached', async () => {
    const { admin, principal } = await organization();
    const created = await admin.createApiKey(principal, { name: 'race', workspace_id: null, role: 'member' });
    // The next query's result is held back after the database answered (and released
    // its connection): the lookup has read the key, and finishes only after the
    // revocation has deleted it and cleared the cache.
    let arm: { arrived: () => void; release: Promise<void> } | undefined;
    const holdNext = async () => {
      const held = arm;
      arm = undefined;
      if (held) {
        held.arrived();
        await held.release;
      }
    };
    const service = createTenancyService(holdingResults(db, holdNext), { now });
    let release!: () => void;
    const arrived = new Promise<void>((resolve) => {
      arm = { arrived: resolve, release: new Promise<void>((done) => (release = done)) };
    });
    const lookup = service.authenticate(created.key);
    await arrived;
    await service.revokeApiKey(principal, created.id);
    release();
    assert.equal((await lookup)?.keyId, created.id, 'the lookup read the key before it was revoked');
    assert.equal(await service.authenticate(created.key), null, 'and did not leave it in the cache');
  });

  test('unknown keys are not cached: a key works as soon as it exists', async () => {
    const { admin, principal } = await organization();
    const other = createTenancyService(db, { now });
    assert.equal(await other.authenticate('berth_not-a-key-yet'), null);
    const created = await admin.createApiKey(principal, { name: 'new', workspace_id: null, role: 'member' });
    assert.equal((await other.authenticate(created.key))?.keyId, created.id);
  });

  test('callers get their own copy of the cached principal', async () => {
    const { admin, principal } = await organization();
    const created = await admin.createApiKey(principal, { name: 'copy', workspace_id: principal.boundWorkspaceId, role: 'member' });
    const first = await admin.authenticate(created.key);
    assert.ok(first);
    first.role = 'admin';
    assert.equal((await admin.authenticate(created.key))?.role, 'member');
  });

  test('with the cache off every lookup asks the database', async () => {
    const { admin, principal } = await organization();
    const created = await admin.createApiKey(principal, { name: 'nocache', workspace_id: null, role: 'member' });
    const uncached = createTenancyService(db, { keyCacheTtlMs: 0, now });
    assert.ok(await uncached.authenticate(created.key));
    await admin.revokeApiKey(principal, created.id);
    assert.equal(await uncached.authenticate(created.key), null);
  });
});

/** The database, with `hold()` awaited after every `executeTakeFirst` has its result. */
function holdingResults(db: Db, hold: () => Promise<void>): Db {
  const wrap = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(object, property) {
        const value = Reflect.get(object, property, object) as unknown;
        if (typeof value !== 'function') return value;
        // A built query answers through executeTakeFirst, a compiled-once one (store/prepared.ts) through executeQuery.
        if (property === 'executeTakeFirst' || property === 'executeQuery') {
          return async (...args: unknown[]) => {
            const result = await value.apply(object, args);
            await hold();
            return result;
          };
        }
        return (...args: unknown[]) => {
          const out = value.apply(object, args) as unknown;
          return out !== null && typeof out === 'object' && 'executeTakeFirst' in out ? wrap(out) : out;
        };
      },
    });
  return wrap(db);
}
