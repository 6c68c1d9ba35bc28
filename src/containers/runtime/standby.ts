import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { DriverError, type RunRequest, type StepContext } from '../driver.js';
import { lastOutputClause, runTool } from '../commands.js';
import { type ResolvedRuntime } from '../detect.js';
import { DEPLOYMENT_LABEL, REVISION_LABEL, removeContainers } from './containers.js';
import { errorMessage, safeLog } from './step.js';

/**
 * Standby containers (docs/architecture.md, "Rollback in seconds"): a replaced container is
 * paused (cgroup freezer: no CPU, its memory kept) instead of removed, so a rollback to its
 * revision unpauses it rather than starting a server again. Its name says until when it may
 * be kept, so the limit survives a restart of Berth without a store of its own.
 */

/** A salted digest of the image and environment the container was started with: never the values. */
export const SETTINGS_LABEL = 'berth.settings';
/** The host port the server listens on (published in bridge mode, its own PORT on the host's network). */
export const PORT_LABEL = 'berth.port';
const STANDBY_MARK = '.standby-';

export function settingsLabel(request: RunRequest, salt = randomBytes(16).toString('hex')): string {
  return `${salt}:${settingsDigest(salt, request)}`;
}

/** Whether a container labelled `label` was started from the request's image with its environment (bar the revision's own id). */
export function sameSettings(label: string, request: RunRequest): boolean {
  const [salt = '', digest = ''] = label.split(':');
  if (!salt || !digest) return false;
  const expected = Buffer.from(settingsDigest(salt, request));
  const actual = Buffer.from(digest);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

function settingsDigest(salt: string, request: RunRequest): string {
  const skipped = new Set(request.revisionEnv ?? []);
  const entries = Object.entries(request.env)
    .filter(([key]) => !skipped.has(key))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256')
    .update(salt)
    .update('\0')
    .update(JSON.stringify([request.image, entries]))
    .digest('hex');
}

export function standbyName(name: string, expiresAtMs: number): string {
  return `${name}${STANDBY_MARK}${Math.ceil(expiresAtMs / 1000)}`;
}

/** The name the container ran under and when its standby ends; null for a container that is not a standby. */
export function parseStandbyName(name: string): { base: string; expiresAtMs: number } | null {
  const at = name.lastIndexOf(STANDBY_MARK);
  if (at <= 0) return null;
  const seconds = Number(name.slice(at + STANDBY_MARK.length));
  return Number.isSafeInteger(seconds) && seconds > 0 ? { base: name.slice(0, at), expiresAtMs: seconds * 1000 } : null;
}

interface StandbyContainer {
  name: string;
  base: string;
  expiresAtMs: number;
  deploymentId: string;
  revisionId: string;
  settings: string;
  imageId: string;
  port: number | null;
}

/** The standby containers carrying `label=value`. */
async function standbys(runtime: ResolvedRuntime, label: string, value: string | null): Promise<StandbyContainer[]> {
  const filter = value === null ? `label=${label}` : `label=${label}=${value}`;
  const listed = await runTool(runtime, ['ps', '-a', '--filter', filter, '--format', '{{.Names}}']);
  if (listed.code !== 0) throw new DriverError(`Could not list containers: \`${runtime.kind} ps\` failed: ${lastOutputClause(listed)}`);
  const names = listed.stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((name) => parseStandbyName(name) !== null);
  if (names.length === 0) return [];
  // One inspect for them all: each runtime command is a process of its own, on a rollback's path.
  const labels = [DEPLOYMENT_LABEL, REVISION_LABEL, SETTINGS_LABEL, PORT_LABEL].map((key) => `{{index .Config.Labels "${key}"}}`);
  const inspected = await runTool(runtime, ['container', 'inspect', '--format', ['{{.Name}}', ...labels, '{{.Image}}'].join('\t'), ...names]);
  // A container taken or removed since the listing fails the command; the others are still printed.
  const found: StandbyContainer[] = [];
  for (const line of inspected.stdout.split('\n').filter(Boolean)) {
    const [rawName = '', deploymentId = '', revisionId = '', settings = '', port = '', imageId = ''] = line.trim().split('\t');
    const name = rawName.replace(/^\//, '');
    const parsed = parseStandbyName(name);
    if (!parsed || !names.includes(name)) continue;
    const portNumber = Number(port);
    found.push({ name, ...parsed, deploymentId, revisionId, settings, imageId, port: Number.isInteger(portNumber) && portNumber > 0 ? portNumber : null });
  }
  return found;
}

export interface StandbyPolicy {
  /** How long a replaced container is kept paused; 0 removes it at once. */
  keepMs: number;
  /** Standby containers kept per deployment; the oldest go first. */
  perDeployment: number;
}

/**
 * Pauses a replaced container and renames it to say until when it is kept, after removing
 * the deployment's oldest standbys beyond the limit. False when it could not be kept (it is
 * then removed, like a retired one).
 */
export async function parkContainer(runtime: ResolvedRuntime, name: string, policy: StandbyPolicy, context: StepContext): Promise<boolean> {
  const owner = await runTool(runtime, ['container', 'inspect', '--format', `{{index .Config.Labels "${DEPLOYMENT_LABEL}"}}`, name]);
  if (owner.code !== 0) return false;
  const deploymentId = owner.stdout.trim();
  try {
    const kept = (await standbys(runtime, DEPLOYMENT_LABEL, deploymentId)).sort((a, b) => a.expiresAtMs - b.expiresAtMs);
    const surplus = kept.slice(0, Math.max(0, kept.length - (policy.perDeployment - 1))).map((standby) => standby.name);
    if (surplus.length > 0) await removeContainers(runtime, surplus);
    const paused = await runTool(runtime, ['pause', name]);
    if (paused.code !== 0) throw new DriverError(`\`${runtime.kind} pause\` failed: ${lastOutputClause(paused)}`);
    const renamed = await runTool(runtime, ['rename', name, standbyName(name, Date.now() + policy.keepMs)]);
    if (renamed.code !== 0) throw new DriverError(`\`${runtime.kind} rename\` failed: ${lastOutputClause(renamed)}`);
    return true;
  } catch (error) {
    await safeLog(context, 'WARNING', `Could not keep container ${name} as a standby (${errorMessage(error)}); removing it`);
    await removeContainers(runtime, [name]);
    return false;
  }
}

/**
 * A standby container of the request's deployment that runs the same image with the same
 * environment (a rollback makes a copy of an earlier revision), unpaused under the name of
 * the request's revision; null when there is none. Standbys of the deployment that have
 * expired are removed on the way.
 */
export async function takeStandby(runtime: ResolvedRuntime, request: RunRequest, name: string, context: StepContext): Promise<{ port: number } | null> {
  // Only the deployment's own: a container of another deployment is never resumed for this one.
  const candidates = (await standbys(runtime, DEPLOYMENT_LABEL, request.deploymentId)).filter((standby) => standby.deploymentId === request.deploymentId);
  let taken: StandbyContainer | null = null;
  for (const standby of candidates) {
    if (standby.expiresAtMs <= Date.now()) {
      await context.log('INFO', `Removing standby container ${standby.name}: its time has ended`);
      await removeContainers(runtime, [standby.name]);
    } else if (taken === null && (await usable(runtime, standby, request))) {
      taken = standby;
    }
  }
  if (!taken || taken.port === null) return null;
  const renamed = await runTool(runtime, ['rename', taken.name, name]);
  if (renamed.code !== 0) {
    // Another engine process took it first, or it was removed on expiry.
    await context.log('INFO', `Could not take standby container ${taken.name} (${lastOutputClause(renamed)}); starting a new one`);
    return null;
  }
  const unpaused = await runTool(runtime, ['unpause', name]);
  if (unpaused.code !== 0) {
    await context.log('WARNING', `Could not unpause standby container ${name} (${lastOutputClause(unpaused)}); removing it and starting a new one`);
    await removeContainers(runtime, [name]);
    return null;
  }
  return { port: taken.port };
}

async function usable(runtime: ResolvedRuntime, standby: StandbyContainer, request: RunRequest): Promise<boolean> {
  if (!sameSettings(standby.settings, request)) return false;
  // The name may have been given to another image since (a tag pushed again).
  const image = await runTool(runtime, ['image', 'inspect', '--format', '{{.Id}}', request.image]);
  return image.code === 0 && sameImageId(image.stdout.trim(), standby.imageId);
}

function sameImageId(a: string, b: string): boolean {
  const strip = (id: string) => id.replace(/^sha256:/, '');
  return strip(a) !== '' && strip(a) === strip(b);
}

/** Removes every standby container (of any deployment) whose time has ended; returns their names. */
export async function removeExpiredStandbys(runtime: ResolvedRuntime, now = Date.now()): Promise<string[]> {
  const expired = (await standbys(runtime, DEPLOYMENT_LABEL, null)).filter((standby) => standby.expiresAtMs <= now).map((standby) => standby.name);
  if (expired.length > 0) await removeContainers(runtime, expired);
  return expired;
}
