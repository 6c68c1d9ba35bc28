import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { LocalContainerRuntime, type ResolvedRuntime } from '../../src/containers/runtime/index.js';
import type { LogLevel, RunRequest, StepContext } from '../../src/engine/drivers/types.js';
import { eventually } from '../support/runtimes.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const IMAGE = 'localhost/berth-test-agent:v1';
const SECRET_VALUE = `standby-secret-${randomUUID()}`;

function stepContext(): StepContext & { text(): string } {
  const lines: string[] = [];
  return {
    signal: new AbortController().signal,
    async log(level: LogLevel, message: string) {
      lines.push(`${level} ${message}`);
    },
    text: () => lines.join('\n'),
  };
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/ok`, { signal: AbortSignal.timeout(1_500) });
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}

const probe = new LocalContainerRuntime();
const unavailable = await probe.unavailableReason();
if (unavailable) process.stdout.write(`# SKIP standby containers: ${unavailable}\n`);

describe('standby containers: a rollback resumes the replaced container (real podman)', { skip: unavailable ?? false }, () => {
  let runtime: ResolvedRuntime;
  const deployments: string[] = [];
  const driver = new LocalContainerRuntime({ standby: { keepMs: 10 * 60_000, perDeployment: 1 } });

  const rt = async (...args: string[]) => (await run(runtime.binary, args, { env: runtime.env })).stdout.trim();
  const namesOf = async (deploymentId: string) =>
    (await rt('ps', '-a', '--filter', `label=berth.deployment=${deploymentId}`, '--format', '{{.Names}}')).split('\n').filter(Boolean).sort();
  const idOf = (name: string) => rt('container', 'inspect', '--format', '{{.Id}}', name);
  const stateOf = (name: string) => rt('container', 'inspect', '--format', '{{.State.Status}}', name);
  // As the engine asks: the revision's own id is in the environment, and said to be only that.
  const request = (deploymentId: string, revisionId: string, env: Record<string, string> = { BERTH_TEST_SECRET: SECRET_VALUE }): RunRequest => ({
    deploymentId,
    revisionId,
    instanceName: 'standby-test',
    image: IMAGE,
    env: { ...env, LANGSMITH_HOST_REVISION_ID: revisionId },
    revisionEnv: ['LANGSMITH_HOST_REVISION_ID'],
    resources: {},
  });
  const newDeployment = () => {
    const id = `test-${randomUUID()}`;
    deployments.push(id);
    return id;
  };

  before(async () => {
    const resolved = await probe.resolvedRuntime();
    assert.ok(resolved);
    runtime = resolved;
    await run(path.join(root, 'scripts/build-test-image.sh'), [IMAGE], { env: runtime.env });
  });

  after(async () => {
    for (const id of deployments) {
      const names = await namesOf(id).catch(() => []);
      if (names.length > 0) await rt('rm', '-f', '-t', '0', ...names).catch(() => undefined);
    }
  });

  test('a replaced container waits paused, serving nothing; a rollback unpauses the same container on its URL; teardown removes the standby', async () => {
    const deploymentId = newDeployment();
    const rev1 = randomUUID();
    const rev2 = randomUUID();
    const first = await driver.start(request(deploymentId, rev1), stepContext());
    const firstId = await idOf(first.handle);
    const second = await driver.start(request(deploymentId, rev2), stepContext());

    const parking = stepContext();
    assert.equal(await driver.park(first.handle, parking), true);
    const [standby] = (await namesOf(deploymentId)).filter((name) => name !== second.handle);
    assert.ok(standby, 'the replaced container is kept');
    assert.match(standby, new RegExp(`^${first.handle}\\.standby-\\d+$`));
    assert.equal(await stateOf(standby), 'paused');
    assert.equal(await answers(first.url), false, 'a paused standby serves nothing');

    // A rollback is a new revision, a copy of the first: same image, same environment but its id.
    const rollback = stepContext();
    const copy = randomUUID();
    const resumed = await driver.start(request(deploymentId, copy), rollback);
    assert.match(resumed.handle, new RegExp(`^berth-standby-test-${copy.slice(0, 8)}$`));
    assert.equal(resumed.url, first.url, 'the deployment URL moves back to the standby port');
    assert.equal(await idOf(resumed.handle), firstId, 'no new container was started');
    assert.equal(await stateOf(resumed.handle), 'running');
    assert.equal(await answers(resumed.url), true);
    assert.match(rollback.text(), /Unpaused a standby container/);
    assert.doesNotMatch(rollback.text(), /Starting container/);
    assert.ok(!rollback.text().includes(SECRET_VALUE));

    // Now the second one is replaced; with one standby per deployment, parking another removes the oldest.
    assert.equal(await driver.park(second.handle, stepContext()), true);
    const third = await driver.start(request(deploymentId, randomUUID()), stepContext());
    assert.equal(await driver.park(resumed.handle, stepContext()), true);
    const left = await namesOf(deploymentId);
    assert.equal(left.length, 2, `the active container and one standby: ${left.join(', ')}`);
    assert.ok(left.includes(third.handle));
    assert.ok(left.some((name) => name.startsWith(`${resumed.handle}.standby-`)));

    await driver.teardown(deploymentId, stepContext());
    assert.deepEqual(await namesOf(deploymentId), [], 'teardown (deployment delete) removes the standbys too');
  });

  test("a revision whose secrets differ from the standby's starts anew, the values never logged nor labelled", async () => {
    const deploymentId = newDeployment();
    const rev1 = randomUUID();
    const first = await driver.start(request(deploymentId, rev1), stepContext());
    const firstId = await idOf(first.handle);
    await driver.park(first.handle, stepContext());

    const changed = `changed-${randomUUID()}`;
    const ctx = stepContext();
    const started = await driver.start(request(deploymentId, randomUUID(), { BERTH_TEST_SECRET: changed }), ctx);
    assert.notEqual(await idOf(started.handle), firstId, 'a new container runs the new environment');
    assert.doesNotMatch(ctx.text(), /Unpaused/);
    assert.match(ctx.text(), /Starting container/);
    assert.ok(!ctx.text().includes(changed) && !ctx.text().includes(SECRET_VALUE));
    const env = JSON.parse(await rt('container', 'inspect', '--format', '{{json .Config.Env}}', started.handle)) as string[];
    assert.ok(env.includes(`BERTH_TEST_SECRET=${changed}`));
    const names = await namesOf(deploymentId);
    assert.equal(names.length, 2, 'the standby stays for a rollback to the revision it runs, until its time ends');
    assert.equal(await stateOf(names.find((name) => name !== started.handle) ?? ''), 'paused');
    const labels = await rt('container', 'inspect', '--format', '{{json .Config.Labels}}', started.handle);
    assert.ok(!labels.includes(changed), 'the settings label holds a salted digest, not the value');
    await driver.teardown(deploymentId, stepContext());
  });

  test("a standby past its time is removed by the sweep; other deployments' standbys in their time stay", async () => {
    const short = new LocalContainerRuntime({ standby: { keepMs: 1_000, perDeployment: 1 } });
    const deploymentId = newDeployment();
    const rev1 = randomUUID();
    const first = await short.start(request(deploymentId, rev1), stepContext());
    const other = newDeployment();
    const active = await driver.start(request(other, randomUUID()), stepContext());
    const kept = await driver.start(request(other, randomUUID()), stepContext());
    await driver.park(kept.handle, stepContext());
    await short.park(first.handle, stepContext());

    await eventually(async () => (await short.sweepStandbys()).length > 0 || undefined, 'the expired standby to be swept', 15_000);
    assert.deepEqual(await namesOf(deploymentId), [], 'the expired standby is gone');
    assert.equal((await namesOf(other)).length, 2, "another deployment's standby, still in its time, is kept");
    assert.equal(await answers(active.url), true);
    await driver.teardown(other, stepContext());
  });

  test("another deployment's revision with the same image and environment never gets the standby", async () => {
    const deploymentId = newDeployment();
    const hostile = newDeployment();
    const rev1 = randomUUID();
    const first = await driver.start(request(deploymentId, rev1), stepContext());
    const firstId = await idOf(first.handle);
    await driver.park(first.handle, stepContext());

    const theirs = await driver.start(request(hostile, randomUUID()), stepContext());
    assert.notEqual(await idOf(theirs.handle), firstId);
    assert.notEqual(theirs.url, first.url);
    const [standby] = await namesOf(deploymentId);
    assert.ok(standby?.startsWith(`${first.handle}.standby-`), 'the standby is left to its own deployment');
    assert.equal(await stateOf(standby ?? ''), 'paused');
    await driver.teardown(hostile, stepContext());
    await driver.teardown(deploymentId, stepContext());
  });
});
