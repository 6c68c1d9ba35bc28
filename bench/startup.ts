/**
 * `node --import tsx bench/startup.ts`: what starting Berth costs before it does anything.
 *
 * For each target (the server module under tsx, as every test file imports it; the compiled server
 * under plain node, as `npm start`; the compiled CLI printing its help, as every `berth` command
 * starts) it reports the modules loaded, counted once with a load hook (ESM through `module.register`,
 * CommonJS through `Module._load`) and grouped by package, and the median of N fresh processes' import
 * time and CPU time (the loader-hooks thread's included). Module counts are deterministic; times on a shared
 * machine are not, so the runs of all targets (and with `--against DIR`, of another checkout built with
 * `npm run build`, for A/B) alternate.
 *
 * Flags: --runs N (default 7), --against DIR, --targets a,b (server-tsx, server-dist, cli-help),
 * --files a.ts,b.ts (more targets: these files of the tree imported under tsx, e.g. test support modules),
 * --top N packages listed per target (default 12).
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '7' },
    against: { type: 'string' },
    targets: { type: 'string', default: 'server-tsx,server-dist,cli-help' },
    files: { type: 'string' },
    top: { type: 'string', default: '12' },
  },
});

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface Target {
  name: string;
  /** Under tsx (`--import tsx`) or plain node. */
  tsx: boolean;
  /** File imported, relative to the tree. */
  file: string;
  /** When set, the file is run as the program with these arguments (its exit ends the measurement). */
  argv?: string[];
}

const TARGETS: Target[] = [
  { name: 'server-tsx', tsx: true, file: 'src/server.ts' },
  { name: 'server-dist', tsx: false, file: 'dist/server.js' },
  { name: 'cli-help', tsx: false, file: 'dist/main.js', argv: ['--help'] },
];

/** Runs in the loader-hooks thread: reports every URL loaded, in order, over the port it is given. */
const HOOK = `let port;
export function initialize(data) { port = data.port; }
export async function load(url, context, nextLoad) { port.postMessage(url); return nextLoad(url, context); }`;

/** The child's script: optionally counts modules, imports the target, prints one JSON line on stderr at exit. */
function childScript(target: Target, file: string, count: boolean): string {
  return `
import { writeSync } from 'node:fs';
import Module, { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
const seen = new Set();
let sentinel;
if (${count}) {
  const { port1, port2 } = new MessageChannel();
  const done = new Promise((resolve) => { sentinel = resolve; });
  port1.on('message', (url) => (url === 'data:text/javascript,' ? sentinel() : seen.add(url)));
  port1.unref();
  register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(HOOK)}), { data: { port: port2 }, transferList: [port2] });
  const load = Module._load;
  Module._load = function (request, parent, isMain) {
    try { const f = Module._resolveFilename(request, parent, isMain); if (f.startsWith('/')) seen.add('file://' + f); } catch {}
    return load.apply(this, arguments);
  };
  sentinel.done = done;
}
const started = performance.now();
let imported;
process.on('exit', () => {
  const cpu = process.cpuUsage();
  writeSync(2, '\\nSTARTUP ' + JSON.stringify({ importMs: (imported ?? performance.now()) - started, cpuMs: (cpu.user + cpu.system) / 1000, urls: [...seen] }) + '\\n');
});
${target.argv ? `process.argv = [process.argv[0], ${JSON.stringify(file)}, ...${JSON.stringify(target.argv)}];` : ''}
await import(${JSON.stringify(pathToFileURL(file).href)});
imported = performance.now();
if (${count}) { await import('data:text/javascript,'); await sentinel.done; }
${target.argv ? '' : 'process.exit(0);'}
`;
}

interface Sample {
  importMs: number;
  cpuMs: number;
  urls: string[];
}

function runOnce(target: Target, tree: string, count: boolean): Sample {
  const file = path.join(tree, target.file);
  const args = [...(target.tsx ? ['--import', 'tsx'] : []), '--input-type=module', '-e', childScript(target, file, count)];
  const child = spawnSync(process.execPath, args, {
    cwd: tree,
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'silent' },
  });
  const line = child.stderr
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('STARTUP '));
  if (!line) throw new Error(`${target.name} in ${tree} printed no result (exit ${child.status}):\n${child.stderr.slice(-3000)}`);
  return JSON.parse(line.slice('STARTUP '.length)) as Sample;
}

/** node_modules/<package> (the innermost), or the tree's own top folder (src, dist). */
function groupOf(url: string, tree: string): string {
  if (!url.startsWith('file:')) return url.split(':')[0] ?? url;
  const file = fileURLToPath(url);
  const at = file.lastIndexOf('/node_modules/');
  if (at >= 0) {
    const parts = file.slice(at + '/node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? file);
  }
  const relative = path.relative(tree, file);
  return relative.startsWith('..') ? 'outside' : (relative.split(path.sep)[0] ?? relative);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

const trees = [{ label: 'this tree', dir: ROOT }, ...(flags.against ? [{ label: path.resolve(flags.against), dir: path.resolve(flags.against) }] : [])];
const selected = [
  ...TARGETS.filter((t) => flags.targets.split(',').includes(t.name)),
  ...(flags.files ? flags.files.split(',').map((file) => ({ name: file, tsx: true, file })) : []),
];
const runs = Number(flags.runs);
const top = Number(flags.top);

process.stdout.write(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} on ${os.cpus().length} cores\n\n`,
);
for (const target of selected) {
  for (const tree of trees) {
    const { urls } = runOnce(target, tree.dir, true);
    const groups = new Map<string, number>();
    for (const url of urls) groups.set(groupOf(url, tree.dir), (groups.get(groupOf(url, tree.dir)) ?? 0) + 1);
    const listed = [...groups].sort((a, b) => b[1] - a[1]).slice(0, top);
    process.stdout.write(`${target.name} (${tree.label}): ${urls.length} modules; ${listed.map(([g, n]) => `${g} ${n}`).join(', ')}\n`);
  }
}

const times = new Map<string, { importMs: number[]; cpuMs: number[] }>();
for (let run = 0; run < runs; run++) {
  for (const target of selected) {
    for (const tree of run % 2 ? [...trees].reverse() : trees) {
      const sample = runOnce(target, tree.dir, false);
      const key = `${target.name} (${tree.label})`;
      const entry = times.get(key) ?? { importMs: [], cpuMs: [] };
      entry.importMs.push(sample.importMs);
      entry.cpuMs.push(sample.cpuMs);
      times.set(key, entry);
    }
  }
}
process.stdout.write(`\nmedian of ${runs} fresh processes, alternating:\n`);
for (const [key, entry] of times) {
  process.stdout.write(
    `  ${key.padEnd(40)} import ${median(entry.importMs).toFixed(0).padStart(5)} ms  process CPU ${median(entry.cpuMs).toFixed(0).padStart(5)} ms\n`,
  );
}
process.stdout.write(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} at the end\n`,
);
