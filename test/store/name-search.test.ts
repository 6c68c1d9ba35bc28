import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import type { Db } from '../../src/store/database.js';
import { insertDeployment, listDeployments } from '../../src/store/repositories/deployments.js';
import { openTestDatabase, describeEachDatabase } from '../support/database.js';
import { deploymentRow } from '../support/rows.js';

/** Characters that LIKE, FTS5 query syntax or case folding treat specially, and some that are just rare. */
const NAME_CHARACTERS = ['a', 'b', 'A', 'B', '-', '_', '%', '\\', '"', "'", '*', ' ', 'é', 'É', 'ß', 'İ', 'ı', 'ǅ', '日', '😀', '0', '1'];
const text = (maxLength: number) => fc.array(fc.constantFrom(...NAME_CHARACTERS), { minLength: 1, maxLength }).map((chars) => chars.join(''));

/** Today's answer: the plain scan with LIKE that the search index must agree with, in the same order. */
async function scan(db: Db, workspaceId: string, needle: string): Promise<string[]> {
  const pattern = `%${needle.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const { rows } = await sql<{ id: string }>`
    SELECT id FROM deployments WHERE workspace_id = ${workspaceId} AND lower(name) LIKE ${pattern} ESCAPE '\\'
    ORDER BY created_at DESC, id DESC`.execute(db);
  return rows.map((row) => row.id);
}

async function search(db: Db, workspaceId: string, needle: string): Promise<string[]> {
  const found = await listDeployments(db, workspaceId, { nameContains: needle }, { limit: 1000, offset: 0 });
  return found.map(({ deployment }) => deployment.id);
}

describeEachDatabase('name_contains with the search index', (kind) => {
  let db: Db;
  let cleanup: () => Promise<void>;
  let workspace = 0;

  before(async () => {
    ({ db, close: cleanup } = await openTestDatabase(kind));
    await db.insertInto('organizations').values({ id: 'org', name: 'org', created_at: new Date().toISOString() }).execute();
  });
  after(async () => cleanup());

  async function freshWorkspace(names: string[]): Promise<{ id: string; ids: string[] }> {
    const id = `ws-${++workspace}`;
    await db.insertInto('workspaces').values({ id, organization_id: 'org', name: id, created_at: new Date().toISOString() }).execute();
    const ids: string[] = [];
    for (const [index, name] of names.entries()) {
      // Distinct timestamps, and some equal ones, so the id decides the order of ties as before.
      const createdAt = new Date(Date.UTC(2026, 0, 1, 0, 0, Math.floor(index / 2))).toISOString();
      ids.push((await insertDeployment(db, deploymentRow(id, { name, created_at: createdAt }))).id);
    }
    return { id, ids };
  }

  test('answers exactly what the scan answers, in the same order, for generated names and needles', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(text(12), { minLength: 1, maxLength: 25, selector: (name) => name.toLowerCase() }),
        fc.array(text(5), { minLength: 1, maxLength: 6 }),
        async (names, needles) => {
          // Names are unique in a workspace without regard to case (the selector above).
          const { id } = await freshWorkspace(names);
          // Needles taken from the names too, so that most of them match something.
          for (const needle of [...needles, ...names.slice(0, 3).map((name) => [...name].slice(1, 5).join('') || name)]) {
            assert.deepEqual(await search(db, id, needle), await scan(db, id, needle), `needle ${JSON.stringify(needle)}`);
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  test('page by page with a status filter, the pages are the scan’s, cut where the scan cuts them', async () => {
    const names = Array.from({ length: 30 }, (_, i) => `${i % 3 === 0 ? 'other' : 'agent'}-${String(i).padStart(2, '0')}`);
    const { id, ids } = await freshWorkspace(names);
    const ready = ids.filter((_, i) => i % 4 !== 1);
    await db.updateTable('deployments').set({ status: 'READY' }).where('id', 'in', ready).execute();
    const readySet = new Set(ready);
    const expected = (await scan(db, id, 'GENT-')).filter((deploymentId) => readySet.has(deploymentId));
    assert.ok(expected.length > 8, `only ${expected.length} matches`);
    const pages: string[][] = [];
    for (let offset = 0; offset < expected.length + 4; offset += 4) {
      const page = await listDeployments(db, id, { nameContains: 'GENT-', statuses: ['READY'] }, { limit: 4, offset });
      pages.push(page.map(({ deployment }) => deployment.id));
    }
    assert.deepEqual(pages.flat(), expected);
    assert.ok(pages.slice(0, -2).every((page) => page.length === 4));
  });

  test('a deployment is found as soon as it is written and not after it is deleted; other workspaces never', async () => {
    const mine = await freshWorkspace(['payments-agent', 'search-agent']);
    const theirs = await freshWorkspace(['payments-agent-2']);
    assert.deepEqual(await search(db, mine.id, 'MENTS-AG'), [mine.ids[0]]);
    assert.deepEqual(await search(db, theirs.id, 'ments-ag'), [theirs.ids[0]]);
    await db
      .deleteFrom('deployments')
      .where('id', '=', mine.ids[0] as string)
      .execute();
    assert.deepEqual(await search(db, mine.id, 'ments-ag'), []);
    const added = await insertDeployment(db, deploymentRow(mine.id, { name: 'new-payments-agent' }));
    assert.deepEqual(await search(db, mine.id, 'ments-ag'), [added.id]);
  });
});
