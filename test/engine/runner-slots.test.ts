import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RunnerClient } from '../../src/runner/client.js';
import type { RunnerJobView } from '../../src/contract/build-runners.js';
import { describeEachDatabase } from '../support/database.js';
import { type Client, client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { startTestServer } from '../support/server.js';
import { gzippedTar } from '../support/archives.js';

/** An uploaded-archive deployment on a listener with no agent: once built, its revision waits in AWAITING_DEPLOY. */
async function uploadedDeployment(api: Client, name: string, listenerId: string, archive: Buffer): Promise<{ id: string; revisionId: string }> {
  const created = await api('POST', '/v2/deployments', {
    body: { name, source: 'internal_source', source_config: { deployment_type: 'dev', listener_id: listenerId }, source_revision_config: {}, secrets: [] },
  });
  assert.equal(created.status, 201, created.text);
  const upload = await api('POST', `/v2/deployments/${created.body.id}/upload-url`);
  assert.equal(upload.status, 200, upload.text);
  const put = await fetch(upload.body.upload_url, { method: 'PUT', headers: { 'content-type': 'application/gzip' }, body: new Uint8Array(archive) });
  assert.equal(put.status, 200, await put.text());
  const patched = await api('PATCH', `/v2/deployments/${created.body.id}`, {
    body: { source_revision_config: { source_tarball_path: upload.body.object_path } },
  });
  assert.equal(patched.status, 200, patched.text);
  return { id: created.body.id, revisionId: patched.body.latest_revision_id };
}

async function finish(runner: RunnerClient, job: RunnerJobView): Promise<void> {
  await runner.source(job.id, job.lease_token);
  await runner.logs(job.id, { lease_token: job.lease_token, seq: 0, lines: [{ level: 'INFO', message: 'STEP 1/1: nothing to build' }] });
  const answer = await runner.result(job.id, {
    lease_token: job.lease_token,
    status: 'succeeded',
    image: job.image,
    digest: `sha256:${'ab'.repeat(32)}`,
    commit_sha: null,
  });
  assert.equal(answer.outcome, 'applied', JSON.stringify(answer));
}

describeEachDatabase('builds on runners and the engine’s slots', (kind) => {
  test('an engine with one slot keeps two runners busy, and deploys both builds once they end', async (t) => {
    const server = await startTestServer(kind, {
      configuredBuilder: true,
      env: { BERTH_BUILDER: 'runners', BERTH_ENGINE_CONCURRENCY: '1', BERTH_ENGINE_WORKSPACE_SLOTS: '2', BERTH_RUNNER_WAIT_SECONDS: '600' },
    });
    const stop = new AbortController();
    t.after(async () => {
      stop.abort();
      await server.close();
    });
    const api = client(server.url, { key: server.adminKey });
    const key = await api('POST', '/v1/api-keys', { body: { name: 'slots-runner', role: 'runner' } });
    assert.equal(key.status, 201, key.text);
    const listener = await api('POST', '/v2/listeners', { body: { compute_type: 'docker', compute_id: 'runner-slots', compute_config: {} } });
    assert.equal(listener.status, 201, listener.text);
    const archive = await gzippedTar([{ name: 'langgraph.json', body: '{"graphs":{}}' }]);
    const deployments = [
      await uploadedDeployment(api, 'runner-slots-a', listener.body.id, archive),
      await uploadedDeployment(api, 'runner-slots-b', listener.body.id, archive),
    ];

    // Two runners take one job each while neither job has ended: the engine's one slot was
    // not held by the first build (before, the second job was queued only after the first ended).
    const runners = [new RunnerClient(server.url, key.body.key), new RunnerClient(server.url, key.body.key)];
    const jobs: RunnerJobView[] = [];
    for (const runner of runners) {
      const { job } = await runner.claim([], 30, stop.signal);
      assert.ok(job, `runner ${jobs.length + 1} found no job while ${jobs.length} build(s) ran: the engine's slot was held by a build on a runner`);
      jobs.push(job);
    }
    assert.deepEqual(jobs.map((job) => job.revision_id).sort(), deployments.map((d) => d.revisionId).sort(), 'each runner builds one of the two revisions');
    // Builds on runners are not busy slots: the metric never shows more than the engine has.
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const busy = Number(/^berth_engine_busy_slots (\d+)/m.exec(metrics)?.[1]);
    assert.ok(busy <= 1, `berth_engine_busy_slots is ${busy} with one slot and both builds on runners`);

    // Both come back to the one slot in turn, and both reach their deploy.
    await Promise.all(jobs.map((job, i) => finish(runners[i] as RunnerClient, job)));
    for (const deployment of deployments) {
      const revision = await eventually(async () => {
        const res = await api('GET', `/v2/deployments/${deployment.id}/revisions/${deployment.revisionId}`);
        return res.body.status === 'AWAITING_DEPLOY' ? res.body : undefined;
      }, `revision ${deployment.revisionId} to reach AWAITING_DEPLOY`);
      assert.equal(revision.status, 'AWAITING_DEPLOY');
    }
  });
});
