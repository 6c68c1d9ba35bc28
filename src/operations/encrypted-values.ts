import { sql, type Transaction } from 'kysely';
import type { Secret } from '../domain/secrets.js';
import type { Encryptor } from '../security/encryption.js';
import { context as integrationCredentialsContext } from '../security/integration-credentials.js';
import { oauthClientSecretContext } from '../security/oauth-client-secrets.js';
import { decryptSecretSet, secretContext, secretSetDigest } from '../security/secret-sets.js';
import { secretEntries } from '../store/repositories/secret-sets.js';
import type { Database } from '../store/schema.js';
import { OperationError } from './errors.js';
import { resourceUriContext } from '../security/resource-uris.js';
import { configEnvContext } from '../security/config-env.js';
import { webhookSecretContext } from '../security/webhook-secrets.js';
import { jobEnvContext, jobSourceContext } from '../security/build-job-contexts.js';
import { idempotencyAnswerContext, idempotencyFingerprintContext } from '../security/idempotency-contexts.js';

/** The key values are encrypted with now, and the one they are re-encrypted with. */
export interface RotationKeys {
  current: Encryptor;
  next: Encryptor;
}

/**
 * Values that depend on the encryption key, one table at a time. Each `rotate` runs in one
 * transaction and is safe to run again after an interruption: a value that already opens
 * with the next key is left as it is.
 */
export interface KeyedValues {
  /** `table.column`, as reports name it. */
  name: string;
  table: keyof Database;
  /** Re-encrypts (or re-derives) every value; answers how many rows changed. */
  rotate(trx: Transaction<Database>, keys: RotationKeys): Promise<number>;
}

/** Rows read per query while rotating a table. */
const PAGE_SIZE = 500;

/**
 * A column of AES-GCM ciphertexts, bound to associated data computed from the row's key
 * columns (the same function that encrypted them, imported from where they are written).
 */
function ciphertextColumn<T extends keyof Database, K extends string & keyof Database[T]>(spec: {
  table: T;
  column: string & keyof Database[T];
  key: readonly [K, ...K[]];
  context: (row: Pick<Database[T], K>) => string;
}): KeyedValues {
  const { table, column, key } = spec;
  type Row = Pick<Database[T], K> & Record<string, unknown>;
  const keyRefs = sql.join(key.map((name) => sql.ref(name)));
  return {
    name: `${table}.${column}`,
    table,
    async rotate(trx, keys) {
      let changed = 0;
      let after: Row | undefined;
      for (;;) {
        // Keyset pagination over the key columns (row values: SQLite 3.15+ and PostgreSQL).
        const from = after ? sql`and (${keyRefs}) > (${sql.join(key.map((name) => after![name]))})` : sql``;
        const { rows } = await sql<Row>`
          select ${keyRefs}, ${sql.ref(column)} as value from ${sql.table(table)}
          where ${sql.ref(column)} is not null ${from}
          order by ${keyRefs} limit ${PAGE_SIZE}`.execute(trx);
        for (const row of rows) {
          const stored = row.value as string;
          const where = sql.join(
            key.map((name) => sql`${sql.ref(name)} = ${row[name]}`),
            sql` and `,
          );
          const rotated = reencrypt(stored, spec.context(row), keys, () => `${table} row ${key.map((name) => `${name}=${String(row[name])}`).join(', ')}`);
          if (rotated === undefined) continue;
          await sql`update ${sql.table(table)} set ${sql.ref(column)} = ${rotated} where ${where} and ${sql.ref(column)} = ${stored}`.execute(trx);
          changed += 1;
        }
        if (rows.length < PAGE_SIZE) return changed;
        after = rows.at(-1);
      }
    },
  };
}

/** The value under the next key; undefined when it is there already (an interrupted run got this far). */
function reencrypt(stored: string, context: string, keys: RotationKeys, where: () => string): string | undefined {
  let plaintext: string;
  try {
    plaintext = keys.current.decrypt(stored, context);
  } catch {
    try {
      keys.next.decrypt(stored, context);
      return undefined;
    } catch {
      throw new OperationError(
        `${where()} opens with neither the current key nor the new one. Nothing of this table was changed; restore the key it was written with, or remove the row, then run this again.`,
      );
    }
  }
  return keys.next.encrypt(plaintext, context);
}

