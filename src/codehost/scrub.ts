import type { GitAuth } from './types.js';

const MASK = '***';

/**
 * Removes credentials from text git printed before it reaches a log or an error: the
 * known secrets in every spelling git might echo (plain, URL-encoded, inside a basic
 * authorization value), `user:password@` in URLs, and authorization headers.
 */
export function createScrubber(auth: GitAuth | undefined): (text: string) => string {
  const secrets = new Set<string>();
  if (auth?.kind === 'basic') {
    for (const value of [auth.password, basicToken(auth)]) {
      if (value.length >= 3) {
        secrets.add(value);
        secrets.add(encodeURIComponent(value));
      }
    }
  }
  if (auth?.kind === 'ssh-key') {
    for (const line of auth.privateKey.split('\n')) if (line.trim().length >= 16 && !line.startsWith('-----')) secrets.add(line.trim());
  }
  const ordered = [...secrets].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const secret of ordered) out = out.split(secret).join(MASK);
    return out
      .replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/@\s]*:[^/@\s]*@/gi, `$1${MASK}@`)
      .replace(/(authorization:\s*(?:basic|bearer|token)\s+)\S+/gi, `$1${MASK}`);
  };
}

/** The value of an HTTP basic `Authorization` header for these credentials. */
export function basicToken(auth: { username: string; password: string }): string {
  return Buffer.from(`${auth.username}:${auth.password}`).toString('base64');
}
