import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';

export type ArchiveEntry = { name: string; body?: string; type?: 'file' | 'symlink'; linkname?: string };

/** A gzipped tar of the entries, made in memory, as `langgraph deploy --remote` uploads a project. */
export async function gzippedTar(entries: ArchiveEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const entry of entries) {
    if (entry.type === 'symlink') pack.entry({ name: entry.name, type: 'symlink', linkname: entry.linkname ?? '' });
    else pack.entry({ name: entry.name }, entry.body ?? '');
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks));
}