/**
 * Secret sets' keyed digests (HMAC under a key derived from the encryption key), computed
 * again from their values; sets without a digest (migrated from before digests) keep none.
 */
const secretSetDigests: KeyedValues = {
  name: 'secret_sets.digest',
  table: 'secret_sets',
  async rotate(trx, keys) {
    let changed = 0;
    let after = '';
    for (;;) {
      const sets = await trx
        .selectFrom('secret_sets')
        .select(['id', 'digest'])
        .where('digest', 'is not', null)
        .where('id', '>', after)
        .orderBy('id')
        .limit(PAGE_SIZE)
        .execute();
      for (const set of sets) {
        const digest = secretSetDigest(keys.next, await secretsOf(trx, set.id, keys));
        if (digest === set.digest) continue;
        await trx.updateTable('secret_sets').set({ digest }).where('id', '=', set.id).execute();
        changed += 1;
      }
      if (sets.length < PAGE_SIZE) return changed;
      after = sets.at(-1)?.id as string;
    }
  },
};

/** A set's values, under whichever key its entries are (a set's entries are rotated together). */
async function secretsOf(trx: Transaction<Database>, setId: string, keys: RotationKeys): Promise<Secret[]> {
  const entries = await secretEntries(trx, [setId]);
  try {
    return decryptSecretSet(keys.current, entries);
  } catch {
    try {
      return decryptSecretSet(keys.next, entries);
    } catch {
      throw new OperationError(`The values of secret set ${setId} open with neither the current key nor the new one; its digest cannot be computed.`);
    }
  }
}

/**
 * Everything Berth encrypts or derives from the encryption key, in the order rotated. A
 * new encrypted column belongs here, with the context function its writer uses; the
 * rotation test fails for a column that is encrypted but missing.
 */
export const KEYED_VALUES: readonly KeyedValues[] = [
  ciphertextColumn({
    table: 'secret_set_entries',
    column: 'value_encrypted',
    key: ['set_id', 'position', 'name'],
    context: (row) => secretContext(row.set_id, row.name),
  }),
  secretSetDigests,
  ciphertextColumn({
    table: 'oauth_providers',
    column: 'client_secret_encrypted',
    key: ['id'],
    context: (row) => oauthClientSecretContext(row.id),
  }),
  ciphertextColumn({
    table: 'codehost_integrations',
    column: 'credentials_encrypted',
    key: ['id'],
    context: (row) => integrationCredentialsContext(row.id),
  }),
  ciphertextColumn({
    table: 'deployment_resources',
    column: 'uri_encrypted',
    key: ['deployment_id', 'kind'],
    context: (row) => resourceUriContext(row.deployment_id, row.kind),
  }),
  ciphertextColumn({
    table: 'idempotency_keys',
    column: 'fingerprint_encrypted',
    key: ['id'],
    context: (row) => idempotencyFingerprintContext(row.id),
  }),
  ciphertextColumn({
    table: 'idempotency_keys',
    column: 'response_encrypted',
    key: ['id'],
    context: (row) => idempotencyAnswerContext(row.id),
  }),
  ciphertextColumn({
    table: 'revisions',
    column: 'config_env_encrypted',
    key: ['id'],
    context: (row) => configEnvContext(row.id),
  }),
  ciphertextColumn({
    table: 'webhook_subscriptions',
    column: 'secret_encrypted',
    key: ['id'],
    context: (row) => webhookSecretContext(row.id),
  }),
  // An open build job's source credentials (erased when the job ends).
  ciphertextColumn({
    table: 'build_jobs',
    column: 'source_encrypted',
    key: ['id'],
    context: (row) => jobSourceContext(row.id),
  }),
  // The env (langgraph.json's) a runner reported with the image it built.
  ciphertextColumn({
    table: 'build_jobs',
    column: 'env_encrypted',
    key: ['id'],
    context: (row) => jobEnvContext(row.id),
  }),
];
