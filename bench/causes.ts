/**
 * Why a target of issue 4 is not met, as found by profiling (`--cpu-prof`, summarised with
 * bench/profile-summary.ts) and by timing each SQL statement. The runner writes the
 * matching text under every target a run misses; keep it current when the code or the
 * findings change. The fixes made so far are listed in bench/results.md.
 */
const CAUSES: Record<string, Partial<Record<'sqlite' | 'postgres' | 'any', string>>> = {
  get: {
    sqlite:
      'a GET costs the server ~80 µs of CPU (server CPU ÷ req/s; 250 µs before this round of fixes) against ~18 µs for ' +
      "the bare server's fixed answer. Of those 80 µs, writing the answer is ~25 µs (on loopback the kernel hands the " +
      'bytes to the load generator inside that write; the bare server pays it too), the one SQLite query ~18 µs (timed ' +
      'inside the server), Fastify routing, hooks and serialization ~15 µs, and authentication (SHA-256 of the key), the ' +
      'view and garbage collection the rest. 0.5 of the ceiling would leave ~36 µs for all of it, less than the write and ' +
      'the query alone; what is left is more processes, and on these 2 cores a second one would compete with the load ' +
      'generator. The p99 half of the target is met since the query is compiled once (see the findings).',
    postgres:
      'a GET is one round trip to PostgreSQL (the deployment joined to its latest revision; the key lookup and the ' +
      'secrets are cached), which PostgreSQL parses and plans anew each time on the same 2 cores as Berth and the load ' +
      'generator: together they spend ~360 µs of CPU per GET (server + postgres CPU columns), half of it in PostgreSQL. ' +
      "Named prepared statements would spare the planning, but they live per connection in pg's pool and fail once a " +
      'migration changes a table they select from. The target is for the embedded default.',
  },
  create: {
    any:
      '0.25 of the ceiling is ~9,000–12,000 creates/s, under 100 µs each. With `--api-only` a create costs the API ' +
      '~460 µs of CPU (≈2,000 creates/s on SQLite: body validation, one transaction writing the deployment, its revision ' +
      'and two AES-GCM-encrypted secrets, the commit); the engine in the same process then spends ~1.2 ms per revision ' +
      'carrying it to a final status (five transactions, ~35 statements, each recorded as an event), so the mixed ' +
      'figure is ~600/s. Each statement is built and compiled by Kysely (10–20 µs) inside transactions, where compiled ' +
      'SQL cannot be reused yet; running the engine as its own process (`berth engine`) moves that work off the API.',
  },
  list: {
    any:
      'with 50 connections the p99 is queueing, not the database: a page of 20 costs ~650 µs of server CPU (the listing ' +
      'query reads the index until 20 names match, ~250 µs; 20 stored configs parsed; ~25 KB serialized and written), ' +
      'so 50 listings in flight in one process wait ~30 ms for each other at the median. p99 under 20 ms at 50 ' +
      'connections needs ~2,500 listings/s, 400 µs each. With one connection the same listing has p99 near 2 ms ' +
      '(list-1 row): the index does its work at 100,000 deployments.',
  },
  pickup: {
    any: 'the engine was saturated: the pick-up delay measured is for revisions created at half its measured capacity.',
  },
  rss: {
    any:
      'an idle server is ~125 MB (node itself 41 MB, modules ~45 MB, the compiled validators, serializers and OpenAPI ' +
      'document the rest). Under 50 connections V8 lets the old generation grow to ~100 MB between full collections ' +
      'although ~30 MB of it is live (`--trace-gc`): objects of requests in flight outlive two young-generation ' +
      'collections and are promoted. The peak therefore lands between 190 and 230 MB depending on when the full ' +
      'collections fall (196 and 228 MB in two full runs of the same code). `node --optimize-for-size` keeps it at ' +
      '~120 MB but costs ~20 % of GET throughput and its p99 target, so `npm start` does not use it (README, memory); ' +
      'a hard `--max-old-space-size` would cap it at the price of crashing under a larger working set.',
  },
};

export function causeOf(target: string, database: 'sqlite' | 'postgres'): string {
  const known = CAUSES[target];
  return known?.[database] ?? known?.any ?? 'not investigated yet: profile with `npm run bench -- --cpu-prof` and summarise with bench/profile-summary.ts.';
}
