import type { Kysely, Migration } from 'kysely';
import { workspaceNameKey } from '../../domain/tenancy.js';

/** The rows this migration reads and writes, typed here: later schema changes must not change it. */
interface Tables {
  workspaces: { id: string; organization_id: string; name: string; name_key: string | null; created_at: string };
  api_keys: { id: string; key_hint: string };
}

/**
 * Workspace names become unique in an organization without regard to case, as deployment
 * names are: `name_key` holds the name in the form compared (domain/tenancy.ts computes
 * it; SQLite's own `lower()` folds only ASCII). Workspaces that already differ only in
 * case keep their names; all but the oldest get a key no name can take (the key, a control
 * character and the workspace id), so the index can be made and no new duplicate can join them.
 *
 * Also, key hints shrink to the last 4 characters (after the public `berth_` prefix): the
 * 10 leading characters stored so far, next to the unsalted digest, left a short
 * configured key open to a quick search.
 */
export const workspaceNameCaseInsensitive: Migration = {
  async up(untyped: Kysely<unknown>) {
    const db = untyped as unknown as Kysely<Tables>;
    await db.schema.alterTable('workspaces').addColumn('name_key', 'text').execute();
    const workspaces = await db.selectFrom('workspaces').select(['id', 'organization_id', 'name']).orderBy('created_at').orderBy('id').execute();
    const taken = new Set<string>();
    for (const workspace of workspaces) {
      const key = workspaceNameKey(workspace.name);
      const scoped = `${workspace.organization_id} ${key}`;
      // Names cannot hold control characters, so no name's key ends like this one.
      const unique = taken.has(scoped) ? `${key}\u0001${workspace.id}` : key;
      taken.add(scoped);
      await db.updateTable('workspaces').set({ name_key: unique }).where('id', '=', workspace.id).execute();
    }
    await db.schema.createIndex('workspaces_org_name_key_unique').unique().on('workspaces').columns(['organization_id', 'name_key']).execute();

    for (const key of await db.selectFrom('api_keys').select(['id', 'key_hint']).execute()) {
      const hint = shortenedKeyHint(key.key_hint);
      if (hint !== key.key_hint) await db.updateTable('api_keys').set({ key_hint: hint }).where('id', '=', key.id).execute();
    }
  },
};

/**
 * A hint written by an earlier version (10 leading and 4 trailing characters), shortened to
 * what keys show now. Kept here, not shared: a migration must do the same thing forever.
 */
function shortenedKeyHint(hint: string): string {
  const prefix = 'berth_';
  return `${hint.startsWith(prefix) ? prefix : ''}…${hint.slice(-4)}`;
}
