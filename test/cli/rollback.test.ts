import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../../src/cli/index.js';
import type { CliIo } from '../../src/cli/io.js';
import { type Client, client } from '../support/http.js';
import { GatedRuntime } from '../support/runtimes.js';
import { startTestServer, type TestServer } from '../support/server.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('berth rollback and berth unpin, against a real server', () => {
  let server: TestServer;
  let api: Client;
  let configHome: string;

  before(async () => {
    const runtime = new GatedRuntime();
    runtime.open();
    server = await startTestServer('sqlite', { overrides: { runtime } });
    api = client(server.url, { key: server.adminKey });
    configHome = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-cli-rollback-'));
  });
  after(async () => {
    server?.berth.app.server.closeAllConnections();
    await server?.close();
    fs.rmSync(configHome, { recursive: true, force: true });
  });

  async function berth(args: string[], key = server.adminKey): Promise<Run> {
    let stdout = '';
    let stderr = '';
    const io: CliIo = {
      out: (text) => void (stdout += text),
      err: (text) => void (stderr += text),
      isTTY: false,
      env: { XDG_CONFIG_HOME: configHome, BERTH_URL: server.url, BERTH_API_KEY: key },
      status: () => {},
    };
    return { code: await runCli(args, io), stdout, stderr };
  }

  const deployed = async (args: string[]) => {
    const run = await berth(['deploy', ...args]);
    assert.equal(run.code, 0, run.stderr);
  };
  const revisionsOf = async (name: string) =>
    JSON.parse((await berth(['revisions', 'list', name, '-o', 'json'])).stdout) as { id: string; revision_number: number }[];
  const deploymentOf = async (name: string) => JSON.parse((await berth(['deployments', 'get', name, '-o', 'json'])).stdout);

  test('rollback without a revision redeploys the one that served before the current one and pins; unpin lets go, twice harmlessly', async () => {
    await deployed(['--name', 'cli-rollback', '--image', 'registry.example/agent:1']);
    await deployed(['--name', 'cli-rollback', '--image', 'registry.example/agent:2']);
    const [second, first] = await revisionsOf('cli-rollback');
    assert.deepEqual([first!.revision_number, second!.revision_number], [1, 2]);
    await api('GET', `/v2/deployments/${(await deploymentOf('cli-rollback')).id}/revisions/${second!.id}?wait_for_terminal=30`);

    const rolledBack = await berth(['rollback', 'cli-rollback']);
    assert.equal(rolledBack.code, 0, rolledBack.stderr);
    const pinned = await deploymentOf('cli-rollback');
    assert.match(rolledBack.stdout, new RegExp(`rolling back to revision 1 \\(${first!.id}\\) as revision ${pinned.latest_revision_id}; pinned since `));
    assert.equal(pinned.pinned_revision_id, pinned.latest_revision_id);
    assert.equal(pinned.source_revision_config.image_uri, 'registry.example/agent:1');

    const unpinned = await berth(['unpin', 'cli-rollback']);
    assert.equal(unpinned.code, 0, unpinned.stderr);
    assert.equal(unpinned.stdout, `unpinned cli-rollback (was pinned to revision ${pinned.latest_revision_id})\n`);
    assert.equal((await deploymentOf('cli-rollback')).pinned_revision_id, null);
    const again = await berth(['unpin', 'cli-rollback']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, 'cli-rollback was not pinned\n');
  });

  test('rollback to a revision named by number or id; a deployment with nothing earlier is a clear error (exit 3)', async () => {
    await deployed(['--name', 'cli-named', '--image', 'registry.example/agent:1']);
    const alone = await berth(['rollback', 'cli-named']);
    assert.equal(alone.code, 3);
    assert.match(alone.stderr, /no revision of cli-named was DEPLOYED before the current one \(revision 1\)/);
    assert.match(alone.stderr, /berth rollback <deployment> <revision>/);

    await deployed(['--name', 'cli-named', '--image', 'registry.example/agent:2']);
    await deployed(['--name', 'cli-named', '--image', 'registry.example/agent:3']);
    const byNumber = await berth(['rollback', 'cli-named', '1']);
    assert.equal(byNumber.code, 0, byNumber.stderr);
    assert.equal((await deploymentOf('cli-named')).source_revision_config.image_uri, 'registry.example/agent:1');
    const [, , second] = await revisionsOf('cli-named');
    assert.equal(second!.revision_number, 2);
    const byId = await berth(['rollback', 'cli-named', second!.id]);
    assert.equal(byId.code, 0, byId.stderr);
    assert.equal((await deploymentOf('cli-named')).source_revision_config.image_uri, 'registry.example/agent:2');
    const missing = await berth(['rollback', 'cli-named', '99']);
    assert.equal(missing.code, 3);
    assert.match(missing.stderr, /has no revision number 99/);
  });

  test('a key of another workspace can neither roll back nor unpin', async () => {
    await deployed(['--name', 'cli-guarded', '--image', 'registry.example/agent:1']);
    const workspace = await api('POST', '/v1/workspaces', { body: { name: `cli-pins-${Date.now()}` } });
    const key = await api('POST', '/v1/api-keys', { body: { name: 'foreign', workspace_id: workspace.body.id, role: 'member' } });
    const id = (await deploymentOf('cli-guarded')).id as string;
    for (const args of [
      ['rollback', id, '1'],
      ['unpin', id],
    ]) {
      const run = await berth(args, key.body.key);
      assert.equal(run.code, 3, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /not found/i);
    }
  });
});
