import type { WriteStream } from 'node:fs';
import { open } from 'node:fs/promises';

/**
 * A stream into a new file (mode 0600; it must not exist yet), made before the first chunk is
 * read. `fs.createWriteStream` opens its file in the background: a pipeline refused early
 * (a bad first byte, an aborted request) could end, and its file be removed, before that
 * open finished, which then created the file again and left it behind (seen on a busy
 * machine: 6 refused uploads in 300). The stream closes the file when it ends or is destroyed.
 */
export async function newFileSink(file: string): Promise<WriteStream> {
  const handle = await open(file, 'wx', 0o600);
  return handle.createWriteStream();
}
