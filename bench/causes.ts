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
      'an idle server at 100,000 deployments is ~185 MB. Under 50 connections of listings V8 lets the old generation ' +
      'grow to ~300 MB between full collections while ~75 MB of it is live after each (`--trace-gc`, 2026-11-25: ' +
      '`Mark-Compact 303.7 -> 74.3 MB`): its limit for the next full collection is a multiple of what survived the last. ' +
      'The peak therefore lands near 400–430 MB, of which the garbage awaiting the next collection is most; RSS falls back ' +
      'to ~230 MB after. A hard `--max-old-space-size` would cap it at the price of crashing under a larger working ' +
      'set, and `node --optimize-for-size` costs ~20 % of GET throughput (README, memory).',
  },
  'search-1': {
    postgres:
      'both statements of a search are prepared, so PostgreSQL no longer plans them per needle (that read ~300 trigram ' +
      'index pages, ~1.4 ms); what remains is the GIN scan (~0.3–0.5 ms) and the page (~0.3 ms), on the same 2 cores as ' +
      'Berth and the load generator.',
  },
  'search-50': {
    sqlite:
      'a rare-search page costs the one Berth process ~1.5 ms of CPU (bench/list-cpu.ts with the rare path): the FTS5 ' +
      'candidates ~130 µs, the page statement ~490 µs (~100 primary-key lookups on text ids, their LIKE, the sort, 20 ' +
      'rows joined to their revisions), then 20 deployments decoded, viewed and serialized (~24 KB) and the garbage ' +
      'collection that follows. 1,000 pages/s need under 1 ms each.',
    postgres:
      'PostgreSQL is the bound: ~1.2 ms of its CPU per search (0.96 cores at ~810/s) on the 2 cores it shares with ' +
      'Berth (~0.6 cores) and the load generator. Both statements are prepared and run on generic plans (bench/results.md, ' +
      '2026-11-25); the GIN trigram scan for the candidates is ~0.3–0.5 ms (its posting lists for trigrams such as ' +
      '`-04` hold ~1,000 names each), the page statement ~0.3 ms, and each statement’s round trip wakes the backend.',
  },
  'list-50': {
    sqlite:
      'the p99 is queueing on one process: 50 connections keep 50 pages waiting, so the median is ~50 pages of CPU and ' +
      'the p99 ~1.8 times that (a page that arrives just after the event loop took a batch waits for that batch and then ' +
      'its own). A page costs the server ~470–530 µs of CPU (server CPU ÷ req/s; profile of 2026-11-25): the SQLite ' +
      'statement ~230 µs (walking ~500 names of the listing index ~40 µs; 20 rows read with their revision and resource ' +
      'spec and turned into JS values the rest), serialization ~60 µs, garbage collection ~50–70 µs, the page-size bound ' +
      '~25 µs, decoding and views ~40 µs, HTTP and Fastify the rest. p99 under 30 ms needs ~330 µs a page, or a second ' +
      'core serving pages.',
    postgres:
      'the target is for the embedded default. On PostgreSQL a page is ~0.8 ms of Berth CPU and ~0.7 ms of PostgreSQL ' +
      '(it reads each of the ~500 rows the walk tests from the heap: its planner takes the narrower ' +
      '(workspace, created_at, id) index), on the same 2 cores.',
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
      'Berth spends ~100–120 µs of CPU per GET on PostgreSQL (a profile of 2026-11-25: socket writes ~25 % of it, the ' +
      'HTTP answer and the query to PostgreSQL, each of which wakes the other side; pg’s parsing of the row ~10 µs; ' +
      'garbage collection ~12 %) and PostgreSQL ~50 µs executing the prepared statement, on the 2 cores the load ' +
      'generator also uses (~0.25 cores). 0.2 of the ceiling here is ~11,500 GETs/s, ~87 µs of Berth CPU each. ' +
      'Runs of the same code here gave 0.14–0.17 (7,500–9,500 GETs/s); over loopback TCP it is lower again.',
  },
  'tail-get': {
    any:
      'the server is one process saturated by a closed loop of 50 connections, so its median is the queue (Little: p50 ≈ ' +
      '50 / rate) and its p99 about two turns of the event loop: a request that arrives just after a turn began waits for ' +
      "that turn and its own (the loop's p99 and stall counts beside it show whether anything else held it; on 2026-11-27 nothing did). p99 under 25 ms " +
      'needs the median near 12 ms, ~4,200 GETs/s: less CPU per GET or a second process. Until 2026-11-27 the window also ' +
      "held each new connection's first answer, which libuv (one accept per turn of a busy loop) delayed by up to ~1 s; it is " +
      'reported apart now.',
  },
  'tail-list': {
    any:
      'as for GET: one saturated process, p99 about two turns of the loop. A page costs ~0.5 ms of CPU and allocates ~0.3 MB, ' +
      'so 50 connections keep ~30 pages queued in one process and a 4 MB young generation is scavenged every ~13 pages.',
  },
  'tail-create': {
    any:
      'as for GET: one saturated process, and a turn of the loop serves every create that is ready (~2.4 ms of CPU each, ' +
      "the API's transaction and the engine's work on the revision), so turns last 100–200 ms and the p99 is about two of " +
      'them. p99 under 100 ms needs creates at about twice the rate (less CPU each, or the engine on the other core). The ' +
      "earlier 0.6–2 s p99s were mostly each new connection's first answer: libuv accepts one connection per turn of the " +
      'loop, so the last of 50 connections opened at once while creates saturate the server waits ~3 s (now reported apart).',
  },
};

export function causeOf(target: string, database: 'sqlite' | 'postgres'): string {
  const known = CAUSES[target];
  return known?.[database] ?? known?.any ?? 'not investigated yet: profile with `npm run bench -- --cpu-prof` and summarise with bench/profile-summary.ts.';
}
