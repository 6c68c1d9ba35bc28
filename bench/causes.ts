/**
 * Why a target of issue 4 is not met, as found by profiling (`--cpu-prof`, summarised with
 * bench/profile-summary.ts) and by timing each SQL statement. The runner writes the
 * matching text under every target a run misses; keep it current when the code or the
 * findings change. The fixes made so far are listed in bench/results.md.
 */
const CAUSES: Record<string, Partial<Record<'sqlite' | 'postgres' | 'any', string>>> = {
  get: {
    sqlite:
      'a GET costs the server ~250 µs of CPU (350 µs before the statement cache and the key cache) against ~25 µs for the ' +
      "bare server's fixed answer: Fastify routing, hooks and serialization of the ~1.4 KB body (~50 µs: Berth's own /ok " +
      'reaches ~20,000 req/s), three SQL queries built by Kysely (the deployment, its latest revision, that revision\'s ' +
      'secrets), AES-GCM decryption of the secrets and JSON parsing of the stored configs. One Node process does all of ' +
      'it on one core while the load generator takes most of the other of the 2 cores, so Berth tops out at ~4,000 req/s ' +
      'here against a ceiling of 25,000–40,000. p99 under 10 ms at 50 connections needs more than 5,000 req/s from ' +
      'queueing alone (50 requests in flight within 10 ms). Closing the gap takes changes outside this work: one query for ' +
      'a deployment with its latest revision and secrets (services/deployment-records.ts), a cache of deployment views, or ' +
      'several server processes.',
    postgres:
      'a GET is three round trips to PostgreSQL (the key lookup is cached), each parsed and planned anew by the server, ' +
      'which shares the 2 cores with Berth and the load generator: Berth and PostgreSQL together spend ~700 µs of CPU per ' +
      'GET (server + postgres CPU columns), against ~25 µs for the bare server. The same structural changes as on SQLite ' +
      'would help (one query per GET, a view cache); prepared statements would spare the planning but break the running ' +
      'servers whenever a migration changes a table they select `*` from.',
  },
  create: {
    sqlite:
      'a create costs ~1 ms of server CPU in the API (one transaction: listener check, deployment, revision and secrets ' +
      'inserted, the answer read back; AES-GCM encryption; the commit writes ~15 WAL pages) and then ~3 ms more in the ' +
      'engine of the same process, which carries every new revision to DEPLOY_FAILED with about 35 statements in 5 ' +
      'transactions (BERTH_CONTAINER_RUNTIME=none; `--api-only` measures the API alone). SQLite serialises both on its one ' +
      'connection. 0.25 of the ceiling means ~2,500 creates/s, 400 µs each including the engine. Checkpoints were a fifth ' +
      'of the API time and are now batched (wal_autocheckpoint 4,000); the rest needs fewer statements and transactions per ' +
      'revision in the engine (src/engine, outside this work) or the engine in its own process (`berth engine`).',
    postgres:
      'each create is one transaction of six round trips to PostgreSQL, which shares the 2 cores with Berth and the load ' +
      'generator; the engine in the same process then makes ~35 more round trips per revision (it drains the backlog ' +
      'for about a minute after the scenario). 0.25 of the ceiling means ~2,500 creates/s.',
  },
  list: {
    any:
      'with 50 connections the p99 is queueing, not the database: a page of 20 costs ~1.3–1.5 ms of server CPU (the list ' +
      'query ~0.25 ms on SQLite, 20 latest revisions and ~30 secrets read and decrypted, stored JSON parsed, ~25 KB ' +
      'serialized), so 50 listings in flight in one process wait ~60 ms for each other at the median. With one connection ' +
      'the same listing has p99 well under 20 ms (list-1 row), so the index is doing its work at 100,000 deployments.',
  },
  pickup: {
    any: 'the engine was saturated: the pick-up delay measured is for revisions created at half its measured capacity.',
  },
  rss: {
    any:
      'most of it is there before the first request: node alone is 41 MB; tsx, which compiles the TypeScript at start in ' +
      'its own loader thread and keeps source maps, adds ~46 MB; the modules (Fastify with swagger, Ajv, Kysely, pg, ' +
      'better-sqlite3, pino) bring an idle server to 170–190 MB (125–145 MB when the same code runs compiled, without ' +
      "tsx). Under load V8's young generation (32 MB reserved by default) and the working set of 50 requests in flight " +
      'add 50–80 MB. Measured at 100,000 deployments under the get and list load: tsx 237–257 MB peak; tsx with ' +
      '`--max-semi-space-size=4` 208 MB; compiled 219 MB; compiled with `--max-semi-space-size=4` 196 MB, at the same ' +
      'throughput. Both are changes to how Berth is started (package.json start script, bin/berth.js), outside this work.',
  },
};

export function causeOf(target: string, database: 'sqlite' | 'postgres'): string {
  const known = CAUSES[target];
  return known?.[database] ?? known?.any ?? 'not investigated yet: profile with `npm run bench -- --cpu-prof` and summarise with bench/profile-summary.ts.';
}
