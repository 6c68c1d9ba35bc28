import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { TokenError, type TokenSigner } from '../security/signed-tokens.js';
import { newFileSink } from './new-file.js';

/**
 * Source archives uploaded by `langgraph deploy --remote`, kept under one directory
 * (`<data dir>/uploads`) until the revision built from them is terminal.
 *
 * The CLI asks for an upload URL, PUTs the `.tar.gz` to it without an API key, then sends
 * the returned object path in a PATCH. So the URL carries a signed token bound to the
 * deployment and the object path, valid for 15 minutes and good for one upload.
 *
 * Layout, per deployment directory `<dir>/<deployment id>/`:
 *   `<upload id>.tar.gz`   a received archive (renamed into place only once complete)
 *   `<upload id>.claim`    the record that the upload's token was used (JSON `{exp}`);
 *                          created with O_EXCL, so it refuses a second PUT across restarts
 *                          and across processes sharing the directory
 *   `<upload id>.<random>.part`  an upload being received
 * The token's single use is recorded here, on disk: callers persist nothing.
 */

export const MAX_UPLOAD_BYTES = 209_715_200;
export const UPLOAD_TOKEN_TTL_SECONDS = 15 * 60;
const UPLOAD_PURPOSE = 'source-upload';
const GZIP_MAGIC = [0x1f, 0x8b] as const;

const DEPLOYMENT_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const OBJECT_PATH = /^uploads\/([A-Za-z0-9][A-Za-z0-9_-]{0,127})\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.tar\.gz$/;

/**
 * What went wrong with an upload. The HTTP layer answers `forbidden` with 403 (the URL is
 * wrong, expired, used or for another deployment), `too_large` with 413, and `not_gzip`
 * and `incomplete` with 400.
 */
export type UploadFailure = 'forbidden' | 'too_large' | 'not_gzip' | 'incomplete';

export class UploadError extends Error {
  constructor(
    readonly kind: UploadFailure,
    message: string,
  ) {
    super(message);
    this.name = 'UploadError';
  }
}

export interface UploadStoreOptions {
  /** The directory that holds uploads, e.g. `<data dir>/uploads`; created when needed. */
  dir: string;
  /** Signs the upload tokens; give it a key of its own (see security/derived-keys.ts). */
  signer: TokenSigner;
  maxBytes?: number;
  ttlSeconds?: number;
  /** Milliseconds since the epoch; tests move it. */
  clock?: () => number;
  /**
   * Told of archives removed by `discard`, `discardDeployment` excepted (Berth: they stop
   * counting against the pending-upload limits). Its failure fails the discard, after the
   * file is gone.
   */
  onDiscarded?: (objectPaths: string[]) => Promise<void>;
}

export interface IssuedUpload {
  /** Goes into the upload URL. */
  token: string;
  /** Goes back to the client as `object_path`, and comes back as `source_tarball_path`. */
  objectPath: string;
  expiresAt: Date;
}

export interface ReceiveOptions {
  /** The request's Content-Length, when it sent one. */
  contentLength?: number;
  signal?: AbortSignal;
  /**
   * Asked for room before bytes are written: once for the declared Content-Length, else
   * ahead of the bytes as they arrive (a step at a time, then exactly what arrived when a
   * step does not fit). Whatever it throws fails the upload as it is, leaving nothing.
   */
  reserve?: ReserveBytes;
}

/** Reserves room for `totalBytes` of one upload in all (not more on top); throws when there is none. */
export type ReserveBytes = (totalBytes: number) => Promise<void>;

/** Room asked for ahead of an upload without Content-Length: a database write per step. */
const RESERVE_STEP_BYTES = 8 * 1024 * 1024;

export class UploadStore {
  readonly #dir: string;
  readonly #signer: TokenSigner;
  readonly #maxBytes: number;
  readonly #ttlSeconds: number;
  readonly #clock: () => number;
  readonly #onDiscarded: ((objectPaths: string[]) => Promise<void>) | undefined;

  constructor(options: UploadStoreOptions) {
    this.#dir = path.resolve(options.dir);
    this.#signer = options.signer;
    this.#maxBytes = options.maxBytes ?? MAX_UPLOAD_BYTES;
    this.#ttlSeconds = options.ttlSeconds ?? UPLOAD_TOKEN_TTL_SECONDS;
    this.#clock = options.clock ?? Date.now;
    this.#onDiscarded = options.onDiscarded;
  }

  get maxBytes(): number {
    return this.#maxBytes;
  }

