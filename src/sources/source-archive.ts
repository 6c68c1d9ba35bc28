import fs from 'node:fs';
import { link, lstat, mkdir, open, readdir, realpath, rm, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';

/**
 * Unpacks an uploaded `.tar.gz` project into a fresh directory, refusing any archive that
 * could write outside it or exhaust the disk.
 *
 * tar-stream parses and nothing more (headers, PAX and GNU long names, entry bodies); it
 * never touches the filesystem. Every write is made here, so the rules are in one place
 * and refusal is all-or-nothing: the first bad entry stops the unpack, names the entry,
 * and the directory is removed. (node-tar's extractor instead sanitises as it goes: it
 * strips leading `/` and skips `..` entries with a warning, which would build a project
 * that differs from what was uploaded without saying so.)
 *
 * The rules: no absolute names, no `..` segments, no devices or FIFOs; nothing written
 * through a symbolic link (parents are checked against what this unpack created, files are
 * opened with O_NOFOLLOW); hard links only to regular files unpacked before them; every
 * symbolic link must resolve, on disk, to a path inside the project; and at most
 * `maxBytes` of file content, `maxEntries` entries, and a bounded decompressed stream.
 */

export interface UnpackLimits {
  /** Total size of the files once unpacked. */
  maxBytes: number;
  maxEntries: number;
}

export const DEFAULT_UNPACK_LIMITS: UnpackLimits = { maxBytes: 1024 ** 3, maxEntries: 100_000 };

/** Headers, padding and long-name records allowed per entry beyond the file contents. */
const STREAM_OVERHEAD_PER_ENTRY = 2048;

export class ArchiveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveError';
  }
}

export interface UnpackResult {
  files: number;
  bytes: number;
}

type Kind = 'directory' | 'file' | 'symlink';
type ArchiveEntry = tar.Extract extends AsyncIterable<infer Entry> ? Entry : never;

/**
 * Unpacks `archive` into `destination`, which must not exist yet (its parent must). On any
 * failure nothing is left at `destination`.
 */
export async function unpackSourceArchive(
  archive: string,
  destination: string,
  options: { limits?: Partial<UnpackLimits>; signal?: AbortSignal } = {},
): Promise<UnpackResult> {
  const limits = { ...DEFAULT_UNPACK_LIMITS, ...options.limits };
  await mkdir(destination, { mode: 0o755 });
  try {
    const unpacker = new Unpacker(await realpath(destination), limits);
    const extract = tar.extract();
    const consume = (async () => {
      for await (const entry of extract) await unpacker.add(entry);
    })();
    const streamCap = limits.maxBytes + (limits.maxEntries + 2) * STREAM_OVERHEAD_PER_ENTRY;
    const results = await Promise.allSettled([
      pipeline(fs.createReadStream(archive), createGunzip(), new StreamCap(streamCap), extract, { signal: options.signal }),
      consume,
    ]);
    const failures = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
    if (failures.length > 0) throw explain(failures, options.signal);
    await unpacker.checkSymlinks();
    return { files: unpacker.files, bytes: unpacker.bytes };
  } catch (error) {
    await rm(destination, { recursive: true, force: true });
    throw error;
  }
}

class Unpacker {
  files = 0;
  bytes = 0;
  #entries = 0;
  readonly #kinds = new Map<string, Kind>();
  readonly #symlinks = new Map<string, string>();

  constructor(
    private readonly root: string,
    private readonly limits: UnpackLimits,
  ) {}

  async add(entry: ArchiveEntry): Promise<void> {
    const { header } = entry;
    if (++this.#entries > this.limits.maxEntries) {
      throw new ArchiveError(`the archive has more than ${this.limits.maxEntries} entries`);
    }
    const name = entryPath(header.name);
    switch (header.type) {
      case 'directory':
        entry.resume();
        if (name !== '') await this.#directory(name, header.name);
        return;
      case 'file':
      case 'contiguous-file':
        await this.#file(name, header, entry);
        return;
      case 'symlink':
        entry.resume();
        await this.#symlink(name, header);
        return;
      case 'link':
        entry.resume();
        await this.#hardlink(name, header);
        return;
      case 'character-device':
      case 'block-device':
      case 'fifo':
        throw new ArchiveError(`archive entry ${quote(header.name)} is a device or FIFO, which a project cannot contain`);
      default:
        throw new ArchiveError(`archive entry ${quote(header.name)} has an unsupported type (${String(header.type)})`);
    }
  }

  /** Every symbolic link must resolve inside the project now that all of it is on disk. */
  async checkSymlinks(): Promise<void> {
    for (const [name, target] of this.#symlinks) {
      let resolved: string;
      try {
        resolved = await realpath(path.join(this.root, name));
      } catch {
        throw new ArchiveError(`archive entry ${quote(name)} is a symbolic link to ${quote(target)}, which is not in the archive`);
      }
      if (!isInside(this.root, resolved)) {
        throw new ArchiveError(`archive entry ${quote(name)} is a symbolic link to ${quote(target)}, outside the project directory`);
      }
    }
  }

