import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openGitSession } from '../../src/codehost/git-auth.js';
import { runGit } from '../../src/codehost/git-process.js';
import { parseRepositoryUrl } from '../../src/codehost/url.js';
import { createRepository, type FixtureRepository, type TempDir, tempDir } from '../support/git-repos.js';
import { deadline } from '../support/deadline.js';

/**
 * URLs that got past parseRepositoryUrl (stored before a rule, say) reach git only with
 * GIT_ALLOW_PROTOCOL set, so git itself refuses other transports.
 */
describe('transports git may use', () => {
  let dir: TempDir;
  let repo: FixtureRepository;
  const location = parseRepositoryUrl('https://git.example.invalid/acme/agent.git');

  before(async () => {
    dir = await tempDir();
    repo = await createRepository(dir.path);
  });
  after(async () => {
    await dir?.remove();
  });

  const lsRemote = (url: string, env: NodeJS.ProcessEnv) =>
    runGit({ args: ['ls-remote', '--heads', url], env, scrub: (text) => text, activity: 'listing', signal: AbortSignal.timeout(deadline(30_000)) });

  it('refuses the ext and fd remote helpers, and local repositories unless they are allowed', async () => {
    const marker = path.join(dir.path, 'pwned');
    const closed = await openGitSession(location, undefined, { allowLocal: false });
    try {
      for (const [url, transport] of [
        [`ext::sh -c touch% ${marker}`, 'ext'],
        ['fd::0', 'fd'],
        ['fd::0,1', 'fd'],
        [`file://${repo.bare}`, 'file'],
        [repo.bare, 'file'],
      ] as const) {
        const result = await lsRemote(url, closed.env);
        assert.notEqual(result.code, 0, url);
        assert.match(result.stderrTail.join('\n'), new RegExp(`transport '${transport}' not allowed`), url);
      }
    } finally {
      await closed.dispose();
    }
    assert.equal(existsSync(marker), false, 'the ext:: command never ran');

    const open = await openGitSession(location, undefined, { allowLocal: true });
    try {
      const local = await lsRemote(`file://${repo.bare}`, open.env);
      assert.equal(local.code, 0, local.stderrTail.join('\n'));
      assert.match(local.stdout, /refs\/heads\/trunk/);
      for (const url of [`ext::sh -c touch% ${marker}`, 'fd::0']) assert.notEqual((await lsRemote(url, open.env)).code, 0, url);
    } finally {
      await open.dispose();
    }
    assert.equal(existsSync(marker), false);
  });

  it('allows only network transports to git run without a session', async () => {
    const result = await lsRemote(repo.bare, { PATH: process.env.PATH, LC_ALL: 'C' });
    assert.notEqual(result.code, 0);
    assert.match(result.stderrTail.join('\n'), /transport 'file' not allowed/);
  });

  it('does not follow an http redirect to a local repository, even where local repositories are allowed', async () => {
    const server = http.createServer((_request, response) => {
      response.writeHead(302, { Location: `file://${repo.bare}/info/refs?service=git-upload-pack` });
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const session = await openGitSession(location, undefined, { allowLocal: true });
    try {
      const result = await lsRemote(`http://127.0.0.1:${(server.address() as AddressInfo).port}/acme/agent.git`, session.env);
      assert.notEqual(result.code, 0);
      assert.doesNotMatch(result.stdout, /refs\/heads/);
    } finally {
      await session.dispose();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
