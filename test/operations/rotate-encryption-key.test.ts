import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import type { Config } from '../../src/config.js';
import { KEYED_VALUES, type KeyedValues } from '../../src/operations/encrypted-values.js';
import { rotateEncryptionKey } from '../../src/operations/rotate-encryption-key.js';
import { Encryptor, parseEncryptionKey } from '../../src/security/encryption.js';
import { decryptCredentials } from '../../src/security/integration-credentials.js';
import { decryptSecretSet, secretSetDigest } from '../../src/security/secret-sets.js';
import { oauthClientSecretContext as oauthContext } from '../../src/security/oauth-client-secrets.js';
import { testConfig } from '../support/config.js';
import { migrateToLatest, openDatabase } from '../../src/store/database.js';
import { secretEntries } from '../../src/store/repositories/secret-sets.js';
import { runCommand } from '../support/commands.js';
import { client } from '../support/http.js';
import { spawnBerth, stopBerth } from '../support/process.js';
import { eventually } from '../support/runtimes.js';
import { createPostgresDatabase, type DatabaseKind } from '../support/server.js';
import { deadline } from '../support/deadline.js';
import { skippedWithout } from '../support/database.js';
import { nodeArguments } from '../support/entry.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TERMINAL = new Set(['DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED']);

const rotateCli = (env: Record<string, string>) =>
  runCommand(process.execPath, [...nodeArguments('src/main.ts'), 'rotate-encryption-key'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    check: false,
    signal: AbortSignal.timeout(deadline(120_000)),
  });

const hexKey = () => randomBytes(32).toString('hex');

interface Fixture {
  env: Record<string, string>;
  dataDir: string;
  database: Config['database'];
  apiKey: string;
  /** Secret values by name, as sent. */
  secrets: Record<string, string>;
  clientSecret: string;
  gitPassword: string;
  deploymentId: string;
  integrationId: string;
  cleanup(): Promise<void>;
}

/** A stopped Berth whose database holds deployment secrets, an OAuth client secret and code-host credentials. */
async function populatedBerth(
  kind: DatabaseKind,
  env: Record<string, string>,
  dataDir: string,
  database: Config['database'],
  cleanup: () => Promise<void>,
): Promise<Fixture> {
  const apiKey = `berth_rotation_${randomBytes(16).toString('hex')}`;
  const fullEnv = { ...env, BERTH_DATA_DIR: dataDir, BERTH_BOOTSTRAP_API_KEY: apiKey, BERTH_CONTAINER_RUNTIME: 'none', BERTH_RATE_LIMIT_PER_MINUTE: '0' };
  const secrets = { OPENAI_API_KEY: `sk-${randomBytes(12).toString('hex')}`, DATABASE_PASSWORD: `pw-${randomBytes(12).toString('hex')}` };
  const clientSecret = `client-${randomBytes(12).toString('hex')}`;
  const gitPassword = `git-${randomBytes(12).toString('hex')}`;
  const berth = await spawnBerth(fullEnv).catch(async (error) => {
    await cleanup();
    throw error;
  });
  try {
    const api = client(berth.url, { key: apiKey });
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: `rotation-${kind}`,
        source: 'external_docker',
        source_config: {},
        source_revision_config: { image_uri: 'localhost/agent:v1' },
        secrets: Object.entries(secrets).map(([name, value]) => ({ name, value })),
      },
    });
    assert.equal(created.status, 201, created.text);
    await waitForTerminal(api, created.body.id);
    const provider = await api('POST', '/v2/auth/providers', {
      body: {
        provider_id: 'github',
        name: 'GitHub',
        client_id: 'client-123',
        client_secret: clientSecret,
        auth_url: 'https://github.com/login/oauth/authorize',
        token_url: 'https://github.com/login/oauth/access_token',
      },
    });
    assert.equal(provider.status, 200, provider.text);
    const integration = await api('POST', '/v1/integrations/codehost', {
      body: {
        provider: 'git',
        name: 'company git',
        git: { repositories: ['https://git.example.com/acme/agent.git'], username: 'berth', password: gitPassword },
      },
    });
    assert.equal(integration.status, 201, integration.text);

    // While a server has the database, rotation refuses and changes nothing.
    const refused = await rotateCli(fullEnv);
    assert.equal(refused.code, 1, refused.output);
    assert.match(refused.output, kind === 'sqlite' ? /Another process has .* open: stop the Berth server/ : /other session\(s\) are connected/);
    assert.ok(!fs.existsSync(path.join(dataDir, 'encryption.key.next')), 'a refused rotation left a pending key');
    await stopBerth(berth);
    return {
      env: fullEnv,
      dataDir,
      database,
      apiKey,
      secrets,
      clientSecret,
      gitPassword,
      deploymentId: created.body.id,
      integrationId: integration.body.id,
      cleanup,
    };
  } catch (error) {
    await stopBerth(berth);
    await cleanup();
    throw error;
  }
}

