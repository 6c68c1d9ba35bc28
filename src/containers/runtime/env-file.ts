import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DriverError } from '../driver.js';

const MAX_ENV_FILE_VALUE = 16 * 1024;

/**
 * Writes `env` to a fresh 0600 env file, hands `use` its path and the variables that must go
 * by name instead, and removes the file once `use` settles.
 */
export async function withEnvFile<T>(
  env: Record<string, string>,
  runtimeEnv: NodeJS.ProcessEnv,
  use: (envFile: string, byName: Record<string, string>) => Promise<T>,
): Promise<T> {
  // Env files hold one line per variable and their readers cap line length (64 KiB), so such
  // values go by name through the runtime process's environment (`--env NAME` copies the value
  // from there); neither way puts a value in argv.
  const fileLines: string[] = [];
  const byName: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (/[\r\n]/.test(value) || value.length > MAX_ENV_FILE_VALUE) byName[key] = value;
    else fileLines.push(`${key}=${value}`);
  }
  for (const key of Object.keys(byName)) {
    if (key in runtimeEnv) {
      throw new DriverError(
        `The value of ${key} cannot go in an env file (it spans several lines or is longer than ${MAX_ENV_FILE_VALUE / 1024} KiB), ` +
          `and ${key} is also a variable of the container runtime's own environment, so it cannot be passed safely. Rename the variable or encode its value on one line (e.g. base64).`,
      );
    }
  }

  const dir = await mkdtemp(path.join(os.tmpdir(), 'berth-env-'));
  const envFile = path.join(dir, 'env');
  try {
    await writeFile(envFile, `${fileLines.join('\n')}\n`, { mode: 0o600, flag: 'wx' });
    return await use(envFile, byName);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
