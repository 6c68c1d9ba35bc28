import { createHash } from 'node:crypto';
import path from 'node:path';
import { repoRefProblem } from '../domain/source-fields.js';
import { CodehostError } from './errors.js';

export type Transport = 'https' | 'http' | 'ssh' | 'git' | 'file';

export interface RepositoryLocation {
  /** The URL as given, minus any credentials: what Berth stores, shows and hands to git. */
  url: string;
  transport: Transport;
  /** Lower-case host name; null for a repository on this machine. */
  host: string | null;
  /** A port written in the URL, unless it is the transport's default. */
  port: number | null;
  /** Path segments on the host (for a local repository: of the absolute directory path). */
  segments: string[];
  owner: string;
  name: string;
  /** Credentials that were embedded in an http(s) URL; split off `url`. */
  credentials?: { username: string; password: string };
}

const DEFAULT_PORTS: Record<string, number> = { https: 443, http: 80, ssh: 22, git: 9418 };
/** Hosts that treat owner and repository names case-insensitively. */
const CASE_INSENSITIVE_HOSTS = new Set(['github.com']);

const invalid = (why: string) => new CodehostError('invalid-url', `git: invalid repository URL: ${why}`);

/**
 * Reads a repository URL in the forms Berth lets git fetch from: `https://`, `http://`,
 * `ssh://`, `git://`, scp-like `user@host:owner/name.git`, `file://` or an absolute local
 * path. Refused: git's `<transport>::<address>` form, which runs a remote helper (`ext::`
 * runs a command, `fd::` reads the server's file descriptors), any other scheme, and
 * anything git could read as an option. Error messages never quote the URL, since it may
 * hold a password.
 */