async function waitForTerminal(api: ReturnType<typeof client>, deploymentId: string): Promise<string> {
  return eventually(
    async () => {
      const deployment = await api('GET', `/v2/deployments/${deploymentId}`);
      const revision = await api('GET', `/v2/deployments/${deploymentId}/revisions/${deployment.body.latest_revision_id}`);
      return TERMINAL.has(revision.body.status) ? (revision.body.status as string) : undefined;
    },
    'the latest revision to end',
    30_000,
  );
}

/** Opens every stored secret with a key: throws on the first that does not open. */
async function readEverySecret(fixture: Fixture, key: Buffer) {
  const encryptor = new Encryptor(key);
  const db = openDatabase(fixture.database);
  try {
    const sets = await db.selectFrom('secret_sets').select(['id', 'digest']).execute();
    const values = [];
    for (const set of sets) {
      const secrets = decryptSecretSet(encryptor, await secretEntries(db, [set.id]));
      if (set.digest !== null) assert.equal(set.digest, secretSetDigest(encryptor, secrets), `digest of set ${set.id}`);
      values.push(...secrets);
    }
    const provider = await db.selectFrom('oauth_providers').select(['id', 'client_secret_encrypted']).executeTakeFirstOrThrow();
    const integration = await db.selectFrom('codehost_integrations').select(['id', 'credentials_encrypted']).executeTakeFirstOrThrow();
    return {
      secrets: Object.fromEntries(values.map((s) => [s.name, s.value])),
      clientSecret: encryptor.decrypt(provider.client_secret_encrypted, oauthContext(provider.id)),
      gitPassword: decryptCredentials(encryptor, integration.id, integration.credentials_encrypted).git?.password,
      sets: sets.length,
    };
  } finally {
    await db.destroy();
  }
}

/** What a server started with `keyEnv` makes of the stored secrets: GET of the integration, and a PATCH that needs the deployment's secrets. */
async function serverWith(fixture: Fixture, keyEnv: Record<string, string>) {
  const berth = await spawnBerth({ ...fixture.env, ...keyEnv });
  try {
    const api = client(berth.url, { key: fixture.apiKey });
    const integration = await api('GET', `/v1/integrations/codehost/${fixture.integrationId}`);
    // The same secrets again: a server computing the same keyed digest reuses the stored set.
    const patched = await api('PATCH', `/v2/deployments/${fixture.deploymentId}`, {
      body: {
        source_revision_config: { image_uri: `localhost/agent:${randomBytes(3).toString('hex')}` },
        secrets: Object.entries(fixture.secrets).map(([name, value]) => ({ name, value })),
      },
    });
    // A PATCH merges the stored secrets with the new ones: it must open them first.
    const revisionStatus = patched.status === 200 ? await waitForTerminal(api, fixture.deploymentId) : undefined;
    // A server that cannot open the stored secrets says so (503 secrets_unreadable), never a 500.
    const errorCodes = [integration, patched].filter((r) => r.status !== 200).map((r) => (r.body as { code?: string }).code);
    return { integrationStatus: integration.status, patchStatus: patched.status, revisionStatus, errorCodes };
  } finally {
    await stopBerth(berth);
  }
}

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'berth-rotation-'));
}