  issue(deploymentId: string): IssuedUpload {
    if (!DEPLOYMENT_ID.test(deploymentId)) throw new Error(`not a deployment id: ${JSON.stringify(deploymentId)}`);
    const objectPath = `uploads/${deploymentId}/${randomUUID()}.tar.gz`;
    const { token, claims } = this.#signer.sign({
      purpose: UPLOAD_PURPOSE,
      ttlSeconds: this.#ttlSeconds,
      bound: { deployment: deploymentId, objectPath },
      now: this.#clock(),
    });
    return { token, objectPath, expiresAt: new Date(claims.exp * 1000) };
  }

  /** The object path a valid token is for; an UploadError (`forbidden`) for any other token. */
  verifyToken(token: string, deploymentId: string): { objectPath: string } {
    return { objectPath: this.#verify(token, deploymentId).objectPath };
  }

  /**
   * Streams an upload to a temporary file and renames it into place once complete and
   * within bounds; the body is never held in memory. A failed upload leaves nothing and
   * releases its token, so the client may retry with the same URL while it is valid.
   */
  async receive(
    token: string,
    deploymentId: string,
    body: NodeJS.ReadableStream,
    options: ReceiveOptions = {},
  ): Promise<{ objectPath: string; bytes: number }> {
    const { objectPath, exp } = this.#verify(token, deploymentId);
    const { contentLength } = options;
    if (contentLength !== undefined && contentLength > this.#maxBytes) {
      throw tooLarge(this.#maxBytes);
    }
    const files = this.#files(objectPath);
    if (!files || files.deploymentId !== deploymentId) throw forbidden('This upload URL is not valid. Request a new one.');
    if (!(await createClaim(files.claim, exp))) throw forbidden('This upload URL has already been used. Request a new one.');

    const part = path.join(path.dirname(files.archive), `${files.uploadId}.${randomBytes(6).toString('hex')}.part`);
    const guard = new UploadGuard(this.#maxBytes, options.reserve);
    try {
      // Refused as soon as it is known: from the declared length before a byte is read.
      if (contentLength !== undefined) await guard.reserveDeclared(contentLength);
      await pipeline(body, guard, await newFileSink(part), { signal: options.signal });
      guard.checkComplete(contentLength);
      await syncFile(part);
      await rename(part, files.archive);
      await syncDirectory(path.dirname(files.archive));
      return { objectPath, bytes: guard.bytes };
    } catch (error) {
      await rm(part, { force: true });
      await rm(files.claim, { force: true });
      if (guard.refusal) throw guard.refusal;
      if (error instanceof UploadError) throw error;
      if (options.signal?.aborted) throw error;
      throw new UploadError('incomplete', 'The upload ended before the whole archive arrived. Upload it again.');
    }
  }

  /** The archive's file when `objectPath` came from `issue` for this deployment and was uploaded; else null. */
  async resolve(deploymentId: string, objectPath: string): Promise<string | null> {
    const files = this.#files(objectPath);
    if (!files || files.deploymentId !== deploymentId) return null;
    try {
      return (await stat(files.archive)).isFile() ? files.archive : null;
    } catch {
      return null;
    }
  }

  /** Removes an archive whose revision is terminal. Unknown paths are ignored. */
  async discard(objectPath: string): Promise<void> {
    const files = this.#files(objectPath);
    if (!files) return;
    await rm(files.archive, { force: true });
    // The spent-token record stays until its token expires (sweep): without it the same
    // URL would take a second upload.
    await this.#onDiscarded?.([objectPath]);
  }

  /** Removes every upload of a deleted deployment. */
  async discardDeployment(deploymentId: string): Promise<void> {
    if (!DEPLOYMENT_ID.test(deploymentId)) return;
    await rm(path.join(this.#dir, deploymentId), { recursive: true, force: true });
  }

  /**
   * Removes what can no longer be used: archives no revision references once their token
   * has expired (an archive is written before its token expires, so its modification time
   * plus the token lifetime is past the expiry), spent-token records past their expiry,
   * and partial uploads left by a crash. `isReferenced` asks the database whether a
   * revision names the object path; it is the source of truth, so nothing here can drift.
   */
  async sweep(now: number, isReferenced: (objectPath: string, deploymentId: string) => boolean | Promise<boolean>): Promise<{ removed: string[] }> {
    const removed: string[] = [];
    const ttlMs = this.#ttlSeconds * 1000;
    for (const deploymentId of await listDirectory(this.#dir)) {
      if (!DEPLOYMENT_ID.test(deploymentId)) continue;
      const dir = path.join(this.#dir, deploymentId);
      for (const name of await listDirectory(dir)) {
        const file = path.join(dir, name);
        const info = await stat(file).catch(() => null);
        if (!info?.isFile()) continue;
        if (name.endsWith('.tar.gz')) {
          const objectPath = `uploads/${deploymentId}/${name}`;
          if (info.mtimeMs + ttlMs <= now && this.#files(objectPath) && !(await isReferenced(objectPath, deploymentId))) {
            await rm(file, { force: true });
            removed.push(objectPath);
          }
        } else if (name.endsWith('.claim')) {
          if ((await claimExpiry(file)) * 1000 <= now) await rm(file, { force: true });
        } else if (name.endsWith('.part')) {
          // A live upload keeps writing; one untouched for a whole token lifetime is dead.
          if (info.mtimeMs + ttlMs <= now) await rm(file, { force: true });
        }
      }
      await removeIfEmpty(dir);
    }
    return { removed };
  }

  #verify(token: string, deploymentId: string): { objectPath: string; exp: number } {
    try {
      const claims = this.#signer.verify(token, { purpose: UPLOAD_PURPOSE, bound: { deployment: deploymentId }, now: this.#clock() });
      const objectPath = claims.bound.objectPath;
      if (objectPath === undefined) throw new TokenError('malformed');
      return { objectPath, exp: claims.exp };
    } catch (error) {
      if (!(error instanceof TokenError)) throw error;
      switch (error.reason) {
        case 'expired':
          throw forbidden('This upload URL has expired. Request a new one.');
        case 'wrong_binding':
          throw forbidden('This upload URL was issued for another deployment.');
        default:
          throw forbidden('This upload URL is not valid. Request a new one.');
      }
    }
  }

  #files(objectPath: string) {
    const match = OBJECT_PATH.exec(objectPath);
    if (!match) return null;
    const [, deploymentId = '', uploadId = ''] = match;
    const dir = path.join(this.#dir, deploymentId);
    return {
      deploymentId,
      uploadId,
      archive: path.join(dir, `${uploadId}.tar.gz`),
      claim: path.join(dir, `${uploadId}.claim`),
    };
  }
}

/**
 * Counts the bytes going through, cuts the body off past the limit, checks the gzip magic,
 * and holds each chunk back until room for it is reserved.
 */
class UploadGuard extends Transform {
  bytes = 0;
  /** What the reservation refused with: the upload fails with exactly this. */
  refusal: unknown;
  readonly #head: number[] = [];
  #reserved = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly reserve: ReserveBytes | undefined,
  ) {
    super();
  }

  async reserveDeclared(contentLength: number): Promise<void> {
    await this.#reserveExactly(contentLength);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      callback(tooLarge(this.maxBytes));
      return;
    }
    for (let i = 0; this.#head.length < GZIP_MAGIC.length && i < chunk.length; i++) this.#head.push(chunk[i] as number);
    if (this.#head.length === GZIP_MAGIC.length && !GZIP_MAGIC.every((byte, i) => this.#head[i] === byte)) {
      callback(notGzip());
      return;
    }
    if (!this.reserve || this.bytes <= this.#reserved) {
      callback(null, chunk);
      return;
    }
    this.#reserveAhead(this.bytes).then(
      () => callback(null, chunk),
      (error: unknown) => callback(error as Error),
    );
  }

  /** A step ahead of what arrived; when a step does not fit, exactly what arrived. */
  async #reserveAhead(needed: number): Promise<void> {
    const ahead = Math.min(Math.max(needed, this.#reserved + RESERVE_STEP_BYTES), this.maxBytes);
    try {
      await this.#reserveExactly(ahead, false);
    } catch (error) {
      if (ahead === needed) throw this.#refused(error);
      await this.#reserveExactly(needed);
    }
  }

  async #reserveExactly(bytes: number, final = true): Promise<void> {
    if (!this.reserve) return;
    try {
      await this.reserve(bytes);
      this.#reserved = bytes;
    } catch (error) {
      throw final ? this.#refused(error) : error;
    }
  }

  #refused(error: unknown): unknown {
    this.refusal = error;
    return error;
  }

  override _flush(callback: TransformCallback): void {
    callback(this.#head.length < GZIP_MAGIC.length ? notGzip() : null);
  }

  checkComplete(contentLength: number | undefined): void {
    if (contentLength !== undefined && this.bytes !== contentLength) {
      throw new UploadError('incomplete', `The upload ended after ${this.bytes} of ${contentLength} bytes. Upload it again.`);
    }
  }
}

const forbidden = (message: string) => new UploadError('forbidden', message);
const tooLarge = (maxBytes: number) =>
  new UploadError('too_large', `The archive is larger than ${maxBytes} bytes. Leave large files out of it (.dockerignore or .gitignore).`);
const notGzip = () => new UploadError('not_gzip', 'The upload is not a gzip-compressed archive (.tar.gz).');

/** False when the claim exists: the token was used already. */
async function createClaim(file: string, exp: number): Promise<boolean> {
  // A sweep may remove the (empty) deployment directory between mkdir and the write: retry once.
  for (let attempt = 0; ; attempt++) {
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    try {
      await writeFile(file, JSON.stringify({ exp }), { flag: 'wx', mode: 0o600 });
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return false;
      if (code !== 'ENOENT' || attempt > 0) throw error;
    }
  }
}

async function syncFile(file: string): Promise<void> {
  const handle = await open(file, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes the rename itself durable, so an acknowledged upload survives a power cut. */
async function syncDirectory(dir: string): Promise<void> {
  await syncFile(dir);
}

async function listDirectory(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

async function removeIfEmpty(dir: string): Promise<void> {
  await rmdir(dir).catch(() => {});
}

/** A claim that cannot be read is treated as expired: it can only be debris. */
async function claimExpiry(file: string): Promise<number> {
  try {
    const { exp } = JSON.parse(await readFile(file, 'utf8')) as { exp?: unknown };
    return typeof exp === 'number' ? exp : 0;
  } catch {
    return 0;
  }
}
