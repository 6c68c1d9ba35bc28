import { readdir, readFile } from 'node:fs/promises';

/** Command lines of every process this machine shows in /proc (arguments joined by spaces). */
export async function commandLines(): Promise<string[]> {
  const lines: string[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const raw = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (raw) lines.push(raw.split('\0').join(' ').trim());
  }
  return lines;
}

/** Every file's text under `dir`, to search for a secret that must not have been written. */
export async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  const walk = async (current: string): Promise<void> => {
    for (const entry of await readdir(current, { withFileTypes: true }).catch(() => [])) {
      const full = `${current}/${entry.name}`;
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile() && (await readFile(full).catch(() => Buffer.alloc(0))).includes(needle)) hits.push(full);
    }
  };
  await walk(dir);
  return hits;
}

/** A process below another one: its pid and its executable's name (`comm`). */
export interface Descendant {
  pid: number;
  /** Its parent's pid. */
  parent: number;
  name: string;
}

/** Every process below `pid` (children, their children, …), read from /proc. */
export async function descendantsOf(pid: number): Promise<Descendant[]> {
  const parents = new Map<number, { parent: number; name: string }>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // `pid (comm) state ppid …`; comm may hold spaces and parentheses, so split at the last ')'.
    const close = stat.lastIndexOf(')');
    if (close < 0) continue;
    const name = stat.slice(stat.indexOf('(') + 1, close);
    const parent = Number(stat.slice(close + 2).split(' ')[1]);
    parents.set(Number(entry), { parent, name });
  }
  const found: Descendant[] = [];
  const below = new Set([pid]);
  // Parents may be listed after their children: repeat until nothing new is found.
  for (let grew = true; grew;) {
    grew = false;
    for (const [child, { parent, name }] of parents) {
      if (below.has(parent) && !below.has(child)) {
        below.add(child);
        found.push({ pid: child, parent, name });
        grew = true;
      }
    }
  }
  return found;
}
