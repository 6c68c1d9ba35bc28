// Which install command a JavaScript project gets, decided as the LangGraph CLI decides it:
// a lock file wins (yarn, then pnpm, then npm, then bun); without one, package.json's
// `packageManager` or `devEngines.packageManager.name`; else `npm i`.
import fs from 'node:fs/promises';
import path from 'node:path';

export interface NodeInstall {
  readonly command: string;
  /** The lock file the command reads, when there is one. */
  readonly lockFile: string | null;
}

const LOCKED: ReadonlyArray<{ lockFile: string; command: string }> = [
  { lockFile: 'yarn.lock', command: 'yarn install --frozen-lockfile' },
  { lockFile: 'pnpm-lock.yaml', command: 'pnpm i --frozen-lockfile' },
  { lockFile: 'package-lock.json', command: 'npm ci' },
  { lockFile: 'bun.lockb', command: 'bun i' },
];

const UNLOCKED: Readonly<Record<string, string>> = { yarn: 'yarn install', pnpm: 'pnpm i', bun: 'bun i' };

export async function detectNodeInstall(projectDir: string): Promise<NodeInstall> {
  for (const { lockFile, command } of LOCKED) {
    if (await isFile(path.join(projectDir, lockFile))) return { command, lockFile };
  }
  const manager = await declaredPackageManager(projectDir);
  return { command: (manager !== null && UNLOCKED[manager]) || 'npm i', lockFile: null };
}

/** `"packageManager": "pnpm@9.1.0"` → `pnpm`; an unreadable package.json declares nothing. */
async function declaredPackageManager(projectDir: string): Promise<string | null> {
  const manifest = await readPackageJson(projectDir);
  if (manifest === null) return null;
  const declared = manifest.packageManager;
  if (typeof declared === 'string' && declared !== '') return declared.replace(/^\^+/, '').split('@')[0] ?? null;
  const devEngines = manifest.devEngines;
  const fromDevEngines = isRecord(devEngines) && isRecord(devEngines.packageManager) ? devEngines.packageManager.name : undefined;
  return typeof fromDevEngines === 'string' && fromDevEngines !== '' ? fromDevEngines : null;
}

export async function readPackageJson(projectDir: string): Promise<Record<string, unknown> | null> {
  try {
    const manifest: unknown = JSON.parse(await fs.readFile(path.join(projectDir, 'package.json'), 'utf8'));
    return isRecord(manifest) ? manifest : null;
  } catch {
    return null;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export async function isFile(target: string): Promise<boolean> {
  try {
    return (await fs.stat(target)).isFile();
  } catch {
    return false;
  }
}
