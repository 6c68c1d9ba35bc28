import { readFile } from 'node:fs/promises';

/** The unprivileged host user that builds run as, and the id ranges its user namespaces map. */
export interface BuildUser {
  name: string;
  uid: number;
  gid: number;
}

/** What rootless buildah needs: at least this many subordinate ids (a whole 16-bit id space). */
const MIN_SUBORDINATE_IDS = 65_536;

/**
 * Looks the build user up in /etc/passwd and checks its /etc/subuid and /etc/subgid ranges.
 * Returns the user, or what is missing and how to fix it.
 */
export async function findBuildUser(
  name: string,
  files = { passwd: '/etc/passwd', subuid: '/etc/subuid', subgid: '/etc/subgid' },
): Promise<BuildUser | string> {
  const fix = 'run scripts/setup-containers.sh as root, which creates it';
  const entry = (await readFile(files.passwd, 'utf8').catch(() => ''))
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === name);
  if (!entry) return `the build user '${name}' does not exist (BERTH_BUILD_USER); ${fix}`;
  const uid = Number(entry[2]);
  const gid = Number(entry[3]);
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) return `the build user '${name}' has no valid uid and gid in ${files.passwd}`;
  if (uid === 0) return `the build user '${name}' is root; builds must run as an unprivileged user`;
  for (const [kind, file] of [
    ['uid', files.subuid],
    ['gid', files.subgid],
  ] as const) {
    const ids = subordinateIds(await readFile(file, 'utf8').catch(() => ''), name, uid);
    if (ids < MIN_SUBORDINATE_IDS) return `the build user '${name}' needs ${MIN_SUBORDINATE_IDS} subordinate ${kind}s in ${file} (it has ${ids}); ${fix}`;
  }
  return { name, uid, gid };
}

/** The number of subordinate ids /etc/subuid (or subgid) gives the user, named or by number. */
export function subordinateIds(text: string, name: string, uid: number): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const [owner, , count] = line.trim().split(':');
    if (owner === name || owner === String(uid)) total += Number(count) || 0;
  }
  return total;
}
