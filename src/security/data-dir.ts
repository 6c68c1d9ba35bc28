import fs from 'node:fs';

/**
 * The data directory holds the encryption key, the database, repository mirrors and
 * uploads: it is Berth's alone (0700), whatever mode an older Berth or the umask gave it,
 * so nothing in it can be read by another user of the machine (the build sandbox's user
 * among them), even a file created with a wider mode.
 */
export function secureDataDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
}
