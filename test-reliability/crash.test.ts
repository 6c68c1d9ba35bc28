/**
 * Crash safety: a real Berth process under concurrent creates and PATCHes is killed with
 * SIGKILL at random points and restarted on the same database, again and again. Whatever
 * was acknowledged with a 2xx must survive; nothing half-written may be visible; every
 * revision must reach a terminal status after the last restart.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as delayed } from 'node:timers/promises';
import { sql } from 'kysely';
import { isTerminal, IN_PROGRESS_STATUSES } from '../src/domain/revision-status.js';
import { loadEncryptionKey, parseEncryptionKey, Encryptor } from '../src/security/encryption.js';
import { decryptSecretSet } from '../src/security/secret-sets.js';
import { type Client, client } from '../test/support/http.js';
import { type BerthProcess, spawnBerth, stopBerth } from '../test/support/process.js';
import { createPostgresDatabase } from '../test/support/server.js';
import { databasesToTest, type Db, openPostgres, openSqliteReadonly, runSeed, seededRandom, sleep } from './support.js';
import { deadline } from '../test/support/deadline.js';
import { skippedWithout } from '../test/support/database.js';

const KILLS = Number(process.env.RELIABILITY_KILLS ?? 10);
const CLIENT_LOOPS = 4;
/** After the last restart, every revision must be terminal within this time. */
const TERMINAL_BOUND_MS = deadline(60_000);
const IN_PROGRESS = [...IN_PROGRESS_STATUSES].join(',');

interface Secret {
  name: string;
  value: string;
}

/** One request sent: its secrets carry a unique `REQ` value, so any revision can be traced to it. */
interface Attempt {
  reqId: string;
  kind: 'create' | 'patch';
  round: number;
  /** Create: the new deployment's name. */
  name?: string;
  /** Patch: the deployment patched. */
  deploymentId?: string;
  secrets: Secret[];
}

interface Ack {
  reqId: string;
  kind: 'create' | 'patch';
  deploymentId: string;
  revisionId: string;
}

const sameSecretSet = (a: Secret[], b: Secret[]) =>
  a.length === b.length &&
  JSON.stringify([...a].sort((x, y) => x.name.localeCompare(y.name))) === JSON.stringify([...b].sort((x, y) => x.name.localeCompare(y.name)));

