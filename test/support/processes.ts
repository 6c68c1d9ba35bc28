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
