import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import http from 'node:http';
import { pipeline } from 'node:stream/promises';
import { DriverError } from '../../engine/drivers/types.js';

/** An uploaded archive offered to one build's pod, until `revoke`. */
export interface ArchiveOffer {
  /** Holds the offer's token: it goes into the build's Secret only. */
  url: string;
  token: string;
  sha256: string;
  revoke(): Promise<void>;
}

const PATH = /^\/archives\/([A-Za-z0-9_-]{43})$/;

/**
 * Hands the uploaded archives the runner downloaded to the build pods that build them, over
 * HTTP from the runner itself. Berth's own archive URL asks for the runner key too, and the
 * key must not reach a pod; a Secret or ConfigMap holds 1 MiB, and an upload may hold 200.
 * Each archive is offered under a random 256-bit token of its own, valid until its build
 * ends; the pod checks the bytes against the SHA-256 its Secret carries. The server listens
 * only while an offer is open.
 */
export class ArchiveServer {
  /** The SHA-256 of each token, to its file: a lookup by digest tells a guesser nothing about the tokens. */
  readonly #offers = new Map<string, string>();
  #server: http.Server | undefined;
  #queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly baseUrl: string,
    private readonly port: number,
    /** Undefined: every interface (the pod's address is what build pods reach). */
    private readonly host?: string,
  ) {}

  async offer(file: string): Promise<ArchiveOffer> {
    const sha256 = await fileDigest(file);
    const token = randomBytes(32).toString('base64url');
    const key = digest(token);
    this.#offers.set(key, file);
    const revoke = () => {
      this.#offers.delete(key);
      return this.#serially(() => (this.#offers.size === 0 ? this.#close() : Promise.resolve()));
    };
    try {
      await this.#serially(() => this.#listen());
    } catch (error) {
      await revoke();
      throw new DriverError(
        `the build runner cannot serve the uploaded archive to its build pod on port ${this.port} (BERTH_BUILDER_ARCHIVE_PORT): ${(error as Error).message}`,
      );
    }
    return { url: `${this.baseUrl}/archives/${token}`, token, sha256, revoke };
  }

  /** Listening and closing one after the other: an offer made while the last one closes waits for the port. */
  #serially(step: () => Promise<void>): Promise<void> {
    const run = this.#queue.then(step);
    this.#queue = run.catch(() => {});
    return run;
  }

  async #listen(): Promise<void> {
    if (this.#server) return;
    const server = http.createServer((request, response) => void this.#answer(request, response).catch(() => response.destroy()));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, this.host, () => resolve());
    });
    this.#server = server;
  }

  async #close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  async #answer(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const token = request.method === 'GET' ? PATH.exec(request.url ?? '')?.[1] : undefined;
    const file = token === undefined ? undefined : this.#offers.get(digest(token));
    const size =
      file === undefined
        ? undefined
        : await stat(file).then(
            (found) => found.size,
            () => undefined,
          );
    if (file === undefined || size === undefined) {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'Not Found' }));
      return;
    }
    response.writeHead(200, { 'content-type': 'application/gzip', 'content-length': size, 'cache-control': 'no-store' });
    // A pod that goes away mid-download only ends its own answer.
    await pipeline(createReadStream(file), response).catch(() => response.destroy());
  }
}

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

async function fileDigest(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
