import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { cp, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@langchain/langgraph-sdk';
import { containersEnv, removeContainers, run, ROOT } from '../build/helpers.js';
import { BUILD_TEST_BASE_IMAGE, TEST_BASE_IMAGE_NODE } from '../support/base-image.js';
import { createRepository, type FixtureRepository, git, type TempDir, tempDir } from '../support/git-repos.js';
import { type GitHttpServer, startGitHttpServer } from '../support/git-http-server.js';
import { client, type Client as ApiClient } from '../support/http.js';
import { deriveCredentialSecret, mintPullCredential } from '../../src/registry/index.js';
import { type BerthProcess, stopBerth } from '../support/process.js';
import { startBerthWithRegistry, type TokenRegistry } from '../support/registry.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import { deadline } from '../support/deadline.js';
import { eventually } from '../support/runtimes.js';

const FIXTURE = path.join(ROOT, 'test/fixtures/agents/echo-agent');
const KEY = `berth_test_${randomUUID()}_${randomUUID()}`;
const MASTER_KEY = randomBytes(32);

/**
 * Issue 10's proof: a LangGraph.js project in a git repository (served over HTTP by git
 * http-backend) is registered through a `git` integration and deployed as `codehost`;
 * Berth builds it on the local base image, runs it, and the official SDK gets the graph's
 * answer. A second commit deployed by PATCH answers the new way.
 */
describe('code-host build: a LangGraph.js agent from git to DEPLOYED', () => {
  holdMachineTurnForSuite({ before, after });
  let repos: TempDir;
  let data: TempDir;
  let repo: FixtureRepository;
  let http: GitHttpServer;
  let registry: TokenRegistry;
  let berth: BerthProcess;
  let api: ApiClient;
  let integrationId: string;
  let repoUrl: string;
  const deploymentName = `echo-${randomUUID().slice(0, 8)}`;

  before(
    async () => {
      const base = await run('bash', BUILD_TEST_BASE_IMAGE, 15 * 60_000);
      assert.equal(base.code, 0, `scripts/build-base-images.sh failed:\n${base.stderr}`);
      repos = await tempDir('berth-e2e-repos-');
      data = await tempDir('berth-e2e-data-');
      repo = await createRepository(repos.path, { owner: 'acme', name: 'echo-agent', defaultBranch: 'main' });
      await cp(FIXTURE, repo.work, { recursive: true });
      await git(repo.work, ['add', '.']);
      await git(repo.work, ['commit', '--quiet', '-m', 'the echo agent']);
      await git(repo.work, ['push', '--quiet', 'origin', 'main']);
      http = await startGitHttpServer({ root: repos.path });
      // Built images go to a registry (Debian's docker-registry) that trusts Berth's tokens.
      ({ berth, registry } = await startBerthWithRegistry(data.path, {
        ...(containersEnv() as Record<string, string>),
        BERTH_BOOTSTRAP_API_KEY: KEY,
        BERTH_ENCRYPTION_KEY: MASTER_KEY.toString('hex'),
        BERTH_CONTAINER_RUNTIME: 'podman',
        BERTH_BASE_IMAGE_NODE: TEST_BASE_IMAGE_NODE,
      }));
      api = client(berth.url, { key: KEY });
      const integration = await api('POST', '/v1/integrations/codehost', {
        body: { provider: 'git', name: 'company git', git: { repositories: [`${http.url}/acme/echo-agent.git`] } },
      });
      assert.equal(integration.status, 201, integration.text);
      integrationId = integration.body.id;
      const [listed] = (await api('GET', `/v1/integrations/codehost/${integrationId}/repos`)).body as { url: string; default_branch: string }[];
      assert.ok(listed);
      assert.equal(listed.default_branch, 'main');
      repoUrl = listed.url;
    },
    { timeout: deadline(20 * 60_000) },
  );

  after(async () => {
    if (berth) await stopBerth(berth);
    const names = (await run('podman', ['ps', '-a', '--format', '{{.Names}}'])).stdout.split('\n').filter((n) => n.startsWith(`berth-${deploymentName}`));
    await removeContainers(...names);
    const images = (await run('podman', ['images', '--format', '{{.Repository}}:{{.Tag}}'])).stdout
      .split('\n')
      .filter((image) => registry && image.startsWith(`${registry.host}/`));
    if (images.length > 0) await run('podman', ['rmi', '-f', ...images]);
    await http?.close();
    await registry?.stop();
    await repos?.remove();
    await data?.remove();
  });

  async function finished(deploymentId: string, revisionId: string) {
    const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}?wait_for_terminal=300`);
    assert.equal(res.status, 200, res.text);
    return res.body as { status: string; status_message: string | null; source_revision_config: { repo_commit_sha: string | null } };
  }

  async function logsOf(deploymentId: string, revisionId: string): Promise<string[]> {
    const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=build&limit=1000`);
    assert.equal(res.status, 200, res.text);
    return (res.body.logs as { message: string }[]).map((l) => l.message);
  }

  async function ask(url: string, input: string): Promise<unknown> {
    const sdk = new Client({ apiUrl: url });
    const [assistant] = await sdk.assistants.search({ graphId: 'echo' });
    assert.ok(assistant, 'the deployed agent has the echo graph');
    const thread = await sdk.threads.create();
    const values = (await sdk.runs.wait(thread.thread_id, assistant.assistant_id, { input: { input } })) as { output?: unknown };
    return values.output;
  }

  test('deploys, answers the SDK, and a new commit deployed by PATCH answers anew', { timeout: deadline(20 * 60_000) }, async () => {
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: deploymentName,
        source: 'github',
        source_config: { integration_id: integrationId, repo_url: repoUrl, build_on_push: false },
        source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json' },
        secrets: [{ name: 'ECHO_SECRET', value: 'not-in-any-image' }],
      },
    });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    const first = await finished(id, created.body.latest_revision_id);
    const buildLog = (await api('GET', `/v2/deployments/${id}/revisions/${created.body.latest_revision_id}/logs?type=build&limit=1000`)).body.logs as {
      message: string;
    }[];
    assert.equal(first.status, 'DEPLOYED', `${first.status_message}\n${buildLog.map((l) => l.message).join('\n')}`);
    const head = (await git(repo.work, ['rev-parse', 'main'])).trim();
    assert.equal(first.source_revision_config.repo_commit_sha, head);

    const timeline = (await api('GET', `/v2/deployments/${id}/revisions/${created.body.latest_revision_id}/timeline`)).body.resources as { status: string }[];
    assert.deepEqual(
      timeline.map((t) => t.status),
      ['QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'],
    );
    const messages = buildLog.map((l) => l.message);
    assert.ok(
      messages.some((m) => m.startsWith('Dockerfile (generated from langgraph.json')),
      'the Dockerfile heads the build log',
    );
    assert.ok(messages.some((m) => m.includes(`FROM ${TEST_BASE_IMAGE_NODE}:20`)));
    assert.ok(
      messages.some((m) => m.startsWith(`Pushing ${registry.host}/${created.body.tenant_id}/${id}:${created.body.latest_revision_id}`)),
      "the image is pushed to BERTH_REGISTRY, in the deployment's repository of its workspace",
    );
    assert.ok(
      messages.some((m) => /STEP \d+\/\d+|COMMIT/.test(m)),
      "the builder's own output is in the build log",
    );
    assert.ok(!messages.join('\n').includes('not-in-any-image'), 'secrets never reach the build log');

    const deployment = (await api('GET', `/v2/deployments/${id}`)).body;
    assert.equal(deployment.status, 'READY');
    const url = deployment.source_config.custom_url as string;
    assert.equal((await fetch(`${url}/ok`)).status, 200);
    assert.equal(await ask(url, 'hello'), 'echo: hello');
    const deployLog = (await api('GET', `/v2/deployments/${id}/revisions/${created.body.latest_revision_id}/logs?type=deploy&limit=1000`)).body.logs as {
      message: string;
    }[];
    assert.ok(
      deployLog.some((l) => l.message === 'The agent server serves every graph of its configuration: echo'),
      'traffic only once the graphs are listed',
    );

    // A secret-only change builds nothing: the revision runs the image revision 1 built (issue 21).
    const bySecret = await api('PATCH', `/v2/deployments/${id}`, { body: { secrets: [{ name: 'ECHO_SECRET', value: 'changed-not-in-any-image' }] } });
    assert.equal(bySecret.status, 200, bySecret.text);
    const secretOnly = (await finished(id, bySecret.body.latest_revision_id)) as Awaited<ReturnType<typeof finished>> & {
      build_inputs: { reused_from_revision_id: string | null; commit_sha: string | null } | null;
    };
    assert.equal(secretOnly.status, 'DEPLOYED', secretOnly.status_message ?? '');
    const secretTimeline = (await api('GET', `/v2/deployments/${id}/revisions/${bySecret.body.latest_revision_id}/timeline`)).body.resources as {
      status: string;
    }[];
    assert.deepEqual(
      secretTimeline.map((t) => t.status),
      ['QUEUED', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'],
      'a secret-only change never builds',
    );
    assert.equal(secretOnly.build_inputs?.reused_from_revision_id, created.body.latest_revision_id);
    assert.equal(secretOnly.build_inputs?.commit_sha, head);
    const reuseLog = await logsOf(id, bySecret.body.latest_revision_id);
    assert.ok(
      reuseLog.some((m) =>
        m.startsWith(`Reusing image ${registry.host}/${created.body.tenant_id}/${id}:${created.body.latest_revision_id}, built by revision 1`),
      ),
      reuseLog.join('\n'),
    );
    assert.ok(!reuseLog.some((m) => /STEP \d+\/\d+|COMMIT|Fetching/.test(m)), 'nothing fetched or built');
    assert.equal(await ask((await api('GET', `/v2/deployments/${id}`)).body.source_config.custom_url, 'hello'), 'echo: hello');

    // A second commit that changes the graph and gives langgraph.json an env object, deployed by PATCH:
    // the graph answers with what the container got, and whether an env file is in the image.
    const graphFile = path.join(repo.work, 'src/graph.ts');
    const reportEnv =
      "`${process.env.MY_PREFIX ?? 'unset'} ${process.env.CLASH ?? 'unset'} ${existsSync('/deps/echo-agent/berth.env') ? 'file-in-image' : 'no-file'}: ${state.input}`";
    const changed = (await readFile(graphFile, 'utf8'))
      .replace('`echo: ${state.input}`', reportEnv)
      .replace('import { Annotation', "import { existsSync } from 'node:fs';\nimport { Annotation");
    const config = JSON.parse(await readFile(path.join(repo.work, 'langgraph.json'), 'utf8')) as Record<string, unknown>;
    const withObject = JSON.stringify({ ...config, env: { MY_PREFIX: 'from-config-object', CLASH: 'from-config-object' } });
    const second = await repo.commit('main', { 'src/graph.ts': changed, 'langgraph.json': withObject }, 'answer with the environment');
    const secrets = [
      { name: 'ECHO_SECRET', value: 'not-in-any-image' },
      { name: 'CLASH', value: 'from-secret' },
    ];
    const patched = await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { repo_ref: 'main' }, secrets } });
    assert.equal(patched.status, 200, patched.text);
    assert.notEqual(patched.body.latest_revision_id, created.body.latest_revision_id);
    const next = await finished(id, patched.body.latest_revision_id);
    assert.equal(next.status, 'DEPLOYED', next.status_message ?? '');
    assert.equal(next.source_revision_config.repo_commit_sha, second);
    const nextTimeline = (await api('GET', `/v2/deployments/${id}/revisions/${patched.body.latest_revision_id}/timeline`)).body.resources as {
      status: string;
    }[];
    assert.ok(
      nextTimeline.some((t) => t.status === 'BUILDING'),
      'a new commit builds',
    );
    const redeployed = (await api('GET', `/v2/deployments/${id}`)).body;
    assert.equal(
      await ask(redeployed.source_config.custom_url, 'hello'),
      'from-config-object from-secret no-file: hello',
      "the env object applies, under the deployment's secrets",
    );

    // A third commit names an env file instead: read from the checkout, applied at run time, kept out of the image.
    const withFile = JSON.stringify({ ...config, env: 'berth.env' });
    await repo.commit('main', { 'langgraph.json': withFile, 'berth.env': 'MY_PREFIX=from-env-file\nCLASH=from-env-file\n' }, 'an env file');
    const third = await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { repo_ref: 'main' } } });
    assert.equal(third.status, 200, third.text);
    const fromFile = await finished(id, third.body.latest_revision_id);
    assert.equal(fromFile.status, 'DEPLOYED', fromFile.status_message ?? '');
    assert.equal(
      await ask((await api('GET', `/v2/deployments/${id}`)).body.source_config.custom_url, 'hello'),
      'from-env-file from-secret no-file: hello',
      'the env file applies and is not in the image',
    );
    for (const revisionId of [patched.body.latest_revision_id, third.body.latest_revision_id]) {
      const text = (await logsOf(id, revisionId)).join('\n');
      assert.ok(!text.includes('from-config-object') && !text.includes('from-env-file'), 'no env value reaches a build log');
    }
    const fileImage = `${registry.host}/${created.body.tenant_id}/${id}:${third.body.latest_revision_id}`;
    const fileInspect = await run('podman', ['image', 'inspect', fileImage]);
    assert.equal(fileInspect.code, 0, fileInspect.stderr);
    assert.ok(!fileInspect.stdout.includes('from-env-file') && !fileInspect.stdout.includes('MY_PREFIX'), "the image's configuration holds no env value");

    // A fourth commit adds a second graph whose module throws at import (issue 21, item 4): the
    // revision never gets traffic, says which graph failed and why, and the third keeps serving.
    const withBroken = JSON.stringify({ ...config, env: 'berth.env', graphs: { ...(config.graphs as object), broken: './src/broken.ts:graph' } });
    const brokenModule = 'throw new Error(`broken cannot load with ${process.env.ECHO_SECRET}`);\nexport const graph = undefined;\n';
    await repo.commit('main', { 'langgraph.json': withBroken, 'src/broken.ts': brokenModule }, 'a graph that throws at import');
    const fourth = await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { repo_ref: 'main' } } });
    assert.equal(fourth.status, 200, fourth.text);
    const broken = await finished(id, fourth.body.latest_revision_id);
    assert.equal(broken.status, 'DEPLOY_FAILED', broken.status_message ?? '');
    const why = broken.status_message ?? '';
    assert.match(why, /The graph\(s\) 'broken' \(\.\/src\/broken\.ts:graph\) of the configuration failed to load/);
    assert.match(why, /The container's last lines:\n/);
    assert.match(why, /broken cannot load with \[redacted\]/, 'the thrown error is quoted, its secret scrubbed');
    assert.ok(!why.includes('not-in-any-image'));
    const serving = (await api('GET', `/v2/deployments/${id}`)).body;
    assert.equal(serving.active_revision_id, third.body.latest_revision_id, 'the failed revision never became active');
    assert.equal(await ask(serving.source_config.custom_url, 'hello'), 'from-env-file from-secret no-file: hello', 'the earlier revision keeps serving');
    // A rollback to revision 1 (issue 21, item 2): its image serves again, nothing is fetched or built, and the deployment is pinned.
    const rollback = await api('POST', `/v2/deployments/${id}/revisions/${created.body.latest_revision_id}/redeploy`);
    assert.equal(rollback.status, 200, rollback.text);
    assert.equal(rollback.body.pinned_revision_id, rollback.body.latest_revision_id, 'a rollback pins');
    const rolledBack = await finished(id, rollback.body.latest_revision_id);
    assert.equal(rolledBack.status, 'DEPLOYED', rolledBack.status_message ?? '');
    const rollbackTimeline = (await api('GET', `/v2/deployments/${id}/revisions/${rollback.body.latest_revision_id}/timeline`)).body.resources as {
      status: string;
    }[];
    assert.deepEqual(
      rollbackTimeline.map((t) => t.status),
      ['QUEUED', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'],
      'a rollback never builds',
    );
    const rollbackLog = await logsOf(id, rollback.body.latest_revision_id);
    assert.ok(!rollbackLog.some((m) => /STEP \d+\/\d+|COMMIT|Fetching/.test(m)), rollbackLog.join('\n'));
    assert.equal(rolledBack.source_revision_config.repo_commit_sha, head);
    assert.equal(await ask((await api('GET', `/v2/deployments/${id}`)).body.source_config.custom_url, 'hello'), 'echo: hello', 'the first graph answers again');

    // The image was pushed to the registry, and holds no secret: they reach the container at run time only.
    const repository = `${created.body.tenant_id}/${id}`;
    const image = `${registry.host}/${repository}:${patched.body.latest_revision_id}`;
    const pull = await mintPullCredential(deriveCredentialSecret(MASTER_KEY), { subject: 'test', repository });
    const inspected = await run('skopeo', ['inspect', '--tls-verify=false', '--creds', `oauth2accesstoken:${pull.credential}`, `docker://${image}`]);
    assert.equal(inspected.code, 0, `the built image is in the registry: ${inspected.stderr}`);
    const local = await run('podman', ['image', 'inspect', image]);
    assert.equal(local.code, 0, local.stderr);
    assert.ok(!local.stdout.includes('not-in-any-image'));

    assert.equal((await api('DELETE', `/v2/deployments/${id}`)).status, 204);
    await eventually(async () => (await api('GET', `/v2/deployments/${id}`)).status === 404, 'the deployment to be deleted', 60_000);
    const left = (await run('podman', ['ps', '-a', '--format', '{{.Names}}'])).stdout.split('\n').filter((n) => n.includes(deploymentName));
    assert.deepEqual(left, [], 'no container outlives the deployment');
  });

  test(
    'a build that cannot start says why: unknown ref, missing or escaping configuration (a path out of the checkout is refused at create)',
    { timeout: deadline(10 * 60_000) },
    async () => {
      const cases: { revision: Record<string, unknown>; files?: Record<string, string>; message: RegExp }[] = [
        { revision: { repo_ref: 'no-such-branch' }, message: /no-such-branch/ },
        { revision: { repo_ref: 'main', langgraph_config_path: 'missing/langgraph.json' }, message: /missing\/langgraph\.json.*does not exist/ },
        {
          revision: { repo_ref: 'escape' },
          files: { 'langgraph.json': '{"node_version": "20", "graphs": {"echo": "../../../etc/escape.ts:graph"}}' },
          message: /graphs\.echo/,
        },
        { revision: { repo_ref: 'broken' }, files: { 'langgraph.json': '{"graphs": ' }, message: /langgraph\.json/ },
      ];
      // A path out of the checkout does not get as far as the build: it is refused at the door.
      const escaping = await api('POST', '/v2/deployments', {
        body: {
          name: `broken-escape-${randomUUID().slice(0, 6)}`,
          source: 'codehost',
          source_config: { integration_id: integrationId, repo_url: repoUrl },
          source_revision_config: { repo_ref: 'main', langgraph_config_path: '../langgraph.json' },
          secrets: [],
        },
      });
      assert.equal(escaping.status, 422, escaping.text);
      for (const [index, c] of cases.entries()) {
        if (c.files) await repo.commit(c.revision.repo_ref as string, c.files, 'bad configuration');
        const created = await api('POST', '/v2/deployments', {
          body: {
            name: `broken-${index}-${randomUUID().slice(0, 6)}`,
            source: 'codehost',
            source_config: { integration_id: integrationId, repo_url: repoUrl },
            source_revision_config: c.revision,
            secrets: [],
          },
        });
        assert.equal(created.status, 201, created.text);
        const revision = await finished(created.body.id, created.body.latest_revision_id);
        assert.equal(revision.status, 'BUILD_FAILED', JSON.stringify(revision));
        assert.match(revision.status_message ?? '', c.message);
        assert.equal((await api('DELETE', `/v2/deployments/${created.body.id}`)).status, 204);
      }
      const leftovers = await run('bash', ['-c', `ls ${path.join(data.path, 'builds')} 2>/dev/null | wc -l`]);
      assert.equal(leftovers.stdout.trim(), '0', 'no checkout outlives its build');
    },
  );
});
