import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { createRepository, type TempDir, tempDir } from '../support/git-repos.js';
import { type GitHttpServer, startGitHttpServer } from '../support/git-http-server.js';
import { type Client, client } from '../support/http.js';
import { descendantsOf } from '../support/processes.js';
import { eventually } from '../support/runtimes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { otherTenants } from '../support/suite.js';
import { deadline } from '../support/deadline.js';
import { describeEachDatabase } from '../support/database.js';

const GIT_CONCURRENCY = 4;
const GIT_TIMEOUT_SECONDS = 2;
/**
 * Generous: before the git processes were bounded, /ok stalled for 6–15 s in this test on a
 * loaded two-core machine; bounded, it answers within ~1.5 s there even under a load of 15.
 */
const SLOW_OK_MS = 5000;

/** A remote that accepts connections and never answers: git waits for it forever on its own. */
async function silentRemote() {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  let mostAtOnce = 0;
  const server = net.createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    mostAtOnce = Math.max(mostAtOnce, sockets.size);
    socket.on('error', () => {});
    // Read (and drop) what git sends, so that its side closing is seen at once.
    socket.resume();
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: (name: string) => `http://127.0.0.1:${port}/acme/${name}.git`,
    get accepted() {
      return accepted;
    },
    get mostAtOnce() {
      return mostAtOnce;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * While `work` runs: the most git commands this test's server ran at once (git processes it
 * started itself; each starts a `git remote-http` and `git-remote-http` below it), and the
 * slowest `/ok`. Sampled every 20 ms; `/ok` asked every 50 ms.
 */
async function watchWhile<T>(server: TestServer, work: Promise<T>) {
  let done = false;
  let mostGit = 0;
  let slowestOkMs = 0;
  let okAnswers = 0;
  const sampling = (async () => {
    while (!done) {
      const git = (await descendantsOf(process.pid)).filter((p) => p.name === 'git' && p.parent === process.pid).length;
      mostGit = Math.max(mostGit, git);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const probing = (async () => {
    while (!done) {
      const started = performance.now();
      const ok = await fetch(`${server.url}/ok`);
      await ok.text();
      slowestOkMs = Math.max(slowestOkMs, performance.now() - started);
      assert.equal(ok.status, 200);
      okAnswers += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  try {
    return { result: await work, mostGit: () => mostGit, slowestOkMs: () => slowestOkMs, okAnswers: () => okAnswers };
  } finally {
    done = true;
    await Promise.all([sampling, probing]);
  }
}

const gitChildren = async () => (await descendantsOf(process.pid)).filter((p) => p.name.startsWith('git'));

describeEachDatabase('repository listings under load', (kind) => {
  let server: TestServer;
  let api: Client;
  let member: Client;
  let remote: Awaited<ReturnType<typeof silentRemote>>;
  let dir: TempDir;
  let http: GitHttpServer;

  before(async () => {
    server = await startTestServer(kind, {
      engine: false,
      env: { BERTH_GIT_CONCURRENCY: String(GIT_CONCURRENCY), BERTH_GIT_TIMEOUT_SECONDS: String(GIT_TIMEOUT_SECONDS) },
    });
    api = client(server.url, { key: server.adminKey });
    const key = await api('POST', '/v1/api-keys', { body: { name: 'member', workspace_id: server.workspaceId, role: 'member' } });
    member = client(server.url, { key: key.body.key });
    remote = await silentRemote();
    dir = await tempDir();
    await createRepository(dir.path, { owner: 'acme', name: 'agent', defaultBranch: 'trunk' });
    http = await startGitHttpServer({ root: dir.path });
  });
  after(async () => {
    await server?.close();
    await remote?.close();
    await http?.close();
    await dir?.remove();
  });

  const integrationOf = async (caller: Client, repositories: string[]) => {
    const created = await caller('POST', '/v1/integrations/codehost', { body: { provider: 'git', name: 'silent', git: { repositories } } });
    assert.equal(created.status, 201, created.text);
    return created.body.id as string;
  };

  test('60 listings of one integration whose remote never answers: one git process, 504 for all, /ok answers throughout', async () => {
    const id = await integrationOf(api, [remote.url('agent')]);
    const acceptedBefore = remote.accepted;
    const watched = await watchWhile(server, Promise.all(Array.from({ length: 60 }, () => member('GET', `/v1/integrations/codehost/${id}/repos`))));
    for (const answer of watched.result) {
      assert.equal(answer.status, 504, answer.text);
      assert.equal(answer.body.code, 'codehost_timeout');
      assert.match(
        answer.body.detail,
        new RegExp(`^Integration ID ${id}: git: no result within ${GIT_TIMEOUT_SECONDS} s while listing the refs of ${remote.url('agent')}`),
      );
    }
    assert.equal(remote.accepted - acceptedBefore, 1, 'the 60 listings shared one git ls-remote');
    assert.ok(watched.mostGit() <= 1, `${watched.mostGit()} git processes at once`);
    assert.ok(watched.okAnswers() >= 3, 'the health check was asked while the listings hung');
    assert.ok(watched.slowestOkMs() < SLOW_OK_MS, `/ok took ${Math.round(watched.slowestOkMs())} ms`);
    // The timeout killed git's whole process group, its remote helper included.
    await eventually(async () => (await gitChildren()).length === 0, 'git and its helpers to be gone');
  });

  test('60 listings over 12 such integrations: at most BERTH_GIT_CONCURRENCY git processes, each listing ends in time', async () => {
    const ids = await Promise.all(Array.from({ length: 12 }, (_, i) => integrationOf(api, [remote.url(`repo-${i}`)])));
    const started = performance.now();
    const watched = await watchWhile(
      server,
      Promise.all(ids.flatMap((id) => Array.from({ length: 5 }, () => member('GET', `/v1/integrations/codehost/${id}/repos`)))),
    );
    const elapsed = performance.now() - started;
    assert.equal(watched.result.length, 60);
    for (const answer of watched.result) {
      assert.equal(answer.status, 504, answer.text);
      assert.equal(answer.body.code, 'codehost_timeout');
    }
    assert.ok(watched.mostGit() <= GIT_CONCURRENCY, `${watched.mostGit()} git processes at once`);
    assert.ok(remote.mostAtOnce <= GIT_CONCURRENCY, `${remote.mostAtOnce} connections to the remote at once`);
    // A listing ends by its deadline, twice the git timeout (4 s here), even while it waits
    // for a free git process; the margin is for a loaded machine (listings used to wait 60 s).
    assert.ok(elapsed < 2 * GIT_TIMEOUT_SECONDS * 1000 + deadline(10_000), `the listings took ${Math.round(elapsed)} ms`);
    assert.ok(watched.slowestOkMs() < SLOW_OK_MS, `/ok took ${Math.round(watched.slowestOkMs())} ms`);
    await eventually(async () => (await gitChildren()).length === 0, 'git and its helpers to be gone');
  });

  test('concurrent listings of a working remote share one call, and its answer is reused for a while', async () => {
    const id = await integrationOf(api, [`${http.url}/acme/agent.git`]);
    const before = http.requests.length;
    const answers = await Promise.all(Array.from({ length: 20 }, () => member('GET', `/v1/integrations/codehost/${id}/repos`)));
    for (const answer of answers) {
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body[0].default_branch, 'trunk');
    }
    const asked = http.requests.length - before;
    assert.ok(asked >= 1 && asked <= 2, `the remote was asked ${asked} times`);
    assert.equal((await member('GET', `/v1/integrations/codehost/${id}/repos`)).status, 200);
    assert.equal(http.requests.length - before, asked, 'the next listing reused the answer');
  });

  test('a member of another workspace cannot list ours (404, the remote is not asked) nor share our remembered answer', async () => {
    const ours = await integrationOf(api, [`${http.url}/acme/agent.git`]);
    assert.equal((await member('GET', `/v1/integrations/codehost/${ours}/repos`)).status, 200);
    const hanging = await integrationOf(api, [remote.url('ours')]);
    // An admin of their own workspace, so that they can also make integrations there.
    const { otherWorkspaceId } = await otherTenants({ server, api, anonymous: client(server.url) });
    const key = await api('POST', '/v1/api-keys', { body: { name: 'other-admin', workspace_id: otherWorkspaceId, role: 'admin' } });
    const other = client(server.url, { key: key.body.key });
    const acceptedBefore = remote.accepted;
    const requestsBefore = http.requests.length;
    for (const id of [ours, hanging]) {
      const refused = await other('GET', `/v1/integrations/codehost/${id}/repos`);
      assert.equal(refused.status, 404, refused.text);
      assert.deepEqual(refused.body, { detail: `Integration ID ${id} not found.`, code: 'integration_not_found' });
    }
    assert.equal(remote.accepted, acceptedBefore, 'their requests started no git process');
    assert.equal(http.requests.length, requestsBefore);
    // Their own integration of the same repository is listed for them, not answered from ours.
    const theirs = await integrationOf(other, [`${http.url}/acme/agent.git`]);
    const listed = await other('GET', `/v1/integrations/codehost/${theirs}/repos`);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body[0].host_integration_id, theirs);
    assert.ok(http.requests.length > requestsBefore, 'their listing asked the remote itself');
  });
});
