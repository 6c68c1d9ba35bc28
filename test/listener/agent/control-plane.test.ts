import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LocalContainerRuntime } from '../../../src/containers/runtime/index.js';
import { client } from '../../support/http.js';
import { holdMachineTurnForSuite } from '../../support/machine-lock.js';
import { type BerthProcess, freePort, spawnBerth, stopBerth } from '../../support/process.js';
import { eventually } from '../../support/runtimes.js';
import { nodeArguments } from '../../support/entry.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const IMAGE = 'localhost/berth-test-agent:v1';
/** The healthy image under a second name, so an image change is a real rollout. */
const IMAGE_V2 = 'localhost/berth-listener-control-plane:v2';

/**
 * The whole path with nothing standing in: a Berth server process, a `berth listener`
 * process on this machine's podman, and deployments placed on the listener through the API.
 */
describe('berth listener against a real control plane (two processes, real podman)', async () => {
  holdMachineTurnForSuite({ before, after });
  const unavailable = await new LocalContainerRuntime({ runtime: 'podman' }).unavailableReason();
  if (unavailable) {
    process.stdout.write(`# SKIP listener against the control plane: ${unavailable}\n`);
    return;
  }
  const containersEnv: Record<string, string> = process.env.CONTAINERS_CONF ? {} : { CONTAINERS_CONF: '/etc/berth/containers.conf' };
  const podman = (...args: string[]) => execFileSync('podman', args, { env: { ...process.env, ...containersEnv } }).toString();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-control-plane-'));
  const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-listener-'));
  const adminKey = `berth_${randomBytes(24).toString('hex')}`;
  const secretValue = `listener-secret-${randomBytes(8).toString('hex')}`;
  // Per-listener ages are served only with the metrics token (issue 20).
  const metricsToken = randomBytes(16).toString('hex');
  let port = 0;
  let berth: BerthProcess;
  let listener = { id: '', listener_key: '' };
  const agents: { child: ChildProcess; output: string[]; exited: Promise<number | null> }[] = [];
  const api = () => client(berth.url, { key: adminKey });

  const startBerth = async () =>
    spawnBerth(
      { BERTH_DATA_DIR: dataDir, BERTH_BOOTSTRAP_API_KEY: adminKey, BERTH_METRICS_TOKEN: metricsToken, BERTH_CONTAINER_RUNTIME: 'none', ...containersEnv },
      { port },
    );

  function startAgent() {
    const child = spawn(process.execPath, [...nodeArguments('src/main.ts'), 'listener', '--runtime', 'podman'], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...containersEnv,
        BERTH_URL: berth.url,
        BERTH_LISTENER_KEY: listener.listener_key,
        BERTH_LISTENER_DATA_DIR: agentDir,
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const started = { child, output, exited: new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code))) };
    agents.push(started);
    return started;
  }

  const containersOf = (deploymentId: string) =>
    podman('ps', '-a', '--filter', `label=berth.deployment=${deploymentId}`, '--format', '{{.Image}}').split('\n').filter(Boolean);

  async function terminal(deploymentId: string, revisionId: string) {
    const answer = await api()('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}?wait_for_terminal=90`);
    assert.equal(answer.status, 200, answer.text);
    return answer.body as { status: string; status_message: string | null; url: string | null };
  }

  before(async () => {
    execFileSync('bash', [path.join(ROOT, 'scripts/build-test-image.sh'), IMAGE], { stdio: 'ignore', env: { ...process.env, ...containersEnv } });
    podman('tag', IMAGE, IMAGE_V2);
    port = await freePort();
    berth = await startBerth();
    const created = await api()('POST', '/v2/listeners', {
      body: { compute_type: 'podman', compute_id: `box-${randomBytes(3).toString('hex')}`, compute_config: {} },
    });
    assert.equal(created.status, 201, created.text);
    listener = created.body;
    startAgent();
  });

  after(async () => {
    for (const agent of agents) if (agent.child.exitCode === null) agent.child.kill('SIGKILL');
    await Promise.all(agents.map((agent) => agent.exited));
    const left = podman('ps', '-a', '--filter', `label=berth.listener=${listener.id}`, '--format', '{{.Names}}').split('\n').filter(Boolean);
    if (left.length > 0) podman('rm', '-f', '-t', '0', ...left);
    await stopBerth(berth);
    podman('rmi', IMAGE_V2);
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(agentDir, { recursive: true, force: true });
  });

  let deploymentId = '';

  test('a deployment placed on the listener reaches DEPLOYED, served by a container that answers /ok; the listener is ONLINE', async () => {
    const created = await api()('POST', '/v2/deployments', {
      body: {
        name: 'on-the-box',
        source: 'external_docker',
        source_config: { listener_id: listener.id },
        source_revision_config: { image_uri: IMAGE },
        secrets: [{ name: 'GREETING', value: secretValue }],
      },
    });
    assert.equal(created.status, 201, created.text);
    deploymentId = created.body.id;
    const revision = await terminal(deploymentId, created.body.latest_revision_id);
    assert.equal(revision.status, 'DEPLOYED', revision.status_message ?? '');
    const deployment = (await api()('GET', `/v2/deployments/${deploymentId}`)).body;
    assert.equal(deployment.status, 'READY');
    assert.equal(deployment.remote_reconciled, true);
    assert.equal((await fetch(`${deployment.url}/ok`)).status, 200);
    const seen = (await api()('GET', `/v2/listeners/${listener.id}`)).body;
    assert.equal(seen.status, 'ONLINE');
    assert.match(seen.version, /^berth-listener\//);
    const metrics = await (await fetch(`${berth.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
    const age = new RegExp(`^berth_listener_last_seen_age_seconds\\{listener_id="${listener.id}"\\} ([0-9.e+-]+)$`, 'm').exec(metrics);
    assert.ok(age, 'the metrics show how long ago the listener was last seen');
    assert.ok(Number(age[1]) >= 0 && Number(age[1]) < 30, `age ${age[1]}`);
  });

  test('a new image rolls out even when the agent is killed mid-rollout and started again: one container, the new one', async () => {
    const patched = await api()('PATCH', `/v2/deployments/${deploymentId}`, { body: { source_revision_config: { image_uri: IMAGE_V2 } } });
    assert.equal(patched.status, 200, patched.text);
    // The agent hears of the change within moments (long poll); kill it while it rolls out.
    await eventually(async () => (containersOf(deploymentId).includes(IMAGE_V2) ? true : undefined), 'the new container to be started', 30_000);
    const [running] = agents.slice(-1);
    running?.child.kill('SIGKILL');
    await running?.exited;
    startAgent();
    const revision = await terminal(deploymentId, patched.body.latest_revision_id);
    assert.equal(revision.status, 'DEPLOYED', revision.status_message ?? '');
    await eventually(async () => (containersOf(deploymentId).length === 1 ? true : undefined), 'the old container to be removed', 30_000);
    assert.deepEqual(containersOf(deploymentId), [IMAGE_V2]);
  });

  test('the control plane restarts while the agent waits; the next change still arrives', async () => {
    await stopBerth(berth);
    berth = await startBerth();
    const patched = await api()('PATCH', `/v2/deployments/${deploymentId}`, { body: { source_revision_config: { image_uri: IMAGE } } });
    assert.equal(patched.status, 200, patched.text);
    const revision = await terminal(deploymentId, patched.body.latest_revision_id);
    assert.equal(revision.status, 'DEPLOYED', revision.status_message ?? '');
    await eventually(async () => (containersOf(deploymentId).length === 1 ? true : undefined), 'one container again', 30_000);
  });

  test('deleting the deployment removes its container, then the deployment answers 404; no key or secret in any log', async () => {
    assert.equal((await api()('DELETE', `/v2/deployments/${deploymentId}`)).status, 204);
    await eventually(
      async () => ((await api()('GET', `/v2/deployments/${deploymentId}`)).status === 404 ? true : undefined),
      'the deployment to be gone',
      60_000,
    );
    assert.deepEqual(containersOf(deploymentId), []);
    const logs = [...berth.output, ...agents.flatMap((agent) => agent.output)].join('');
    for (const secret of [listener.listener_key, adminKey, secretValue]) assert.ok(!logs.includes(secret), 'a secret was logged');
  });
});