  async #directory(name: string, shown: string): Promise<void> {
    const existing = this.#kinds.get(name);
    if (existing === 'directory') return;
    if (existing) throw new ArchiveError(`archive entry ${quote(shown)} is a directory where the archive already has a ${existing}`);
    await this.#parents(name, shown);
    await mkdir(path.join(this.root, name), { mode: 0o755 });
    this.#kinds.set(name, 'directory');
  }

  async #file(name: string, header: tar.Header, body: ArchiveEntry): Promise<void> {
    const size = header.size ?? 0;
    if (this.bytes + size > this.limits.maxBytes) {
      throw new ArchiveError(`archive entry ${quote(header.name)} takes the unpacked project past ${this.limits.maxBytes} bytes`);
    }
    const target = await this.#replaceable(name, header.name);
    // Owner read/write always; execute bits kept; no setuid/setgid/sticky, no group/other write.
    const mode = ((header.mode ?? 0o644) & 0o755) | 0o600;
    const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = fs.constants;
    const handle = await open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    const counter = new StreamCap(size, () => new ArchiveError(`archive entry ${quote(header.name)} is longer than its header says`));
    await pipeline(body, counter, handle.createWriteStream());
    this.bytes += counter.bytes;
    this.files += 1;
    this.#kinds.set(name, 'file');
  }

  async #symlink(name: string, header: tar.Header): Promise<void> {
    const target = header.linkname ?? '';
    if (target === '' || target.includes('\0') || path.posix.isAbsolute(target) || /^[A-Za-z]:[\\/]/.test(target)) {
      throw new ArchiveError(`archive entry ${quote(header.name)} is a symbolic link to ${quote(target)}, outside the project directory`);
    }
    // A first, textual check; checkSymlinks decides on the real paths once everything exists.
    const lexical = path.posix.normalize(path.posix.join(path.posix.dirname(name), target));
    if (lexical === '..' || lexical.startsWith('../')) {
      throw new ArchiveError(`archive entry ${quote(header.name)} is a symbolic link to ${quote(target)}, outside the project directory`);
    }
    const at = await this.#replaceable(name, header.name);
    await symlink(target, at);
    this.#kinds.set(name, 'symlink');
    this.#symlinks.set(name, target);
  }

  async #hardlink(name: string, header: tar.Header): Promise<void> {
    const raw = header.linkname ?? '';
    const normalized = normalizePath(raw);
    if ('problem' in normalized) {
      throw new ArchiveError(`archive entry ${quote(header.name)} is a hard link to ${quote(raw)}, which ${normalized.problem}`);
    }
    const source = normalized.path;
    if (this.#kinds.get(source) !== 'file') {
      throw new ArchiveError(`archive entry ${quote(header.name)} is a hard link to ${quote(raw)}, which is not a file unpacked before it`);
    }
    const at = await this.#replaceable(name, header.name);
    await link(path.join(this.root, source), at);
    this.files += 1;
    this.#kinds.set(name, 'file');
  }

  /** The absolute path for a non-directory entry, after removing what an earlier entry put there. */
  async #replaceable(name: string, shown: string): Promise<string> {
    if (name === '') throw new ArchiveError(`archive entry ${quote(shown)} names the project directory itself`);
    const existing = this.#kinds.get(name);
    if (existing === 'directory') throw new ArchiveError(`archive entry ${quote(shown)} replaces a directory`);
    await this.#parents(name, shown);
    const target = path.join(this.root, name);
    // Later entries win, as with tar; unlinking first means a hard link or symbolic link
    // left by an earlier entry is replaced, never written through.
    if (existing) await unlink(target);
    return target;
  }

  /** Creates missing parent directories; refuses to go through anything that is not one. */
  async #parents(name: string, shown: string): Promise<void> {
    const segments = name.split('/');
    for (let i = 1; i < segments.length; i++) {
      const parent = segments.slice(0, i).join('/');
      const kind = this.#kinds.get(parent);
      if (kind === 'directory') continue;
      if (kind === 'symlink') throw new ArchiveError(`archive entry ${quote(shown)} is inside a symbolic link (${quote(parent)})`);
      if (kind === 'file') throw new ArchiveError(`archive entry ${quote(shown)} is inside a file (${quote(parent)})`);
      await mkdir(path.join(this.root, parent), { mode: 0o755 });
      this.#kinds.set(parent, 'directory');
    }
  }
}

/** The entry's path relative to the project root ('' for the root itself), or why it cannot be one. */
function normalizePath(raw: string): { path: string } | { problem: string } {
  if (raw.includes('\0')) return { problem: 'contains a NUL character' };
  if (raw.startsWith('/') || /^[A-Za-z]:[\\/]/.test(raw)) return { problem: 'is an absolute path' };
  const segments = raw.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) return { problem: 'escapes the project directory' };
  if (segments.some((segment) => Buffer.byteLength(segment) > 255) || Buffer.byteLength(raw) > 4096) return { problem: 'is too long' };
  return { path: segments.join('/') };
}

