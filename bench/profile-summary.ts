/**
 * Summarises a V8 CPU profile (`node --cpu-prof`, e.g. `npm run bench -- --cpu-prof`):
 * the functions with the most self time, and the packages/files they live in.
 *
 *   node --import tsx bench/profile-summary.ts bench/profiles/<file>.cpuprofile [--top 30]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export function summarise(profile: Profile, top = 30): string {
  // Self time per node from the sample stream (timeDeltas are microseconds between samples).
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const id = samples[i] as number;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (deltas[i + 1] ?? deltas[i] ?? 0));
  }
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (us === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = shortUrl(url);
    const key = `${functionName || '(anonymous)'}  ${where}${url ? `:${lineNumber + 1}` : ''}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    byPlace.set(placeOf(url, functionName), (byPlace.get(placeOf(url, functionName)) ?? 0) + us);
  }
  const table = (map: Map<string, number>, n: number) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => `${((100 * us) / totalUs).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`)
      .join('\n');
  return [
    `profile: ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s wall, ${(totalUs / 1e6).toFixed(1)} s sampled`,
    '',
    `top ${top} functions by self time:`,
    table(byFunction, top),
    '',
    'self time by package / area:',
    table(byPlace, 20),
  ].join('\n');
}

function shortUrl(url: string): string {
  if (!url) return '';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1);
  return url.replace(/^file:\/\//, '');
}

function placeOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native/V8)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + 'node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? url);
  }
  if (url.startsWith('node:')) return url;
  const src = url.indexOf('/src/');
  if (src >= 0)
    return url
      .slice(src + 1)
      .split('/')
      .slice(0, 2)
      .join('/');
  return url;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '30' } } });
  if (positionals.length === 0) {
    process.stderr.write('usage: node --import tsx bench/profile-summary.ts FILE.cpuprofile [--top N]\n');
    process.exit(2);
  }
  for (const file of positionals) {
    process.stdout.write(`== ${file}\n${summarise(JSON.parse(fs.readFileSync(file, 'utf8')) as Profile, Number(values.top))}\n\n`);
  }
}
