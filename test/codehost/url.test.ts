import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { CodehostError } from '../../src/codehost/errors.js';
import { assertValidRef, parseRepositoryUrl, repositoryId, repositoryKey, sameRepository } from '../../src/codehost/url.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('repository URLs', () => {
  it('reads owner and name from every form git fetches from', () => {
    const cases: [string, string, string, string][] = [
      ['https://github.com/acme/agent.git', 'https', 'acme', 'agent'],
      ['https://github.com/acme/agent/', 'https', 'acme', 'agent'],
      ['http://git.example.com:8080/group/sub/agent', 'http', 'group/sub', 'agent'],
      ['git@github.com:acme/agent.git', 'ssh', 'acme', 'agent'],
      ['ssh://git@git.example.com:2222/acme/agent.git', 'ssh', 'acme', 'agent'],
      ['git://git.example.com/acme/agent.git', 'git', 'acme', 'agent'],
      ['file:///srv/repos/acme/agent.git', 'file', 'acme', 'agent'],
      ['/srv/repos/acme/agent', 'file', 'acme', 'agent'],
    ];
    for (const [url, transport, owner, name] of cases) {
      const location = parseRepositoryUrl(url);
      assert.deepEqual([location.transport, location.owner, location.name], [transport, owner, name], url);
      assert.equal(location.url, url, 'the URL is kept as given');
    }
  });

  it('splits credentials off an https URL and keeps the rest as given', () => {
    const location = parseRepositoryUrl('https://alice:p%40ss-w0rd@Git.Example.com/acme/agent.git');
    assert.equal(location.url, 'https://Git.Example.com/acme/agent.git');
    assert.deepEqual(location.credentials, { username: 'alice', password: 'p@ss-w0rd' });
    assert.equal(location.host, 'git.example.com');

    const tokenOnly = parseRepositoryUrl('https://ghp_token123@github.com/acme/agent');
    assert.equal(tokenOnly.url, 'https://github.com/acme/agent');
    assert.deepEqual(tokenOnly.credentials, { username: 'ghp_token123', password: '' });
  });

  it('keeps the user of an ssh URL (it is no secret) but refuses a password there', () => {
    assert.equal(parseRepositoryUrl('ssh://deploy@host.example/acme/agent').url, 'ssh://deploy@host.example/acme/agent');
    assert.throws(
      () => parseRepositoryUrl('ssh://deploy:hunter2@host.example/acme/agent'),
      (error: unknown) => error instanceof CodehostError && error.failure === 'invalid-url' && !error.message.includes('hunter2'),
    );
  });

  it('refuses every <transport>::<address> form and option-like hosts: only https, http, ssh, git and local repositories', () => {
    for (const url of [
      'fd::3',
      'fd::0,1/acme/agent',
      'ext::sh%20-c%20touch%20/tmp/pwned',
      'ext::git-upload-pack',
      'https::github.com/acme/agent',
      'git+ssh::host/acme/agent',
      'Ext::sh',
      '0x::y',
      'ssh://-oProxyCommand=touch%20x/acme/agent',
      'git@-oProxyCommand=x:acme/agent',
    ]) {
      assert.throws(
        () => parseRepositoryUrl(url),
        (error: unknown) => error instanceof CodehostError && error.failure === 'invalid-url',
        url,
      );
    }
    // scp-like ssh stays: a colon before any slash, one colon only.
    assert.equal(parseRepositoryUrl('git@github.com:acme/agent.git').transport, 'ssh');
    assert.equal(parseRepositoryUrl('host.example:acme/agent').transport, 'ssh');
  });

  it('refuses what git could take for an option, relative paths and unknown schemes, without quoting the URL', () => {
    for (const url of [
      '',
      '--upload-pack=touch /tmp/x',
      'relative/path',
      'ext::sh -c touch% /tmp/pwned',
      'ftp://host/x',
      'https://host/',
      'https://sec:ret@host',
    ]) {
      assert.throws(
        () => parseRepositoryUrl(url),
        (error: unknown) => error instanceof CodehostError && error.failure === 'invalid-url' && !error.message.includes('ret@'),
        url,
      );
    }
  });

  it('matches one repository across host case, .git, trailing slash, credentials and http/https/ssh forms', () => {
    const spellings = [
      'https://github.com/Acme/Agent',
      'https://github.com/acme/agent.git',
      'http://GitHub.com/acme/agent/',
      'git@github.com:acme/agent.git',
      'ssh://git@github.com/acme/agent',
      'https://x-access-token:ghs_abc@github.com/acme/agent.git',
    ];
    for (const a of spellings) for (const b of spellings) assert.ok(sameRepository(a, b), `${a} ~ ${b}`);
    assert.ok(!sameRepository('https://github.com/acme/agent', 'https://github.com/acme/agent2'));
    assert.ok(!sameRepository('https://github.com/acme/agent', 'https://gitlab.com/acme/agent'));
    // Outside GitHub the path's case is the server's business.
    assert.ok(!sameRepository('https://git.example.com/Acme/agent', 'https://git.example.com/acme/agent'));
    // Another http port is another server; an ssh port is not.
    assert.ok(!sameRepository('http://127.0.0.1:8080/acme/agent', 'http://127.0.0.1:9090/acme/agent'));
    assert.ok(sameRepository('ssh://git@git.example.com:2222/acme/agent', 'https://git.example.com/acme/agent.git'));
    assert.ok(sameRepository('file:///srv/acme/agent.git', '/srv/acme/agent.git/'));
    assert.ok(!sameRepository('/srv/acme/agent.git', '/srv/acme/agent'), 'two directories');
    assert.ok(!sameRepository('not a url', 'not a url'));
  });

  it('derives a positive safe integer id that every spelling of a repository shares', () => {
    const id = repositoryId(parseRepositoryUrl('https://github.com/acme/agent'));
    assert.ok(Number.isSafeInteger(id) && id > 0);
    assert.equal(repositoryId(parseRepositoryUrl('git@github.com:Acme/agent.git')), id);
    assert.notEqual(repositoryId(parseRepositoryUrl('https://github.com/acme/other')), id);
    assert.equal(repositoryKey(parseRepositoryUrl('https://github.com/acme/agent')), 'github.com/acme/agent');
  });

  it('gives the same id in another process', async () => {
    const script = `import('./src/codehost/url.ts').then((m) => console.log(m.repositoryId(m.parseRepositoryUrl('https://git.example.com/acme/agent.git'))))`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT });
    assert.equal(Number(stdout.trim()), repositoryId(parseRepositoryUrl('https://git.example.com/acme/agent')));
  });

  it('accepts branch, tag and sha refs and refuses options and revision expressions', () => {
    for (const ref of ['main', 'feature/x', 'v1.0', 'refs/heads/main', 'a1b2c3d', 'release-2024.1']) assertValidRef(ref);
    for (const ref of ['', '-x', '--upload-pack=x', 'a..b', 'main^', 'main~1', 'HEAD@{1}', 'a b', 'x:y', 'foo.lock', 'feature/']) {
      assert.throws(
        () => assertValidRef(ref),
        (error: unknown) => error instanceof CodehostError && error.failure === 'invalid-ref',
        ref,
      );
    }
  });
});