function entryPath(name: string): string {
  const normalized = normalizePath(name);
  if ('problem' in normalized) throw new ArchiveError(`archive entry ${quote(name)} ${normalized.problem}`);
  return normalized.path;
}

function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root + path.sep);
}

/** Entry names come from the uploader: keep control characters out of messages and logs. */
function quote(name: string): string {
  const visible = name.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return `'${visible.length > 200 ? `${visible.slice(0, 200)}…` : visible}'`;
}

function explain(failures: unknown[], signal: AbortSignal | undefined): unknown {
  const mine = failures.find((failure) => failure instanceof ArchiveError);
  if (mine) return mine;
  if (signal?.aborted) return failures[0];
  const zlib = failures.find(
    (failure) => typeof (failure as NodeJS.ErrnoException)?.code === 'string' && (failure as NodeJS.ErrnoException).code?.startsWith('Z_'),
  );
  if (zlib) return new ArchiveError(`the archive is not valid gzip data (${(zlib as Error).message})`);
  const other = failures[0];
  if (other instanceof Error && /tar|header|unexpected end/i.test(other.message)) {
    return new ArchiveError(`the archive is not a valid tar file (${other.message})`);
  }
  return other;
}

/** Passes bytes through and fails once more than `max` have gone by. */
class StreamCap extends Transform {
  bytes = 0;

  constructor(
    private readonly max: number,
    private readonly failure: () => Error = () => new ArchiveError(`the archive unpacks to more than ${max} bytes`),
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    callback(this.bytes > this.max ? this.failure() : null, chunk);
  }
}

export interface LocatedConfig {
  /** Relative to the root, with `/` separators, e.g. `agent/langgraph.json`. */
  configPath: string;
  /** The directory holding the configuration file. */
  projectDir: string;
}

const CONFIG_NAME = 'langgraph.json';
const NOT_SEARCHED = new Set(['node_modules', '.git', '__pycache__', '.venv', 'venv']);

/**
 * Where the project's `langgraph.json` is in an unpacked archive. The CLI keeps the layout
 * relative to the common ancestor of the project and its local dependencies, so the file
 * can be nested (`agent/langgraph.json` beside `shared/`); it sends that path as
 * `langgraph_config_path`, given here as `hint`. Without a hint, the shallowest
 * `langgraph.json` is taken when there is exactly one.
 */
export async function locateConfig(root: string, hint?: string): Promise<LocatedConfig> {
  const realRoot = await realpath(root);
  if (hint !== undefined && hint.trim() !== '') {
    const relative = configHint(hint);
    const absolute = path.join(realRoot, relative);
    const resolved = await realpath(absolute).catch(() => null);
    const info = resolved && isInside(realRoot, resolved) ? await lstat(resolved).catch(() => null) : null;
    if (!info?.isFile()) {
      const found = await findConfigs(realRoot);
      const where = found.length > 0 ? `; it has ${found.slice(0, 5).map(quote).join(', ')}` : `; it has no ${CONFIG_NAME}`;
      throw new ArchiveError(`langgraph_config_path ${quote(hint)} is not a file in the uploaded archive${where}`);
    }
    return { configPath: relative, projectDir: path.dirname(absolute) };
  }
  const found = await findConfigs(realRoot);
  if (found.length === 0) throw new ArchiveError(`the uploaded archive has no ${CONFIG_NAME}`);
  const depth = (file: string) => file.split('/').length;
  const shallowest = found.filter((file) => depth(file) === depth(found[0] as string));
  if (shallowest.length > 1) {
    throw new ArchiveError(
      `the uploaded archive has several ${CONFIG_NAME} files (${shallowest.map(quote).join(', ')}); set langgraph_config_path to choose one`,
    );
  }
  const configPath = found[0] as string;
  return { configPath, projectDir: path.dirname(path.join(realRoot, configPath)) };
}

function configHint(hint: string): string {
  if (hint.startsWith('/') || hint.includes('\0')) throw new ArchiveError(`langgraph_config_path ${quote(hint)} must be relative to the archive`);
  const segments = hint.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..') || segments.length === 0) {
    throw new ArchiveError(`langgraph_config_path ${quote(hint)} must name a file inside the archive`);
  }
  return segments.join('/');
}

/** Every `langgraph.json`, shallowest first (breadth-first), not following symbolic links. */
async function findConfigs(root: string): Promise<string[]> {
  const found: string[] = [];
  let level = [''];
  while (level.length > 0) {
    const next: string[] = [];
    for (const dir of level) {
      const entries = await readdir(path.join(root, dir), { withFileTypes: true });
      entries.sort((a, b) => a.name.localeCompare(b.name));
      for (const entry of entries) {
        const relative = dir === '' ? entry.name : `${dir}/${entry.name}`;
        if (entry.isFile() && entry.name === CONFIG_NAME) found.push(relative);
        else if (entry.isDirectory() && !NOT_SEARCHED.has(entry.name)) next.push(relative);
      }
    }
    level = next;
  }
  return found;
}