export function parseRepositoryUrl(input: string): RepositoryLocation {
  const given = input.trim();
  if (given === '') throw invalid('it is empty');
  if (given.startsWith('-')) throw invalid('it starts with "-"');
  if (/[\s\0]/.test(given)) throw invalid('it contains white space or control characters');
  // git's rule (transport.c): alphanumerics, then also `+.-`, up to `::` pick a remote helper.
  if (/^[A-Za-z0-9][A-Za-z0-9+.-]*::/.test(given)) {
    throw invalid('the <transport>::<address> form (ext::, fd::, …) is not supported; use an https://, ssh:// or git:// URL');
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(given)?.[1]?.toLowerCase();
  if (scheme) return parseSchemeUrl(given, scheme);
  if (given.startsWith('/')) return localLocation(given, given);
  // git's rule: a colon before any slash makes it scp-like ssh (`git@github.com:owner/name`).
  const scp = /^(?:([^@/:]+)@)?([^/:]+):(.+)$/.exec(given);
  if (scp) return networkLocation(given, 'ssh', scp[2] as string, null, scp[3] as string);
  throw invalid('use an https://, http://, ssh://, git:// or file:// URL, user@host:path, or an absolute path');
}

function parseSchemeUrl(given: string, scheme: string): RepositoryLocation {
  const transport = scheme === 'git+ssh' || scheme === 'ssh+git' ? 'ssh' : scheme;
  if (!isTransport(transport)) throw invalid(`the scheme ${scheme}:// is not supported`);
  const afterScheme = given.slice(scheme.length + 3);
  const authorityEnd = afterScheme.search(/[/?#]/);
  const authority = authorityEnd === -1 ? afterScheme : afterScheme.slice(0, authorityEnd);
  const rest = authorityEnd === -1 ? '' : afterScheme.slice(authorityEnd);
  const at = authority.lastIndexOf('@');
  const userinfo = at === -1 ? null : authority.slice(0, at);
  const hostPort = at === -1 ? authority : authority.slice(at + 1);

  let parsed: URL;
  try {
    parsed = new URL(`${scheme}://${hostPort}${rest}`);
  } catch {
    throw invalid('it is not a well-formed URL');
  }
  if (transport === 'file') {
    if (parsed.hostname !== '' && parsed.hostname !== 'localhost') throw invalid('file:// URLs must name a path on this machine');
    return localLocation(`${scheme}://${hostPort}${rest}`, decodeURIComponent(parsed.pathname));
  }
  if (parsed.hostname === '') throw invalid('it names no host');

  let credentials: RepositoryLocation['credentials'];
  let keptUser = '';
  if (userinfo !== null) {
    const colon = userinfo.indexOf(':');
    const username = safeDecode(colon === -1 ? userinfo : userinfo.slice(0, colon));
    const password = colon === -1 ? '' : safeDecode(userinfo.slice(colon + 1));
    if (transport === 'http' || transport === 'https') credentials = { username, password };
    else if (colon !== -1) throw invalid('passwords in ssh:// URLs are not supported; use an SSH key');
    else keptUser = `${userinfo}@`;
  }
  const port = parsed.port === '' || Number(parsed.port) === DEFAULT_PORTS[transport] ? null : Number(parsed.port);
  const location = networkLocation(`${scheme}://${keptUser}${hostPort}${rest}`, transport, parsed.hostname, port, decodeURIComponent(parsed.pathname));
  return credentials ? { ...location, credentials } : location;
}

function networkLocation(url: string, transport: Transport, host: string, port: number | null, repoPath: string): RepositoryLocation {
  // ssh would read a host name starting with "-" as an option (-oProxyCommand=…).
  if (host.startsWith('-')) throw invalid('its host name starts with "-"');
  const segments = repoPath.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.length === 0) throw invalid('it names no repository path');
  if (segments.includes('..')) throw invalid('its path contains ".."');
  const name = stripGitSuffix(segments.at(-1) as string);
  const lowerHost = host.toLowerCase().replace(/^\[|\]$/g, '');
  const owner = segments.length > 1 ? segments.slice(0, -1).join('/') : lowerHost;
  return { url, transport, host: lowerHost, port, segments, owner, name };
}

function localLocation(url: string, directory: string): RepositoryLocation {
  if (!path.isAbsolute(directory)) throw invalid('local repositories need an absolute path');
  const normalized = path.resolve(directory);
  const segments = normalized.split('/').filter(Boolean);
  if (segments.length === 0) throw invalid('it names the root directory');
  const name = stripGitSuffix(segments.at(-1) as string);
  const owner = segments.at(-2) ?? '';
  return { url, transport: 'file', host: null, port: null, segments, owner, name };
}

/** The absolute directory of a local repository, as git should be given it. */
function localPath(location: RepositoryLocation): string {
  return `/${location.segments.join('/')}`;
}

/**
 * One string per repository, whatever the spelling: host case, `.git`, trailing slashes,
 * credentials and the transport do not matter (`git@github.com:o/r.git`,
 * `https://github.com/O/R/` and `ssh://git@github.com/o/r` are one repository). A port
 * counts only for http(s), where it picks another server; ssh ports lead to the same host.
 */
export function repositoryKey(location: RepositoryLocation): string {
  if (location.host === null) return `file:${localPath(location)}`;
  const host = location.host === 'www.github.com' ? 'github.com' : location.host;
  const webPort = (location.transport === 'http' || location.transport === 'https') && location.port !== null ? `:${location.port}` : '';
  const repoPath = [...location.segments.slice(0, -1), stripGitSuffix(location.segments.at(-1) as string)].join('/');
  return `${host}${webPort}/${CASE_INSENSITIVE_HOSTS.has(host) ? repoPath.toLowerCase() : repoPath}`;
}

/** Whether two repository URLs name the same repository (see repositoryKey). */
export function sameRepository(a: string, b: string): boolean {
  try {
    return repositoryKey(parseRepositoryUrl(a)) === repositoryKey(parseRepositoryUrl(b));
  } catch {
    return false;
  }
}

/**
 * The `git` provider's repository id: the first 53 bits of SHA-256 over the repository
 * key, so the same repository gets the same id in every process and after restarts, and
 * the id is a positive safe integer. Two repositories of one integration collide with
 * probability about n²/2⁵⁴ (one in 18 million for a thousand repositories).
 */
export function repositoryId(location: RepositoryLocation): number {
  const digest = createHash('sha256').update(repositoryKey(location)).digest();
  const high = digest.readUIntBE(0, 3) & 0x1fffff; // 21 bits
  const low = digest.readUInt32BE(3); // 32 bits
  return high * 2 ** 32 + low || 1;
}

/** Refuses a ref that git could misread or that names no branch, tag or commit (see repoRefProblem). */
export function assertValidRef(ref: string): void {
  const problem = repoRefProblem(ref);
  if (problem) throw new CodehostError('invalid-ref', `git: '${ref.slice(0, 100)}' is not a valid branch, tag or commit name: ${problem}`);
}

function stripGitSuffix(segment: string): string {
  return segment.endsWith('.git') && segment.length > 4 ? segment.slice(0, -4) : segment;
}

function isTransport(value: string): value is Transport {
  return value === 'https' || value === 'http' || value === 'ssh' || value === 'git' || value === 'file';
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
