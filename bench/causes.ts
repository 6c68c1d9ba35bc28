/**
 * Why a target of issue 4 or 14 is not met, as found by profiling (`--cpu-prof`, summarised with
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
      'a GET is one round trip to PostgreSQL (the deployment joined to its latest revision, a named prepared ' +
      'statement; the key lookup and the secrets are cached), and PostgreSQL runs on the same 2 cores as Berth and the ' +
      'load generator; see the PostgreSQL GET target of issue 14 for where the CPU goes. The target is for the ' +
      'embedded default.',
  },
  create: {
    any:
      '0.25 of the ceiling is ~8,000 creates/s here, ~120 µs each. A create costs the API ~0.9 ms of CPU on this machine ' +
      '(`--api-only`: 1,064/s; body validation, one transaction of 7 statements whose UUID keys land on random index ' +
      'pages, AES-GCM for the secrets, the FTS5 trigram row of the name, the commit) and the engine in the same process ' +
      'then carries the revision to a final status. Statements are compiled once and WAL checkpoints run on another ' +
      'thread (bench/results.md, 2026-11-24 23:45); what remains is per-row work in SQLite, including FTS5 segment ' +
      'merges that pause a commit for 200–290 ms every ~1,000 creates at 100,000 names.',
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
  'search-1': {
    postgres:
      'PostgreSQL plans a LIKE against its GIN trigram index by reading ~300 index pages for the estimate (~1.4 ms) ' +
      'before the bitmap scan (~0.5 ms), on the same 2 cores as Berth and the load generator.',
  },
  'search-50': {
    sqlite:
      'a rare-search page costs the one Berth process ~1.5 ms of CPU (bench/list-cpu.ts with the rare path): the FTS5 ' +
      'candidates ~130 µs, the page statement ~490 µs (~100 primary-key lookups on text ids, their LIKE, the sort, 20 ' +
      'rows joined to their revisions), then 20 deployments decoded, viewed and serialized (~24 KB) and the garbage ' +
      'collection that follows. 1,000 pages/s need under 1 ms each.',
    postgres:
      'PostgreSQL is the bound (~1 core for ~530 requests/s): planning the candidate LIKE against the GIN trigram ' +
      'index (~1.4 ms, ~300 index pages read for the estimate) and scanning it (~0.5 ms), on 2 cores shared with Berth.',
  },
  'list-50': {
    any:
      'the p99 is queueing behind ~1.0–1.1 ms of CPU per page (bench/list-cpu.ts): the SQLite statement walking the ' +
      'listing index and testing names ~360 µs, garbage collection ~230 µs, serialization and bytes ~150 µs, decoding ' +
      'and views ~100 µs; 50 pages in flight on one process wait ~50 ms for each other. p99 under 30 ms needs ~0.4 ms ' +
      'per page.',
  },
  engine: {
    sqlite:
      'a revision costs the engine ~1.1 ms of CPU: two commits ~250 µs (each writes ~10 WAL pages: the revision, ' +
      'deployment, event and step rows and their indexes), ~12 statements ~300 µs, the instant runtime’s GET /ok over ' +
      'a kept-alive connection ~150 µs, and the engine’s own work (effects, events, metrics) the rest.',
    postgres:
      'every statement is a round trip to PostgreSQL, which runs on the same 2 cores: ~270–290 revisions/s over ' +
      'loopback TCP and ~400/s over the Unix socket in separate runs (docs/operations.md recommends the socket).',
  },
  'create-engine': {
    sqlite:
      'a create costs ~0.9 ms of API CPU here (`--api-only` 1,064/s; see the create target above) before the engine ' +
      'does its part in the same process; 2,000/s would need both in 500 µs.',
  },
  'pg-get': {
    postgres:
      'Berth spends ~180 µs of CPU per GET on PostgreSQL (a profile: the write of each query to PostgreSQL’s socket ' +
      '~35 µs, as it wakes the backend; pg’s parsing of the row description and rows ~15 µs; garbage collection) and ' +
      'PostgreSQL ~84 µs executing the prepared statement. At 0.2 of the ceiling (~9,000/s) both together would have ' +
      '~195 µs per GET on the cores the load generator leaves, against ~260 µs now. Over the Unix socket the ratio ' +
      'is 0.12, over loopback TCP 0.10.',
  },
};

export function causeOf(target: string, database: 'sqlite' | 'postgres'): string {
  const known = CAUSES[target];
  return known?.[database] ?? known?.any ?? 'not investigated yet: profile with `npm run bench -- --cpu-prof` and summarise with bench/profile-summary.ts.';
}
