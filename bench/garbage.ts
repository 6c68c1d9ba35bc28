/**
 * Garbage per request: what one GET, list or create allocates in the server, a figure that
 * does not depend on how busy the machine is (timings do; bytes allocated per request do not).
 *
 *   node --import tsx bench/garbage.ts [--requests 20000] [--scenarios get,list,create] [--tree DIR]
 *
 * Starts Berth in this process (bench/in-process.ts: SQLite, or PostgreSQL when DATABASE_URL
 * names it; BERTH_ENGINE=off so a create's revision costs nothing after the answer), seeds
 * 1,000 deployments (bench/seed.ts) and sends the requests from a child process (this file with
 * --client: keep-alive, 10 at a time), so the client's own garbage is not counted. Each scenario
 * has a warm-up, then V8's sampling heap profiler runs over the measured requests keeping the
 * objects the collector has already freed, so its total is everything allocated meanwhile:
 * bytes per request, its heaviest allocation sites, and the scavenges per 1,000 requests.
 * Allocation the process makes without requests (timers, the pool) is measured in an idle
 * window and taken off. `--tree DIR` measures another checkout's server (its bench/ and src/)
 * from this script, for A/B comparisons of the same figure.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: flags } = parseArgs({
  options: {
    client: { type: 'boolean', default: false },
    requests: { type: 'string', default: '20000' },
    warmup: { type: 'string', default: '3000' },
    connections: { type: 'string', default: '10' },
    deployments: { type: 'string', default: '1000' },
    scenarios: { type: 'string', default: 'get,list,create' },
    tree: { type: 'string' },
    top: { type: 'string', default: '12' },
    idle: { type: 'string', default: '3' },
  },
});

interface Plan {
  url: string;
  key: string;
  scenario: string;
  requests: number;
  connections: number;
  ids: string[];
  run: string;
}

const TEAMS = ['billing', 'search', 'support', 'growth', 'payments', 'infra', 'ml', 'data'];

/** The child: sends `requests` requests of one scenario, `connections` at a time, then exits. */
async function client(plan: Plan): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: plan.connections });
  const url = new URL(plan.url);
  let sent = 0;
  let failed = 0;
  const one = (i: number) =>
    new Promise<void>((resolve, reject) => {
      let pathName = `/v2/deployments/${plan.ids[i % plan.ids.length]}`;
      let body: string | undefined;
      if (plan.scenario === 'list') pathName = `/v2/deployments?name_contains=${TEAMS[i % TEAMS.length]}&status=READY&limit=20`;
      if (plan.scenario === 'create') {
        pathName = '/v2/deployments';
        body = JSON.stringify({
          name: `garbage-${plan.run}-${i}`,
          source: 'external_docker',
          source_config: { resource_spec: { cpu: 0.5, memory_mb: 512 } },
          source_revision_config: { image_uri: `registry.example.com/bench/agent:v${i}` },
          secrets: [
            { name: 'OPENAI_API_KEY', value: `sk-${randomBytes(18).toString('base64url')}` },
            { name: 'DATABASE_URL', value: 'postgres://app:secret@db.internal/app' },
          ],
        });
      }
      const headers: Record<string, string> = { 'x-api-key': plan.key };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const req = http.request({ host: url.hostname, port: url.port, path: pathName, method: body ? 'POST' : 'GET', agent, headers }, (res) => {
        if ((res.statusCode ?? 0) >= 300) failed++;
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end(body);
    });
  const worker = async () => {
    while (sent < plan.requests) await one(sent++);
  };
  await Promise.all(Array.from({ length: plan.connections }, worker));
  agent.destroy();
  process.stdout.write(`${JSON.stringify({ failed })}\n`);
}

function runClient(plan: Plan): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, '--client'], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve((JSON.parse(out) as { failed: number }).failed) : reject(new Error(`client exited ${code}`))));
    child.stdin.end(JSON.stringify(plan));
  });
}

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Total bytes and the heaviest sites: each sample charged to the first frame in Berth's own src/ (or the top frame). */
function summarise(head: ProfileNode, root: string): { total: number; sites: Map<string, number> } {
  const sites = new Map<string, number>();
  let total = 0;
  const own = path.join(root, 'src') + path.sep;
  const walk = (node: ProfileNode, site: string | undefined) => {
    const file = node.callFrame.url.replace(/^file:\/\//, '');
    const here = file.startsWith(own) ? `${node.callFrame.functionName || '(anonymous)'} ${path.relative(root, file)}` : site;
    total += node.selfSize;
    if (node.selfSize > 0) {
      const name = here ?? `${node.callFrame.functionName || '(anonymous)'} ${path.basename(file) || '(native)'}`;
      sites.set(name, (sites.get(name) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, here);
  };
  walk(head, undefined);
  return { total, sites };
}

async function main(): Promise<void> {
  const root = path.resolve(flags.tree ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
  const { startBenchBerth } = (await import(pathToFileURL(path.join(root, 'bench/in-process.ts')).href)) as typeof import('./in-process.js');
  const { seed } = (await import(pathToFileURL(path.join(root, 'bench/seed.ts')).href)) as typeof import('./seed.js');
  const { loadEncryptionKey, Encryptor } = (await import(
    pathToFileURL(path.join(root, 'src/security/encryption.ts')).href
  )) as typeof import('../src/security/encryption.js');
  const bench = await startBenchBerth({ name: 'garbage', env: { BERTH_ENGINE: 'off' }, ownDatabase: true });
  const session = new Session();
  session.connect();
  try {
    const principal = await bench.berth.services.tenancy.authenticate(bench.adminKey);
    if (!principal?.boundWorkspaceId) throw new Error('the bootstrap key has no workspace');
    const { key } = loadEncryptionKey(bench.config.encryptionKey, bench.config.dataDir);
    const seeded = await seed(bench.berth.db, new Encryptor(key), principal.boundWorkspaceId, Number(flags.deployments), 500);
    let scavenges = 0;
    const gcs = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) if ((entry as unknown as { detail?: { kind?: number } }).detail?.kind === 1) scavenges++;
    });
    gcs.observe({ entryTypes: ['gc'] });
    const sample = async (work: () => Promise<unknown>) => {
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 8192,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
      const started = performance.now();
      const before = scavenges;
      await work();
      const seconds = (performance.now() - started) / 1000;
      const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: ProfileNode } };
      return { seconds, scavenges: scavenges - before, ...summarise(profile.head, root) };
    };
    const idle = await sample(() => new Promise((resolve) => setTimeout(resolve, Number(flags.idle) * 1000)));
    const idleRate = idle.total / idle.seconds;
    process.stdout.write(`tree ${root}\nidle: ${(idleRate / 1024).toFixed(1)} KB/s allocated with no request (taken off below)\n`);
    const plan = (scenario: string, requests: number, run: string): Plan => ({
      url: bench.berth.address,
      key: bench.adminKey,
      scenario,
      requests,
      connections: Number(flags.connections),
      ids: seeded.sampleIds,
      run,
    });
    for (const scenario of (flags.scenarios ?? '').split(',').map((s) => s.trim())) {
      const n = Number(flags.requests);
      const stamp = Date.now().toString(36);
      if ((await runClient(plan(scenario, Number(flags.warmup), `${stamp}w`))) > 0) throw new Error(`${scenario}: warm-up requests failed`);
      let failed = 0;
      const measured = await sample(async () => {
        failed = await runClient(plan(scenario, n, stamp));
      });
      if (failed > 0) throw new Error(`${scenario}: ${failed} requests failed`);
      const perRequest = (measured.total - idleRate * measured.seconds) / n;
      process.stdout.write(
        `\n${scenario}: ${(perRequest / 1024).toFixed(1)} KB per request over ${n} requests ` +
          `(${(n / measured.seconds).toFixed(0)}/s, ${((1000 * measured.scavenges) / n).toFixed(1)} scavenges per 1,000)\n`,
      );
      const top = [...measured.sites.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(flags.top));
      for (const [site, bytes] of top) process.stdout.write(`  ${(bytes / n / 1024).toFixed(2).padStart(6)} KB  ${site}\n`);
    }
    gcs.disconnect();
  } finally {
    session.disconnect();
    await bench.close();
  }
}

if (flags.client) {
  let input = '';
  process.stdin.on('data', (chunk) => {
    input += chunk;
  });
  process.stdin.on('end', () => {
    client(JSON.parse(input) as Plan).catch((error) => {
      process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    });
  });
} else {
  main().catch((error) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}