describe('crash safety: SIGKILL at random points under concurrent creates and PATCHes', () => {
  const cleanups: (() => Promise<void>)[] = [];
  const running = new Set<BerthProcess>();
  after(async () => {
    for (const berth of running) await stopBerth(berth, 'SIGKILL');
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  });

  for (const kind of databasesToTest()) {
    test(`[${kind}] ${KILLS} kills: every acknowledged write survives whole, every revision ends`, { timeout: deadline(300_000) }, async (t) => {
      if (await skippedWithout(kind, t)) return;
      const seed = runSeed();
      t.diagnostic(`seed ${seed} (replay with RELIABILITY_SEED=${seed})`);
      const rnd = seededRandom(seed);

      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-crash-'));
      cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
      const key = `berth_test_${randomUUID()}`;
      const env: Record<string, string> = {
        BERTH_DATA_DIR: dataDir,
        BERTH_BOOTSTRAP_API_KEY: key,
        BERTH_CONTAINER_RUNTIME: 'none',
        BERTH_RATE_LIMIT_PER_MINUTE: '0',
        LOG_LEVEL: 'info',
      };
      let encryptor: Encryptor;
      let openDb: () => Db;
      if (kind === 'postgres') {
        const database = await createPostgresDatabase();
        cleanups.push(database.drop);
        const encryptionKey = randomBytes(32).toString('hex');
        Object.assign(env, { DATABASE_URL: database.url, BERTH_ENCRYPTION_KEY: encryptionKey });
        encryptor = new Encryptor(parseEncryptionKey(encryptionKey));
        openDb = () => openPostgres(database.url);
      } else {
        encryptor = undefined as unknown as Encryptor; // the key file exists only after the first start
        openDb = () => openSqliteReadonly(path.join(dataDir, 'berth.sqlite'));
      }

      const attempts = new Map<string, Attempt>();
      const acks: Ack[] = [];
      const deploymentNames = new Map<string, string>();
      const failures: string[] = [];
      let counter = 0;
      /** Resolves once `acks` holds this many writes (the round's kill waits for answers, not for a time). */
      const ackWaiters: { count: number; resolve: () => void }[] = [];
      const acknowledged = (count: number) => new Promise<void>((resolve) => (acks.length >= count ? resolve() : ackWaiters.push({ count, resolve })));
      const noteAck = () => {
        for (const waiter of ackWaiters.filter((w) => acks.length >= w.count)) {
          ackWaiters.splice(ackWaiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      };

      const outputs: string[][] = [];
      async function start(): Promise<BerthProcess> {
        const berth = await spawnBerth(env);
        outputs.push(berth.output);
        running.add(berth);
        void berth.exited.then(() => running.delete(berth));
        return berth;
      }

      /** One client: creates and PATCHes until the server dies under it. */
      async function clientLoop(api: Client, round: number, state: { dead: boolean }): Promise<void> {
        while (!state.dead) {
          const known = [...deploymentNames.keys()];
          const create = known.length < 4 || rnd() < 0.3;
          const reqId = `req-${randomUUID()}`;
          const secrets: Secret[] = [
            { name: 'REQ', value: reqId },
            ...Array.from({ length: Math.floor(rnd() * 4) }, (_, j) => ({ name: `S_${j}`, value: `sv-${randomUUID()}` })),
          ];
          const attempt: Attempt = { reqId, kind: create ? 'create' : 'patch', round, secrets };
          let request: Promise<Awaited<ReturnType<Client>>>;
          if (create) {
            attempt.name = `crash-${round}-${(counter += 1)}`;
            request = api('POST', '/v2/deployments', {
              body: {
                name: attempt.name,
                source: 'external_docker',
                source_config: { resource_spec: { cpu: 0.5, memory_mb: 128 } },
                source_revision_config: { image_uri: `localhost/crash:${counter}` },
                secrets,
              },
            });
          } else {
            attempt.deploymentId = known[Math.floor(rnd() * known.length)] as string;
            const body: Record<string, unknown> = { secrets };
            if (rnd() < 0.3) body.source_revision_config = { image_uri: `localhost/crash:p${counter}` };
            request = api('PATCH', `/v2/deployments/${attempt.deploymentId}`, { body });
          }
          attempts.set(reqId, attempt);
          let res: Awaited<ReturnType<Client>>;
          try {
            res = await request;
          } catch (error) {
            if (!state.dead) failures.push(`round ${round}: ${attempt.kind} failed while the server was up: ${(error as Error).message}`);
            return;
          }
          const expected = create ? 201 : 200;
          if (res.status !== expected) {
            failures.push(`round ${round}: ${attempt.kind} answered ${res.status}: ${res.text.slice(0, 300)}`);
            continue;
          }
          const body = res.body as { id: string; latest_revision_id: string | null; secrets: Secret[] };
          if (!body.latest_revision_id) failures.push(`round ${round}: ${attempt.kind} of ${body.id} answered without latest_revision_id`);
          if (!sameSecretSet(body.secrets, secrets)) failures.push(`round ${round}: ${attempt.kind} of ${body.id} answered other secrets than sent`);
          acks.push({ reqId, kind: attempt.kind, deploymentId: body.id, revisionId: body.latest_revision_id as string });
          if (create) deploymentNames.set(body.id, attempt.name as string);
          noteAck();
        }
      }

      /**
       * A reader beside the writers: whatever it sees while writes are in flight is whole
       * (a listed deployment has its latest revision, and that revision answers).
       */
      async function readerLoop(api: Client, round: number, state: { dead: boolean }): Promise<void> {
        while (!state.dead) {
          try {
            const page = await api('GET', `/v2/deployments?limit=100&offset=${Math.floor(rnd() * Math.max(1, deploymentNames.size - 50))}`);
            if (page.status !== 200) {
              failures.push(`round ${round}: reader got ${page.status}: ${page.text.slice(0, 200)}`);
              continue;
            }
            const listed = page.body.resources as { id: string; latest_revision_id: string | null; secrets: Secret[] }[];
            for (const d of listed) {
              if (!d.latest_revision_id) failures.push(`round ${round}: deployment ${d.id} visible without a revision`);
              if (!d.secrets.some((s) => s.name === 'REQ')) failures.push(`round ${round}: deployment ${d.id} visible without its secrets`);
            }
            const one = listed[Math.floor(rnd() * listed.length)];
            if (one) {
              const revision = await api('GET', `/v2/deployments/${one.id}/revisions/${one.latest_revision_id}`);
              if (revision.status !== 200) failures.push(`round ${round}: latest revision ${one.latest_revision_id} of ${one.id} answers ${revision.status}`);
            }
          } catch (error) {
            if (!state.dead) failures.push(`round ${round}: read failed while the server was up: ${(error as Error).message}`);
            return;
          }
        }
      }

      /** Pages through a list endpoint. */
      async function listAll<T>(api: Client, pathAndQuery: string): Promise<T[]> {
        const items: T[] = [];
        for (let offset = 0; ;) {
          const sep = pathAndQuery.includes('?') ? '&' : '?';
          const res = await api('GET', `${pathAndQuery}${sep}limit=100&offset=${offset}`);
          assert.equal(res.status, 200, `GET ${pathAndQuery}: ${res.text.slice(0, 300)}`);
          items.push(...(res.body.resources as T[]));
          if (res.body.resources.length < 100) return items;
          offset = res.body.offset;
        }
      }

      /** After each restart: everything acknowledged so far is listed, and no deployment lacks its first revision. */
      async function checkVisible(api: Client, round: number): Promise<void> {
        const listed = await listAll<{ id: string; latest_revision_id: string | null }>(api, '/v2/deployments');
        const ids = new Set(listed.map((d) => d.id));
        for (const id of deploymentNames.keys()) assert.ok(ids.has(id), `after restart ${round}: acknowledged deployment ${id} is missing`);
        for (const d of listed) assert.ok(d.latest_revision_id, `after restart ${round}: deployment ${d.id} is visible without a revision`);
      }

      const started = Date.now();
      let earlyRounds = 0;
      for (let round = 1; round <= KILLS; round += 1) {
        const berth = await start();
        const api = client(berth.url, { key });
        await checkVisible(api, round);
        const state = { dead: false };
        const loops = [...Array.from({ length: CLIENT_LOOPS }, () => clientLoop(api, round, state)), readerLoop(api, round, state)];
        // Mostly mid-load: once this round has had a number of writes answered (a count, not a
        // time, so that a busy machine answering fewer per second still kills under load), then
        // a moment more, so that the kill lands among requests in flight. Sometimes right after
        // start, while the engine resumes the last round's work.
        // At most a fifth of the rounds are early, and a round under load waits for at least 7
        // writes: so the run has more than KILLS * 5 acknowledged writes, on any machine.
        const early = earlyRounds < Math.floor(KILLS / 5) && rnd() < 0.2;
        if (early) earlyRounds += 1;
        const waitFor = early ? 0 : 7 + Math.floor(rnd() * 18);
        const delay = early ? Math.floor(rnd() * 100) : Math.floor(rnd() * 300);
        if (!early) {
          const giveUp = new AbortController();
          const answered = await Promise.race([
            acknowledged(acks.length + waitFor).then(() => true),
            berth.exited.then(() => false),
            delayed(deadline(120_000), false, { signal: giveUp.signal }).catch(() => false),
          ]).finally(() => giveUp.abort());
          assert.ok(
            answered,
            `round ${round}: ${waitFor} writes were not answered (the server ${berth.child.exitCode === null ? 'is up' : 'exited'}); ${failures.slice(0, 3).join('; ')}`,
          );
        }
        await sleep(delay);
        state.dead = true;
        berth.child.kill('SIGKILL');
        await berth.exited;
        await Promise.all(loops);
        t.diagnostic(
          `round ${round}: killed ${early ? `${delay} ms after start` : `${delay} ms after ${waitFor} more writes were answered`}; ${attempts.size} requests sent, ${acks.length} acknowledged so far`,
        );
      }
      assert.deepEqual(failures, [], 'requests failed while the server was up');
      assert.ok(acks.length > KILLS * 5, `enough acknowledged writes to mean something (${acks.length})`);

      // The last restart: it must carry every revision to a terminal status, and lose nothing.
      const final = await start();
      const api = client(final.url, { key });
      const restartedAt = Date.now();
      await checkVisible(api, KILLS + 1);
      const deployments = await listAll<{ id: string; name: string }>(api, '/v2/deployments');
      let unsettled = deployments.map((d) => d.id);
      while (unsettled.length > 0) {
        const still: string[] = [];
        for (let i = 0; i < unsettled.length; i += 8) {
          const batch = unsettled.slice(i, i + 8);
          const answers = await Promise.all(batch.map((id) => api('GET', `/v2/deployments/${id}/revisions?status=${IN_PROGRESS}&limit=1`)));
          answers.forEach((res, j) => {
            assert.equal(res.status, 200, res.text);
            if (res.body.resources.length > 0) still.push(batch[j] as string);
          });
        }
        unsettled = still;
        if (unsettled.length === 0) break;
        assert.ok(
          Date.now() - restartedAt < TERMINAL_BOUND_MS,
          `${unsettled.length} deployments still have unfinished revisions ${TERMINAL_BOUND_MS} ms after the last restart (e.g. ${unsettled[0]})`,
        );
        await sleep(250);
      }
      t.diagnostic(`every revision terminal ${Date.now() - restartedAt} ms after the last restart`);

      // Through the API: acknowledged deployments and revisions exist; the latest revision's secrets are its request's.
      const reqOf = (secrets: Secret[]) => secrets.find((s) => s.name === 'REQ')?.value;
      const revisionsByDeployment = new Map<string, { id: string; revision_number: number; status: string }[]>();
      for (const d of deployments) {
        revisionsByDeployment.set(d.id, await listAll(api, `/v2/deployments/${d.id}/revisions`));
      }
      for (const [id, name] of deploymentNames) {
        const res = await api('GET', `/v2/deployments/${id}`);
        assert.equal(res.status, 200, `acknowledged deployment ${id} (${name}) answers ${res.status}`);
        const latest = res.body.latest_revision_id as string | null;
        assert.ok(latest, `deployment ${id} has no latest revision`);
        const revision = await api('GET', `/v2/deployments/${id}/revisions/${latest}`);
        assert.equal(revision.status, 200, `latest revision ${latest} of ${id} answers ${revision.status}`);
        const req = reqOf(res.body.secrets);
        const attempt = req ? attempts.get(req) : undefined;
        assert.ok(attempt, `deployment ${id}: its secrets name no request that was sent (${JSON.stringify(res.body.secrets).slice(0, 200)})`);
        assert.ok(sameSecretSet(res.body.secrets, attempt.secrets), `deployment ${id}: latest secrets differ from those of request ${req}`);
      }
      for (const ack of acks) {
        const revisions = revisionsByDeployment.get(ack.deploymentId) ?? [];
        assert.ok(
          revisions.some((r) => r.id === ack.revisionId),
          `acknowledged revision ${ack.revisionId} (${ack.kind} ${ack.reqId}) of ${ack.deploymentId} is not listed`,
        );
      }
      for (const [id, revisions] of revisionsByDeployment) {
        for (const r of revisions) assert.ok(isTerminal(r.status), `revision ${r.id} of ${id} is ${r.status}`);
      }
      await stopBerth(final);

      // In the database itself, read-only after the server stopped.
      if (kind === 'sqlite') encryptor = new Encryptor(loadEncryptionKey(undefined, dataDir).key);
      const db = openDb();
      try {
        if (kind === 'sqlite') {
          const integrity = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(db);
          assert.deepEqual(
            integrity.rows.map((r) => r.integrity_check),
            ['ok'],
          );
          const orphans = await sql`pragma foreign_key_check`.execute(db);
          assert.deepEqual(orphans.rows, [], 'rows whose parent is missing');
        }
        const rows = await db.selectFrom('deployments').select(['id', 'name', 'latest_revision_id', 'revision_count']).execute();
        const revisions = await db.selectFrom('revisions').select(['id', 'deployment_id', 'seq', 'status', 'secret_set_id']).execute();
        const secretRows = await db.selectFrom('secret_set_entries').selectAll().orderBy('set_id').orderBy('position').execute();
        const deploymentById = new Map(rows.map((d) => [d.id, d]));
        const revisionById = new Map(revisions.map((r) => [r.id, r]));

        for (const id of deploymentNames.keys()) assert.ok(deploymentById.has(id), `acknowledged deployment ${id} is not in the database`);
        for (const ack of acks) {
          assert.equal(revisionById.get(ack.revisionId)?.deployment_id, ack.deploymentId, `acknowledged revision ${ack.revisionId} is not in the database`);
        }

        const byDeployment = new Map<string, typeof revisions>();
        for (const r of revisions) byDeployment.set(r.deployment_id, [...(byDeployment.get(r.deployment_id) ?? []), r]);
        for (const d of rows) {
          const own = (byDeployment.get(d.id) ?? []).sort((a, b) => Number(a.seq) - Number(b.seq));
          assert.ok(own.length > 0, `deployment ${d.id} has no revision`);
          assert.deepEqual(
            own.map((r) => Number(r.seq)),
            own.map((_, i) => i + 1),
            `revisions of ${d.id} are not numbered 1..n`,
          );
          assert.equal(Number(d.revision_count), own.length, `revision_count of ${d.id}`);
          assert.equal(d.latest_revision_id, own.at(-1)?.id, `latest_revision_id of ${d.id} is not its newest revision`);
        }

        // Every revision's secrets, decrypted, are exactly those its request carried.
        const secretsBySet = new Map<string, Secret[]>();
        for (const row of secretRows) {
          const [secret] = decryptSecretSet(encryptor, [row]) as [Secret];
          secretsBySet.set(row.set_id, [...(secretsBySet.get(row.set_id) ?? []), secret]);
        }
        const secretsByRevision = new Map<string, Secret[]>(
          revisions.flatMap((r) => (r.secret_set_id ? [[r.id, secretsBySet.get(r.secret_set_id) ?? []] as [string, Secret[]]] : [])),
        );
        const revisionOfRequest = new Map<string, string>();
        for (const r of revisions) {
          const secrets = secretsByRevision.get(r.id) ?? [];
          const req = reqOf(secrets);
          assert.ok(req, `revision ${r.id} of ${r.deployment_id} has no secrets (a revision without its secrets)`);
          const attempt = attempts.get(req);
          assert.ok(attempt, `revision ${r.id} carries request id ${req}, which was never sent`);
          assert.ok(!revisionOfRequest.has(req), `request ${req} made two revisions (${revisionOfRequest.get(req)} and ${r.id})`);
          revisionOfRequest.set(req, r.id);
          assert.ok(sameSecretSet(secrets, attempt.secrets), `revision ${r.id}: stored secrets differ from request ${req}'s`);
          if (attempt.kind === 'create') {
            assert.equal(Number(r.seq), 1, `request ${req} created a deployment but its revision is number ${r.seq}`);
            assert.equal(deploymentById.get(r.deployment_id)?.name, attempt.name);
          } else {
            assert.equal(r.deployment_id, attempt.deploymentId, `request ${req} patched ${attempt.deploymentId} but its revision is on ${r.deployment_id}`);
          }
          assert.ok(isTerminal(r.status), `revision ${r.id} is ${r.status}`);
        }
        for (const ack of acks) {
          assert.equal(revisionOfRequest.get(ack.reqId), ack.revisionId, `acknowledged request ${ack.reqId}: its revision does not carry its secrets`);
          const sent = attempts.get(ack.reqId) as Attempt;
          assert.equal(secretsByRevision.get(ack.revisionId)?.length, sent.secrets.length, `revision ${ack.revisionId}: stored secrets`);
        }
        // No secret value (nor the API key) reached the output of any of the processes.
        const output = outputs.map((lines) => lines.join('')).join('');
        assert.ok(output.length > 1000, 'the processes logged');
        const values = [key, ...[...attempts.values()].flatMap((a) => a.secrets.filter((s) => s.name !== 'REQ').map((s) => s.value))];
        const leaked = values.filter((v) => output.includes(v));
        assert.deepEqual(leaked, [], `${leaked.length} secret values appear in the server output`);
        t.diagnostic(
          `${KILLS} kills in ${Math.round((Date.now() - started) / 1000)} s: ${rows.length} deployments, ${revisions.length} revisions, ` +
            `${acks.length} of ${attempts.size} requests acknowledged`,
        );
      } finally {
        await db.destroy();
      }
    });
  }
});
