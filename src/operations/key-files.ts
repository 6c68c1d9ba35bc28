import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseEncryptionKey } from '../security/encryption.js';
import { OperationError } from './errors.js';

/** Where the keys of a rotation come from, and where the new one is kept until it is in use. */
export interface RotationKeyMaterial {
  current: Buffer;
  /** `env`: BERTH_ENCRYPTION_KEY, which the operator changes; `file`: the data directory's key file, swapped here. */
  currentSource: 'env' | 'file';
  next: Buffer;
  /** `env`: BERTH_NEW_ENCRYPTION_KEY; `pending`: left by an interrupted rotation; `generated`: made now. */
  nextSource: 'env' | 'pending' | 'generated';
  files: KeyFiles;
}

export interface KeyFiles {
  /** The key Berth reads at start when BERTH_ENCRYPTION_KEY is not set. */
  current: string;
  /** The new key, written before any value is re-encrypted so that an interrupted run can resume. */
  pending: string;
}

export function keyFilesOf(dataDir: string): KeyFiles {
  return { current: path.join(dataDir, 'encryption.key'), pending: path.join(dataDir, 'encryption.key.next') };
}

/**
 * The current key (BERTH_ENCRYPTION_KEY, else the key file: never generated here) and the
 * new one: BERTH_NEW_ENCRYPTION_KEY, else the pending key of an interrupted rotation, else
 * a fresh one. A new key that is not already on disk is written to the pending file
 * (mode 0600) before anything else happens.
 */
export function prepareRotationKeys(dataDir: string, env: { current?: string; next?: string }): RotationKeyMaterial {
  const files = keyFilesOf(dataDir);
  const current = env.current
    ? { key: parse(env.current, 'BERTH_ENCRYPTION_KEY'), source: 'env' as const }
    : { key: readKeyFile(files.current), source: 'file' as const };
  const pending = fs.existsSync(files.pending) ? readKeyFile(files.pending) : undefined;
  let next: Buffer;
  let nextSource: RotationKeyMaterial['nextSource'];
  if (env.next) {
    next = parse(env.next, 'BERTH_NEW_ENCRYPTION_KEY');
    nextSource = 'env';
    if (pending && !pending.equals(next)) {
      throw new OperationError(
        `${files.pending} holds a different new key, left by an interrupted rotation: finish that one first (run again without BERTH_NEW_ENCRYPTION_KEY), or remove the file if that rotation never started.`,
      );
    }
  } else if (pending) {
    next = pending;
    nextSource = 'pending';
  } else {
    next = randomBytes(32);
    nextSource = 'generated';
  }
  if (next.equals(current.key))
    throw new OperationError('The new encryption key is the current one: choose another (or unset BERTH_NEW_ENCRYPTION_KEY to generate one).');
  if (!pending) writeKeyFile(files.pending, next);
  return { current: current.key, currentSource: current.source, next, nextSource, files };
}

export interface SwappedKeys {
  /** The key file now holding the new key. */
  keyFile?: string;
  /** The old key, kept for backups taken before the rotation. */
  previous?: string;
  /** A generated new key the operator must put in BERTH_ENCRYPTION_KEY. */
  newKeyFile?: string;
}

/**
 * After every value is re-encrypted, the new key takes the old one's place. From the key
 * file: the pending key becomes the key file atomically (a rename), the old key staying
 * beside it as `encryption.key.previous-<time>`. From BERTH_ENCRYPTION_KEY: the operator
 * sets the new key there; a generated one waits in `encryption.key.new-<time>` (0600),
 * and no pending file is left to look like an interrupted rotation.
 */
export function swapKeyFiles(material: RotationKeyMaterial, now = new Date()): SwappedKeys {
  const { files } = material;
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  if (material.currentSource === 'env') {
    if (material.nextSource === 'env') {
      fs.rmSync(files.pending);
      return {};
    }
    const newKeyFile = `${files.current}.new-${stamp}`;
    fs.renameSync(files.pending, newKeyFile);
    return { newKeyFile };
  }
  const previous = `${files.current}.previous-${stamp}`;
  fs.copyFileSync(files.current, previous, fs.constants.COPYFILE_EXCL);
  fs.chmodSync(previous, 0o600);
  fs.renameSync(files.pending, files.current);
  return { previous, keyFile: files.current };
}

function readKeyFile(file: string): Buffer {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new OperationError(
        `No encryption key: BERTH_ENCRYPTION_KEY is not set and ${file} does not exist. Set BERTH_ENCRYPTION_KEY or BERTH_DATA_DIR as the server has them.`,
      );
    }
    throw error;
  }
  return parse(text, file);
}

function writeKeyFile(file: string, key: Buffer): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const fd = fs.openSync(file, 'wx', 0o600);
  try {
    fs.writeSync(fd, `${key.toString('hex')}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function parse(value: string, where: string): Buffer {
  try {
    return parseEncryptionKey(value);
  } catch {
    // parseEncryptionKey names BERTH_ENCRYPTION_KEY; say which input was wrong, never its value.
    throw new OperationError(`${where} is not an encryption key: 32 bytes as 64 hex characters or as base64 are expected.`);
  }
}
