import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { DriverError } from '../../engine/drivers/types.js';
import { newFileSink } from '../../sources/new-file.js';
import { MAX_UPLOAD_BYTES } from '../../sources/uploads.js';
import { ByteLimit } from '../client.js';

/**
 * In the build pod: downloads the uploaded archive its runner offers (archive-server.ts)
 * into `file` (new), no larger than an upload may be, and refuses bytes whose SHA-256 is not
 * the one the Secret carries. The content stays hostile: the build unpacks it with Berth's
 * safe extraction, as everywhere. Messages never hold the URL (its path is the token).
 */
export async function fetchPodArchive(source: { url: string; sha256: string }, file: string, signal: AbortSignal): Promise<void> {
  let response: Response;
  try {
    response = await fetch(source.url, { signal: AbortSignal.any([signal, AbortSignal.timeout(30 * 60_000)]) });
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${(error.cause as NodeJS.ErrnoException).code ?? error.cause.message})` : '';
    throw new DriverError(
      `the build pod could not reach its build runner for the uploaded archive${cause}: check that build pods reach BERTH_BUILDER_ARCHIVE_URL.`,
    );
  }
  if (!response.ok || !response.body)
    throw new DriverError(`the build runner did not hand over the uploaded archive (${response.status}): the build it was offered for has ended.`);
  const hash = createHash('sha256');
  try {
    const sink = await newFileSink(file);
    await pipeline(
      Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
      new ByteLimit(MAX_UPLOAD_BYTES),
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          hash.update(chunk);
          yield chunk;
        }
      },
      sink,
      { signal },
    );
  } catch (error) {
    await rm(file, { force: true });
    if (error instanceof DriverError || signal.aborted) throw error;
    throw new DriverError(`the uploaded archive could not be fetched from the build runner: ${(error as Error).message}`);
  }
  if (hash.digest('hex') !== source.sha256) {
    await rm(file, { force: true });
    throw new DriverError("the uploaded archive the build pod received is not the runner's (its SHA-256 differs): it was changed on the way.");
  }
}
