import { CodehostError } from './errors.js';
import type { GitResult } from './git-process.js';
import type { RepositoryLocation } from './url.js';

// git runs with LC_ALL=C, so its messages are the English ones matched here.
const HOST_KEY = /Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|host key for .* has changed/i;
const AUTH =
  /Authentication failed|could not read (Username|Password)|terminal prompts disabled|Permission denied \(publickey|Invalid username or password|HTTP Basic: Access denied|returned error: 40[13]\b/i;
const NOT_FOUND =
  /Repository not found|does not appear to be a git repository|not a git repository|returned error: 404\b|repository '.*' not found|No such file or directory|does not exist/i;
const UNREACHABLE =
  /Could not resolve host|Connection refused|Failed to connect|timed out|Network is unreachable|No route to host|Connection reset|Empty reply from server|ssh: connect to host|SSL certificate problem|Could not read from remote repository|unable to access/i;

/**
 * Turns a failed git command that talked to a remote into an error naming the repository
 * (without credentials) and what to check. `result.stderrTail` is already scrubbed.
 */
export function remoteFailure(location: RepositoryLocation, activity: string, result: GitResult): CodehostError {
  const text = result.stderrTail.join('\n');
  const url = location.url;
  if (HOST_KEY.test(text)) {
    return new CodehostError(
      'host-key',
      `git: the SSH host key of ${location.host} is not the one Berth knows (or none is known and new keys are refused); not connecting to ${url}`,
    );
  }
  if (AUTH.test(text)) {
    const what = location.transport === 'ssh' ? "the integration's SSH key" : "the integration's username and password or token";
    return new CodehostError('auth-failed', `git: authentication failed for ${url}: check ${what}`);
  }
  if (NOT_FOUND.test(text)) {
    return new CodehostError('repository-not-found', `git: repository ${url} not found: check the URL and that the integration's credentials can read it`);
  }
  if (UNREACHABLE.test(text)) return new CodehostError('unreachable', `git: cannot reach ${url}: ${lastMessage(result)}`);
  return new CodehostError('failed', `git: ${activity} failed: ${lastMessage(result)}`);
}

/** The most telling line git printed: its last `fatal:` or `error:` line, else the last. */
function lastMessage(result: GitResult): string {
  const lines = result.stderrTail.filter((line) => !/^\s*$/.test(line));
  const line = [...lines].reverse().find((candidate) => /^(fatal|error):/.test(candidate)) ?? lines.at(-1) ?? `exit code ${result.code}`;
  return line.replace(/^(fatal|error):\s*/, '').slice(0, 400);
}
