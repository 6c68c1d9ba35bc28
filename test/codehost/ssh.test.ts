import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GitProvider } from '../../src/codehost/git-provider.js';
import { MirrorCache } from '../../src/codehost/mirror.js';
import { createRepository, type FixtureRepository, type TempDir, tempDir } from '../support/git-repos.js';
import { type SshServer, sshUnavailable, startSshServer } from '../support/ssh-server.js';
import { failsWith } from '../support/codehost.js';

const keyFiles = async () => (await readdir(os.tmpdir())).filter((name) => name.startsWith('berth-git-'));

const unavailable = await sshUnavailable();
if (unavailable) process.stdout.write(`# SKIP git over ssh: ${unavailable}\n`);

describe('git over ssh with a private key', { skip: unavailable ?? false }, () => {
  let dir: TempDir;
  let repo: FixtureRepository;
  let sshd: SshServer;
  let url: string;
  const keyLine = () => sshd.clientKey.split('\n')[1] as string;

  before(async () => {
    dir = await tempDir();
    repo = await createRepository(dir.path, { defaultBranch: 'trunk' });
    sshd = await startSshServer(dir.path);
    url = `ssh://${sshd.user}@127.0.0.1:${sshd.port}${repo.bare}`;
  });
  after(async () => {
    await sshd?.close();
    await dir?.remove();
  });

  it('lists and checks out with the key, the host key pinned, and removes the key file afterwards', async () => {
    const before = await keyFiles();
    const auth = { kind: 'ssh-key' as const, privateKey: sshd.clientKey, knownHosts: sshd.knownHostsLine };
    const [listed] = await new GitProvider({ repositories: [url], auth }).listRepositories();
    assert.deepEqual([listed?.owner.split('/').at(-1), listed?.name, listed?.defaultBranch], ['acme', 'agent', 'trunk']);

    const lines: string[] = [];
    const cache = new MirrorCache({ root: path.join(dir.path, 'mirrors') });
    const out = path.join(dir.path, 'out');
    assert.deepEqual(await cache.checkout({ url, ref: 'v1.0', auth, dest: out, log: (line) => lines.push(line) }), { commitSha: repo.commits.first });
    assert.equal(await readFile(path.join(out, 'README.md'), 'utf8'), 'version 1\n');
    for (const line of lines) assert.ok(!line.includes(keyLine()), line);
    assert.deepEqual(await keyFiles(), before, 'the temporary key directory is gone');
  });

  it('remembers a host key seen first and refuses one that does not match', async () => {
    const knownHostsFile = path.join(dir.path, 'known_hosts');
    await new GitProvider({ repositories: [url], auth: { kind: 'ssh-key', privateKey: sshd.clientKey }, knownHostsFile }).listRepositories();
    const hostKey = sshd.knownHostsLine.split(' ')[2] as string;
    assert.ok((await readFile(knownHostsFile, 'utf8')).includes(hostKey), 'the host key was remembered');

    // A remembered key that no longer matches (here: written for another key) is refused.
    const otherKey = 'AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl';
    const changed = path.join(dir.path, 'known_hosts_changed');
    await writeFile(changed, `[127.0.0.1]:${sshd.port} ssh-ed25519 ${otherKey}\n`);
    await assert.rejects(
      new GitProvider({ repositories: [url], auth: { kind: 'ssh-key', privateKey: sshd.clientKey }, knownHostsFile: changed }).listRepositories(),
      failsWith('host-key'),
    );

    const pinnedElsewhere = { kind: 'ssh-key' as const, privateKey: sshd.clientKey, knownHosts: `[127.0.0.1]:${sshd.port} ssh-ed25519 ${otherKey}` };
    await assert.rejects(new GitProvider({ repositories: [url], auth: pinnedElsewhere }).listRepositories(), failsWith('host-key'));
  });

  it('says authentication failed, without the key, when the server does not accept it', async () => {
    const auth = { kind: 'ssh-key' as const, privateKey: sshd.strangerKey, knownHosts: sshd.knownHostsLine };
    const strangerLine = sshd.strangerKey.split('\n')[1] as string;
    await assert.rejects(new GitProvider({ repositories: [url], auth }).listRepositories(), failsWith('auth-failed', strangerLine));
  });
});
