/**
 * What importing a module loads, seen from a fresh node process: each module's URL (ESM through a
 * `module.register` load hook, CommonJS through `Module._load`), the import's time and the process's CPU
 * time (the loader-hooks thread's included). Used by bench/startup.ts and test/architecture/start-up-imports.test.ts.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export interface ImportProbe {
  /** Under tsx (`--import tsx`) or plain node. */
  tsx: boolean;
  /** The file imported, absolute. */
  file: string;
  /** When set, the file is run as the program with these arguments (its exit ends the measurement). */
  argv?: string[];
  /** Record the modules loaded (the hooks slow the import a little: leave it off when timing). */
  count: boolean;
  cwd: string;
  /** Kills the child after this many ms (tests pass a deadline; spawnSync would otherwise hold the test past its own). */
  timeout?: number;
}

export interface ImportSample {
  importMs: number;
  cpuMs: number;
  /** file: URLs (and node: builtins) loaded, in no particular order. */
  urls: string[];
}

/** Runs in the loader-hooks thread: reports every URL loaded, in order, over the port it is given. */
const HOOK = `let port;
export function initialize(data) { port = data.port; }
export async function load(url, context, nextLoad) { port.postMessage(url); return nextLoad(url, context); }`;

/** The child's script: optionally records modules, imports the file, prints one JSON line on stderr at exit. */
function childScript(probe: ImportProbe): string {
  return `
import { writeSync } from 'node:fs';
import Module, { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
const seen = new Set();
let sentinel;
let settled;
if (${probe.count}) {
  const { port1, port2 } = new MessageChannel();
  settled = new Promise((resolve) => { sentinel = resolve; });
  port1.on('message', (url) => (url === 'data:text/javascript,' ? sentinel() : seen.add(url)));
  port1.unref();
  register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(HOOK)}), { data: { port: port2 }, transferList: [port2] });
  const load = Module._load;
  Module._load = function (request, parent, isMain) {
    try { const f = Module._resolveFilename(request, parent, isMain); if (f.startsWith('/')) seen.add('file://' + f); } catch {}
    return load.apply(this, arguments);
  };
}
const started = performance.now();
let imported;
process.on('exit', () => {
  const cpu = process.cpuUsage();
  writeSync(2, '\\nSTARTUP ' + JSON.stringify({ importMs: (imported ?? performance.now()) - started, cpuMs: (cpu.user + cpu.system) / 1000, urls: [...seen] }) + '\\n');
});
${probe.argv ? `process.argv = [process.argv[0], ${JSON.stringify(probe.file)}, ...${JSON.stringify(probe.argv)}];` : ''}
await import(${JSON.stringify(pathToFileURL(probe.file).href)});
imported = performance.now();
// The sentinel's load is reported after every load before it, so all of them have arrived when it does.
if (${probe.count}) { await import('data:text/javascript,'); await settled; }
${probe.argv ? '' : 'process.exit(0);'}
`;
}

export function probeImport(probe: ImportProbe): ImportSample {
  const args = [...(probe.tsx ? ['--import', 'tsx'] : []), '--input-type=module', '-e', childScript(probe)];
  const child = spawnSync(process.execPath, args, {
    cwd: probe.cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'silent' },
    ...(probe.timeout ? { timeout: probe.timeout } : {}),
  });
  const line = child.stderr
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('STARTUP '));
  if (!line) throw new Error(`importing ${probe.file} printed no result (exit ${child.status}):\n${child.stderr.slice(-3000)}`);
  return JSON.parse(line.slice('STARTUP '.length)) as ImportSample;
}

/** The package a file belongs to (the innermost node_modules/<package>), or the tree's own top folder (src, dist). */
export function groupOf(url: string, tree: string): string {
  if (!url.startsWith('file:')) return url.split(':')[0] ?? url;
  const file = decodeURIComponent(new URL(url).pathname);
  const at = file.lastIndexOf('/node_modules/');
  if (at >= 0) {
    const parts = file.slice(at + '/node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? file);
  }
  const relative = path.relative(tree, file);
  return relative.startsWith('..') ? 'outside' : (relative.split(path.sep)[0] ?? relative);
}
