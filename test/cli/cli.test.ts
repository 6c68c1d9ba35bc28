import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import yaml from 'js-yaml';
import { runCli } from '../../src/cli/index.js';
import type { CliIo } from '../../src/cli/io.js';
import { GatedRuntime } from '../support/runtimes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { nodeArguments } from '../support/entry.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('the berth CLI, against a real server', () => {
  let server: TestServer;
  let runtime: GatedRuntime;
  let configHome: string;
  const everything: string[] = [];

  before(async () => {
    runtime = new GatedRuntime();
    runtime.open();
    server = await startTestServer('sqlite', { overrides: { runtime } });
    configHome = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-cli-config-'));
  });
  after(async () => {
    runtime?.open();
    // As in test/client/client.test.ts: do not wait out connections left after event streams.
    server?.berth.app.server.closeAllConnections();
    await server?.close();
    fs.rmSync(configHome, { recursive: true, force: true });
  });

  const connection = () => ({ BERTH_URL: server.url, BERTH_API_KEY: server.adminKey });

  async function berth(args: string[], env: Record<string, string | undefined> = connection(), tty?: string[]): Promise<Run> {
    let stdout = '';
    let stderr = '';
    const io: CliIo = {
      out: (text) => void (stdout += text),
      err: (text) => void (stderr += text),
      isTTY: tty !== undefined,
      env: { XDG_CONFIG_HOME: configHome, ...env },
      status: (text) => void tty?.push(text),
    };
    const code = await runCli(args, io);
    everything.push(stdout, stderr, ...(tty ?? []));
    return { code, stdout, stderr };
  }

  test('deploy creates a deployment, follows it to DEPLOYED with a timeline and exits 0; a second deploy updates it', async () => {
    const first = await berth(['deploy', '--name', 'cli-app', '--image', 'registry.example/agent:1', '--secret', 'TOKEN=s3cret']);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /created deployment cli-app \(/);
    assert.match(first.stdout, /^\s+\d+\.\ds {2}DEPLOYING/m);
    assert.match(first.stdout, /^\s+\d+\.\ds {2}DEPLOYED/m);
    assert.match(first.stdout, /deployed in \d+\.\ds at http:\/\/127\.0\.0\.1:\d+/);

    const second = await berth(['deploy', '--name', 'cli-app', '--image', 'registry.example/agent:2']);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /updated deployment cli-app \(/);
    const revisions = await berth(['revisions', 'list', 'cli-app', '-o', 'json']);
    const listed = JSON.parse(revisions.stdout);
    assert.deepEqual(
      listed.map((revision: any) => revision.revision_number),
      [2, 1],
    );
    assert.equal(listed[0].status, 'DEPLOYED');
  });

  test('in a terminal, deploy draws a live progress line with the status, elapsed time and last log line, and clears it', async () => {
    const progress: string[] = [];
    const run = await berth(['deploy', '--name', 'cli-tty', '--image', 'registry.example/agent:1'], connection(), progress);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(
      progress.some((line) => /^DEPLOYING \d+\.\ds {2}Started registry\.example\/agent:1/.test(line)),
      progress.join('\n'),
    );
    assert.equal(progress.at(-1), '');
  });

  test('deploy --json prints only JSON lines: status changes, log lines and a final result', async () => {
    const run = await berth(['deploy', '--json', '--name', 'cli-json', '--image', 'registry.example/agent:1']);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.ok(lines.some((line) => line.type === 'status' && line.status === 'DEPLOYING'));
    assert.ok(lines.some((line) => line.type === 'log' && /Started registry\.example\/agent:1/.test(line.message)));
    const result = lines.at(-1);
    assert.deepEqual([result.type, result.status, result.exit_code], ['result', 'DEPLOYED', 0]);
    assert.equal(lines.filter((line) => line.type === 'result').length, 1);
  });

  test('deploy exits 1 on DEPLOY_FAILED with the status message and the last log lines; --json says so too', async () => {
    const run = await berth(['deploy', '--name', 'cli-bad', '--image', 'registry.example/unhealthy:1']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /is DEPLOY_FAILED: .+/);
    assert.match(run.stderr, /last log lines:\n {2}\[deploy\] /);
    const json = await berth(['deploy', '--json', '--name', 'cli-bad-json', '--image', 'registry.example/unhealthy:1']);
    assert.equal(json.code, 1);
    const result = JSON.parse(json.stdout.trimEnd().split('\n').at(-1)!);
    assert.deepEqual([result.status, result.exit_code], ['DEPLOY_FAILED', 1]);
    assert.ok(result.status_message);
  });

  test('deploy exits 2 when the revision is not terminal before --timeout', async () => {
    runtime.close();
    try {
      const run = await berth(['deploy', '--json', '--name', 'cli-slow', '--image', 'registry.example/agent:1', '--timeout', '1']);
      assert.equal(run.code, 2, run.stderr);
      const result = JSON.parse(run.stdout.trimEnd().split('\n').at(-1)!);
      assert.deepEqual([result.type, result.timed_out, result.exit_code], ['result', true, 2]);
      assert.match(run.stderr, /is still DEPLOYING after 1s/);
    } finally {
      runtime.open();
    }
  });

  test('deploy exits 3 on bad usage and on a refused request, saying what failed and what to try', async () => {
    const noImage = await berth(['deploy', '--name', 'cli-x']);
    assert.equal(noImage.code, 3);
    assert.match(noImage.stderr, /deploy needs an image\n {2}try: pass --image/);
    const badName = await berth(['deploy', '--json', '--name', '1-bad', '--image', 'registry.example/agent:1']);
    assert.equal(badName.code, 3);
    assert.match(badName.stderr, /createDeployment was refused \(422 /);
    assert.equal(JSON.parse(badName.stdout.trim()).exit_code, 3);
    const wrongKey = await berth(['deploy', '--name', 'cli-x', '--image', 'registry.example/agent:1'], {
      BERTH_URL: server.url,
      BERTH_API_KEY: 'berth_not_a_key',
    });
    assert.equal(wrongKey.code, 3);
    assert.match(wrongKey.stderr, /refused \(401 .*\n {2}try: check the API key/);
    const badTimeout = await berth(['deploy', '--json', '--name', 'cli-x', '--image', 'registry.example/agent:1', '--timeout', 'soon']);
    assert.equal(badTimeout.code, 3);
    assert.deepEqual(JSON.parse(badTimeout.stdout), {
      type: 'result',
      exit_code: 3,
      elapsed_seconds: JSON.parse(badTimeout.stdout).elapsed_seconds,
      status: null,
      error: { detail: '--timeout must be a number of seconds above 0' },
    });
    assert.equal((await berth(['deployments', 'lst'])).code, 3);
    assert.equal((await berth(['deployments', 'list', '-o', 'xml'])).code, 3);
  });

  test('deploy reads a YAML file given with --file', async () => {
    const file = path.join(configHome, 'berth.yaml');
    fs.writeFileSync(file, 'name: cli-file\nimage: registry.example/agent:1\nsecrets:\n  API_TOKEN: abc\n');
    const run = await berth(['deploy', '--file', file]);
    assert.equal(run.code, 0, run.stderr);
    const got = JSON.parse((await berth(['deployments', 'get', 'cli-file', '-o', 'json'])).stdout);
    assert.deepEqual(got.secrets, [{ name: 'API_TOKEN', value: 'abc' }]);
  });

  test('reads print as a table, JSON or YAML; --help works everywhere', async () => {
    const table = await berth(['deployments', 'list']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^ID\s+NAME\s+STATUS/);
    assert.match(table.stdout, /cli-app/);
    const json = JSON.parse((await berth(['deployments', 'list', '--output', 'json'])).stdout);
    assert.ok(json.some((deployment: any) => deployment.name === 'cli-app'));
    const fromYaml = yaml.load((await berth(['deployments', 'get', 'cli-app', '-o', 'yaml'])).stdout) as any;
    assert.equal(fromYaml.name, 'cli-app');
    const one = await berth(['deployments', 'get', 'cli-app']);
    assert.match(one.stdout, /^secrets\s+\["TOKEN"\]$/m, 'a table shows secret names, not values');
    const logs = await berth(['revisions', 'logs', 'cli-app', fromYaml.latest_revision_id]);
    assert.match(logs.stdout, /deploy INFO Started registry\.example\/agent:2/);
    const help = await berth(['revisions', 'logs', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--follow/);
    for (const group of ['listeners', 'oauth-providers', 'integrations', 'workspaces', 'api-keys']) {
      const listed = await berth([group, 'list', '-o', 'json']);
      assert.equal(listed.code, 0, `${group}: ${listed.stderr}`);
      assert.ok(Array.isArray(JSON.parse(listed.stdout)), group);
    }
  });

  test('revisions: logs --follow prints the lines until the revision is terminal; redeploy; interrupt refuses a finished revision', async () => {
    const revisions = JSON.parse((await berth(['revisions', 'list', 'cli-json', '-o', 'json'])).stdout);
    const [only] = revisions;
    const followed = await berth(['revisions', 'logs', 'cli-json', only.id, '--follow']);
    assert.equal(followed.code, 0, followed.stderr);
    assert.match(followed.stdout, /deploy INFO Started registry\.example\/agent:1/);
    assert.match(followed.stderr, /is DEPLOYED/);
    const redeployed = await berth(['revisions', 'redeploy', 'cli-json', only.id]);
    assert.equal(redeployed.code, 0, redeployed.stderr);
    assert.match(redeployed.stderr, new RegExp(`redeploying revision ${only.id} as revision [0-9a-f-]{36}`));
    const interrupted = await berth(['revisions', 'interrupt', 'cli-json', only.id]);
    assert.equal(interrupted.code, 3);
    assert.match(interrupted.stderr, /interruptRevision was refused \(\d{3} \w+\): .+\n {2}try: /);
  });

  test('listeners and OAuth providers: create from flags or --data, get, update, delete', async () => {
    const created = await berth(['listeners', 'create', '--compute-id', 'cli-cluster', '--namespace', 'agents', '--namespace', 'staging', '-o', 'json']);
    assert.equal(created.code, 0, created.stderr);
    const listener = JSON.parse(created.stdout);
    assert.deepEqual(listener.compute_config.k8s_namespaces, ['agents', 'staging']);
    const updated = await berth(['listeners', 'update', listener.id, '--data', '{"version": "0.2.0"}', '-o', 'json']);
    assert.equal(JSON.parse(updated.stdout).version, '0.2.0');
    assert.match((await berth(['listeners', 'list'])).stdout, /cli-cluster\s+agents,staging\s+0\.2\.0/);
    assert.equal((await berth(['listeners', 'delete', listener.id])).code, 0);
    assert.equal((await berth(['listeners', 'get', listener.id])).code, 3);

    const provider = await berth([
      'oauth-providers',
      'create',
      '-o',
      'json',
      '--data',
      'provider_id: cli-github\nname: GitHub\nclient_id: client-1\nclient_secret: oauth-cli-secret\nauth_url: https://github.com/login/oauth/authorize\ntoken_url: https://github.com/login/oauth/access_token\n',
    ]);
    assert.equal(provider.code, 0, provider.stderr);
    assert.equal(JSON.parse(provider.stdout).provider_id, 'cli-github');
    assert.match((await berth(['oauth-providers', 'get', 'cli-github'])).stdout, /client_id\s+client-1/);
    assert.equal((await berth(['oauth-providers', 'delete', 'cli-github'])).code, 0);
    const bad = await berth(['oauth-providers', 'create', '--data', '{not json']);
    assert.equal(bad.code, 3);
    assert.match(bad.stderr, /the --data value is not valid JSON or YAML/);
  });

  test('workspaces and API keys: create, list, revoke; a new key is printed once, alone on stdout', async () => {
    const workspace = await berth(['workspaces', 'create', '--name', 'cli-space', '-o', 'json']);
    assert.equal(workspace.code, 0, workspace.stderr);
    const created = await berth(['api-keys', 'create', '--name', 'ci', '--workspace', JSON.parse(workspace.stdout).id]);
    assert.equal(created.code, 0, created.stderr);
    const key = created.stdout.trim();
    assert.ok(key.length > 20 && !key.includes(' '));
    const listed = await berth(['api-keys', 'list']);
    assert.match(listed.stdout, /^ID\s+NAME\s+ROLE/);
    assert.ok(!listed.stdout.includes(key));
    const id = created.stderr.match(/created API key ([0-9a-f-]{36})/)![1]!;
    assert.equal((await berth(['api-keys', 'revoke', id])).code, 0);
    assert.equal((await berth(['deployments', 'list'], { BERTH_URL: server.url, BERTH_API_KEY: key })).code, 3);
  });

  test('api-keys create makes read-only and deployer keys; a deployer key reaches only its deployments', async () => {
    const headers = { 'X-Api-Key': server.adminKey, 'Content-Type': 'application/json' };
    const body = JSON.stringify({
      name: 'cli-deployer-target',
      source: 'external_docker',
      source_config: {},
      source_revision_config: { image_uri: 'registry.example/agent:1' },
      secrets: [],
    });
    const response = await fetch(`${server.url}/v2/deployments`, { method: 'POST', headers, body });
    const deployment = (await response.json()) as { id: string };
    assert.equal(response.status, 201, JSON.stringify(deployment));
    const created = await berth([
      'api-keys',
      'create',
      '--name',
      'ship',
      '--role',
      'deployer',
      '--workspace',
      server.workspaceId,
      '--deployment',
      deployment.id,
    ]);
    assert.equal(created.code, 0, created.stderr);
    const key = created.stdout.trim();
    const listed = await berth(['api-keys', 'list']);
    assert.match(listed.stdout, new RegExp(`ship\\s+deployer\\s+${server.workspaceId}\\s+${deployment.id}`));
    const own = await fetch(`${server.url}/v2/deployments/${deployment.id}`, { headers: { 'X-Api-Key': key } });
    assert.equal(own.status, 200);
    const refused = await berth(['deployments', 'list'], { BERTH_URL: server.url, BERTH_API_KEY: key });
    assert.equal(refused.code, 3);
    assert.match(refused.stderr, /deployer API key may not/);
    const readOnly = await berth(['api-keys', 'create', '--name', 'look', '--role', 'read_only', '--workspace', server.workspaceId]);
    assert.equal(readOnly.code, 0, readOnly.stderr);
    assert.equal((await berth(['deployments', 'list'], { BERTH_URL: server.url, BERTH_API_KEY: readOnly.stdout.trim() })).code, 0);
    const bad = await berth(['api-keys', 'create', '--name', 'x', '--role', 'deployer']);
    assert.equal(bad.code, 3);
  });

  test('audit shows who changed what, filtered, as a table or JSON; member keys are refused', async () => {
    const created = await berth(['workspaces', 'create', '--name', 'cli-audited', '-o', 'json']);
    assert.equal(created.code, 0, created.stderr);
    const workspaceId = JSON.parse(created.stdout).id as string;
    const table = await berth(['audit', '--action', 'workspace.create']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^TIME\s+ACTOR\s+ROLE\s+ACTION\s+TARGET/);
    assert.match(table.stdout, /bootstrap\s+admin\s+workspace\.create\s+workspace cli-audited/);
    const json = await berth(['audit', '--target', workspaceId, '-o', 'json']);
    assert.deepEqual(
      JSON.parse(json.stdout).map((entry: { action: string }) => entry.action),
      ['workspace.create'],
    );
    const member = (await berth(['api-keys', 'create', '--name', 'cli-member', '--workspace', server.workspaceId])).stdout.trim();
    const refused = await berth(['audit'], { BERTH_URL: server.url, BERTH_API_KEY: member });
    assert.equal(refused.code, 3);
    assert.match(refused.stderr, /member API key may not/);
  });

  test('webhooks: create prints the secret once, list and deliveries show the subscription, redeliver and delete act on it', async () => {
    // A public address passes the outbound check without DNS; no event it wants is sent here.
    const created = await berth(['webhooks', 'create', '--endpoint', 'http://93.184.215.14/cli', '--event', 'listener.offline', '--description', 'cli']);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /^whsec_\S+\n$/);
    const id = /subscription ([0-9a-f-]{36})/.exec(created.stderr)?.[1];
    assert.ok(id, created.stderr);
    const listed = await berth(['webhooks', 'list', '-o', 'json']);
    const subscription = (JSON.parse(listed.stdout) as { id: string; url: string; secret?: string }[]).find((s) => s.id === id);
    assert.equal(subscription?.url, 'http://93.184.215.14/cli');
    assert.equal(subscription?.secret, undefined);
    assert.ok(!listed.stdout.includes(created.stdout.trim()), 'the secret is never listed');
    assert.match((await berth(['webhooks', 'list'])).stdout, /^ID\s+URL\s+EVENTS\s+ENABLED/);
    const deliveries = await berth(['webhooks', 'deliveries', id, '-o', 'json']);
    assert.equal(deliveries.code, 0, deliveries.stderr);
    assert.deepEqual(JSON.parse(deliveries.stdout), []);
    const refused = await berth(['webhooks', 'create', '--endpoint', 'http://127.0.0.1:9/x', '--event', 'deployment.created']);
    assert.equal(refused.code, 3);
    assert.match(refused.stderr, /Webhook URL refused/);
    const missing = await berth(['webhooks', 'redeliver', id, '00000000-0000-4000-8000-000000000000']);
    assert.equal(missing.code, 3);
    assert.equal((await berth(['webhooks', 'delete', id])).code, 0);
    assert.equal((await berth(['webhooks', 'deliveries', id])).code, 3);
  });

  test('login checks the key and saves a profile readable only by its owner; later commands use it', async () => {
    const refused = await berth(['login', '--url', server.url], { BERTH_API_KEY: 'berth_not_a_key' });
    assert.equal(refused.code, 3);
    assert.equal(fs.existsSync(path.join(configHome, 'berth/profiles.json')), false);
    const run = await berth(['login', '--url', server.url, '--profile', 'local'], { BERTH_API_KEY: server.adminKey });
    assert.equal(run.code, 0, run.stderr);
    const file = path.join(configHome, 'berth/profiles.json');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.equal(JSON.parse(fs.readFileSync(file, 'utf8')).profiles.local.url, server.url);
    const listed = await berth(['deployments', 'list', '-o', 'json'], {});
    assert.equal(listed.code, 0, listed.stderr);
    const missing = await berth(['deployments', 'list'], { BERTH_URL: server.url });
    assert.equal(missing.code, 0, 'the profile supplies the key the environment lacks');
  });

  test('completion prints a bash script bash accepts, and a zsh one', async () => {
    const bash = await berth(['completion', 'bash']);
    assert.equal(bash.code, 0);
    assert.match(bash.stdout, /complete -o default -F _berth_complete berth/);
    assert.match(bash.stdout, /" deployments"\) words="list get create update delete/);
    execFileSync('bash', ['-n'], { input: bash.stdout });
    const zsh = await berth(['completion', 'zsh']);
    assert.match(zsh.stdout, /bashcompinit/);
  });

  test('the berth program itself: `berth server` is `serve`, and bad usage exits 3', () => {
    const help = execFileSync(process.execPath, [...nodeArguments('src/main.ts'), 'server', '--help'], { encoding: 'utf8' });
    assert.match(help, /Usage: berth serve\|server/);
    let code = 0;
    try {
      execFileSync(process.execPath, [...nodeArguments('src/main.ts'), 'deploy', '--name', 'x'], {
        encoding: 'utf8',
        stdio: 'pipe',
        env: { ...process.env, BERTH_URL: server.url, BERTH_API_KEY: 'x' },
      });
    } catch (error) {
      code = (error as { status: number }).status;
    }
    assert.equal(code, 3);
  });

  test('no output of any command held the API key', () => {
    assert.ok(everything.length > 20);
    for (const text of everything) assert.ok(!text.includes(server.adminKey), `a key was printed: ${text.slice(0, 200)}`);
  });
});