describe('berth rotate-encryption-key', () => {
  test('SQLite with the key file: re-encrypts every secret, swaps the key file, keeps the old key aside', async () => {
    const dataDir = tempDir();
    const fixture = await populatedBerth('sqlite', {}, dataDir, { kind: 'sqlite', file: path.join(dataDir, 'berth.sqlite') }, async () =>
      fs.rmSync(dataDir, { recursive: true, force: true }),
    );
    try {
      const keyFile = path.join(dataDir, 'encryption.key');
      const oldKey = parseEncryptionKey(fs.readFileSync(keyFile, 'utf8'));
      const before = await readEverySecret(fixture, oldKey);

      const rotated = await rotateCli(fixture.env);
      assert.equal(rotated.code, 0, rotated.output);
      assert.match(rotated.output, /re-encrypted secret_set_entries\.value_encrypted: 2 row\(s\)/);
      assert.match(rotated.output, /re-encrypted oauth_providers\.client_secret_encrypted: 1 row\(s\)/);
      assert.match(rotated.output, /re-encrypted codehost_integrations\.credentials_encrypted: 1 row\(s\)/);
      assert.ok(!rotated.output.includes(fs.readFileSync(keyFile, 'utf8').trim()), 'the new key was printed');

      const newKey = parseEncryptionKey(fs.readFileSync(keyFile, 'utf8'));
      assert.ok(!newKey.equals(oldKey));
      assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
      const kept = fs.readdirSync(dataDir).filter((name) => name.startsWith('encryption.key.'));
      assert.equal(kept.length, 1, `files left: ${kept.join(', ')}`);
      assert.match(kept[0] as string, /^encryption\.key\.previous-/);
      assert.ok(parseEncryptionKey(fs.readFileSync(path.join(dataDir, kept[0] as string), 'utf8')).equals(oldKey));

      assert.deepEqual(await readEverySecret(fixture, newKey), before);
      await assert.rejects(readEverySecret(fixture, oldKey));

      const withNew = await serverWith(fixture, {});
      // DEPLOY_FAILED: no container runtime here, so the deploy step fails; the secrets opened before it.
      assert.deepEqual(withNew, { integrationStatus: 200, patchStatus: 200, revisionStatus: 'DEPLOY_FAILED', errorCodes: [] });
      assert.equal(
        (await readEverySecret(fixture, newKey)).sets,
        before.sets,
        'the server stored the same secrets again: its digest differs from the rotated one',
      );
      // Started with the old key, a server can open none of them.
      const withOld = await serverWith(fixture, { BERTH_ENCRYPTION_KEY: oldKey.toString('hex') });
      assert.deepEqual(withOld, {
        integrationStatus: 503,
        patchStatus: 503,
        revisionStatus: undefined,
        errorCodes: ['secrets_unreadable', 'secrets_unreadable'],
      });
    } finally {
      await fixture.cleanup();
    }
  });

  test('PostgreSQL with BERTH_ENCRYPTION_KEY: re-encrypts every secret and leaves the generated key for the operator', async (t) => {
    if (await skippedWithout('postgres', t)) return;
    const dataDir = tempDir();
    const postgres = await createPostgresDatabase();
    const oldKey = hexKey();
    const fixture = await populatedBerth(
      'postgres',
      { DATABASE_URL: postgres.url, BERTH_ENCRYPTION_KEY: oldKey },
      dataDir,
      { kind: 'postgres', url: postgres.url },
      async () => {
        await postgres.drop();
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    );
    try {
      const before = await readEverySecret(fixture, parseEncryptionKey(oldKey));
      const rotated = await rotateCli(fixture.env);
      assert.equal(rotated.code, 0, rotated.output);
      assert.match(rotated.output, /Set BERTH_ENCRYPTION_KEY to the key in .*encryption\.key\.new-/);
      const newKeyFile = fs.readdirSync(dataDir).filter((name) => name.startsWith('encryption.key.new-'));
      assert.equal(newKeyFile.length, 1);
      const file = path.join(dataDir, newKeyFile[0] as string);
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      const newKey = parseEncryptionKey(fs.readFileSync(file, 'utf8'));
      assert.ok(!fs.existsSync(path.join(dataDir, 'encryption.key')), 'no key file appeared beside BERTH_ENCRYPTION_KEY');

      assert.deepEqual(await readEverySecret(fixture, newKey), before);
      await assert.rejects(readEverySecret(fixture, parseEncryptionKey(oldKey)));
      assert.deepEqual(await serverWith(fixture, { BERTH_ENCRYPTION_KEY: newKey.toString('hex') }), {
        integrationStatus: 200,
        patchStatus: 200,
        revisionStatus: 'DEPLOY_FAILED',
        errorCodes: [],
      });
      assert.deepEqual(await serverWith(fixture, {}), {
        integrationStatus: 503,
        patchStatus: 503,
        revisionStatus: undefined,
        errorCodes: ['secrets_unreadable', 'secrets_unreadable'],
      });
    } finally {
      await fixture.cleanup();
    }
  });

  test('an interrupted rotation resumes with the same new key when run again', async () => {
    const dataDir = tempDir();
    const fixture = await populatedBerth('sqlite', {}, dataDir, { kind: 'sqlite', file: path.join(dataDir, 'berth.sqlite') }, async () =>
      fs.rmSync(dataDir, { recursive: true, force: true }),
    );
    try {
      const keyFile = path.join(dataDir, 'encryption.key');
      const oldKey = parseEncryptionKey(fs.readFileSync(keyFile, 'utf8'));
      const before = await readEverySecret(fixture, oldKey);
      const config: Config = testConfig({ BERTH_DATA_DIR: dataDir, BERTH_ENGINE: 'off', BERTH_CONTAINER_RUNTIME: 'none' }, { database: fixture.database });
      // The first table is done, then the run dies.
      const crash: KeyedValues = { name: 'crash', table: 'secret_sets', rotate: async () => Promise.reject(new Error('power cut')) };
      await assert.rejects(rotateEncryptionKey(config, { values: [KEYED_VALUES[0] as KeyedValues, crash] }), /power cut/);
      const pending = path.join(dataDir, 'encryption.key.next');
      assert.ok(fs.existsSync(pending));
      assert.ok(parseEncryptionKey(fs.readFileSync(keyFile, 'utf8')).equals(oldKey), 'the key file changed before the rotation ended');

      const report = await rotateEncryptionKey(config);
      assert.equal(report.nextSource, 'pending');
      assert.equal(report.rotated.find((r) => r.name === 'secret_set_entries.value_encrypted')?.rows, 0, 'values rotated before the crash were rotated again');
      assert.ok(!fs.existsSync(pending));
      assert.deepEqual(await readEverySecret(fixture, parseEncryptionKey(fs.readFileSync(keyFile, 'utf8'))), before);
    } finally {
      await fixture.cleanup();
    }
  });

  test('covers every encrypted column of the schema', async () => {
    const dir = tempDir();
    const db = openDatabase({ kind: 'sqlite', file: path.join(dir, 'berth.sqlite') });
    try {
      await migrateToLatest(db);
      const { rows } = await sql<{ name: string; column: string }>`
        select m.name as name, p.name as column from sqlite_master m join pragma_table_info(m.name) p
        where m.type = 'table' and (p.name like '%encrypted%' or p.name = 'digest')`.execute(db);
      const stored = rows.map((row) => `${row.name}.${row.column}`).sort();
      // resource_specs.digest is a plain SHA-256 of a spec without secrets: no key involved.
      assert.deepEqual(
        stored.filter((name) => name !== 'resource_specs.digest'),
        KEYED_VALUES.map((values) => values.name).sort(),
      );
    } finally {
      await db.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
