import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { Client } from '@langchain/langgraph-sdk';
import { containersEnv, run, ROOT } from '../build/helpers.js';
import { BUILD_TEST_BASE_IMAGE, TEST_BASE_IMAGE_NODE } from '../support/base-image.js';
import { type TempDir, tempDir } from '../support/git-repos.js';
import { type BerthProcess, stopBerth } from '../support/process.js';
import { startBerthWithRegistry, type TokenRegistry } from '../support/registry.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import { deadline } from '../support/deadline.js';

const execFileAsync = promisify(execFile);
const FIXTURE = path.join(ROOT, 'test/fixtures/agents/echo-agent');
const KEY = `berth_test_${randomUUID()}_${randomUUID()}`;

/**
 * Issue 11's proof: the exact request sequence `langgraph deploy` sends (langgraph_cli
 * deploy.py and host_backend.py, replayed here because the CLI's code cannot be part of
 * Berth and PyPI is not reachable): remote build (upload the project, PATCH, poll,
 * stream build logs) twice on one deployment, and the image push with a registry token.
 */
describe("langgraph deploy against Berth (the CLI's requests, replayed)", () => {
  holdMachineTurnForSuite({ before, after });
  let data: TempDir;
  let work: string;
  let registry: TokenRegistry;
  let berth: BerthProcess;
  const images: string[] = [];
  const name = `my-app-${randomUUID().slice(0, 6)}`;

  /** The CLI's client: X-Api-Key and Accept on every call, JSON only when there is a body. */
  const cli = async (method: string, route: string, payload?: unknown) => {
    const res = await fetch(`${berth.url}${route}`, {
      method,
      headers: { 'x-api-key': KEY, accept: 'application/json', ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
    });
    const text = await res.text();
    assert.ok(res.ok, `${method} ${route} failed with status ${res.status}: ${text}`);
    return text ? JSON.parse(text) : null;
  };

  /** create_archive: the project's files at the archive root, langgraph.json among them. */
  async function archive(projectDir: string): Promise<{ file: string; size: number }> {
    const file = path.join(work, `source-${randomUUID().slice(0, 8)}.tar.gz`);
    await execFileAsync('tar', ['-C', projectDir, '-czf', file, 'langgraph.json', 'package.json', 'package-lock.json', 'src']);
    return { file, size: (await stat(file)).size };
  }

  /** _upload_to_gcs: a PUT with the archive, its size and GCS's length range, and no API key. */
  const upload = async (url: string, file: string, size: number, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: 'PUT',
      headers: { 'content-type': 'application/gzip', 'content-length': String(size), 'x-goog-content-length-range': '0,209715200', ...headers },
      body: await readFile(file),
    });

  before(
    async () => {
      const base = await run('bash', BUILD_TEST_BASE_IMAGE, 15 * 60_000);
      assert.equal(base.code, 0, base.stderr);
      const testImage = await run(path.join(ROOT, 'scripts/build-test-image.sh'), ['localhost/berth-test-agent:v1']);
      assert.equal(testImage.code, 0, testImage.stderr);
      data = await tempDir('berth-deploy-data-');
      work = await mkdtemp(path.join(os.tmpdir(), 'berth-deploy-work-'));
      // Built images go to a registry (Debian's docker-registry) that trusts Berth's tokens.
      ({ berth, registry } = await startBerthWithRegistry(data.path, {
        ...(containersEnv() as Record<string, string>),
        BERTH_BOOTSTRAP_API_KEY: KEY,
        BERTH_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
        BERTH_CONTAINER_RUNTIME: 'podman',
        BERTH_BASE_IMAGE_NODE: TEST_BASE_IMAGE_NODE,
      }));
    },
    { timeout: deadline(20 * 60_000) },
  );

  after(async () => {
    if (berth) await stopBerth(berth);
    const listed = (await run('podman', ['ps', '-a', '--format', '{{.Names}}'])).stdout
      .split('\n')
      .filter((n) => n.startsWith('berth-my-app-') || n.startsWith('berth-pushed-'));
    if (listed.length > 0) await run('podman', ['rm', '-f', '-t', '0', ...listed]);
    const all = (await run('podman', ['images', '--format', '{{.Repository}}:{{.Tag}}'])).stdout.split('\n');
    const ours = [...images, ...all.filter((image) => image.startsWith(`${registry?.host}/`))].filter(Boolean);
    if (ours.length > 0) await run('podman', ['rmi', '-f', ...ours]);
    await registry?.stop();
    await rm(work, { recursive: true, force: true });
    await data?.remove();
  });

  async function remoteBuild(projectDir: string): Promise<string> {
    // find_deployment_id_by_name: the CLI scans name_contains results for the exact name.
    const found = (await cli('GET', `/v2/deployments?name_contains=${name}`)).resources as { id: string; name: string }[];
    let id = found.find((d) => d.name === name)?.id;
    if (!id) {
      const created = await cli('POST', '/v2/deployments', {
        name,
        source: 'internal_source',
        source_config: { deployment_type: 'dev' },
        source_revision_config: {},
        secrets: [{ name: 'GREETING', value: 'hello' }],
      });
      assert.ok(created.id && created.tenant_id, 'create answers id and tenant_id');
      id = created.id as string;
    }
    const { file, size } = await archive(projectDir);
    const urls = await cli('POST', `/v2/deployments/${id}/upload-url`);
    assert.ok(urls.upload_url && urls.object_path);
    const put = await upload(urls.upload_url, file, size);
    assert.equal(put.status, 200, await put.text());
    const updated = await cli('PATCH', `/v2/deployments/${id}`, {
      revision_source: 'internal_source',
      source_revision_config: { source_tarball_path: urls.object_path, langgraph_config_path: 'langgraph.json' },
      secrets: [{ name: 'GREETING', value: 'hello' }],
    });
    assert.ok(updated.tenant_id);
    const [newest] = (await cli('GET', `/v2/deployments/${id}/revisions?limit=1`)).resources as { id: string }[];
    assert.ok(newest);
    assert.equal(newest.id, updated.latest_revision_id, "the PATCH's revision is already the newest");

    // _poll_revision_status with --verbose: build logs streamed while AWAITING_BUILD / BUILDING.
    let status = '';
    let offset: string | null = null;
    const streamed: string[] = [];
    for (const until = Date.now() + deadline(900_000); Date.now() < until;) {
      status = (await cli('GET', `/v2/deployments/${id}/revisions/${newest.id}`)).status ?? 'UNKNOWN';
      if (['DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'CREATE_FAILED', 'SKIPPED'].includes(status)) break;
      if (status === 'AWAITING_BUILD' || status === 'BUILDING') {
        const page = await cli(
          'POST',
          `/v1/projects/${id}/revisions/${newest.id}/build_logs`,
          offset ? { order: 'asc', limit: 50, offset } : { order: 'asc', limit: 50 },
        );
        streamed.push(...(page.logs as { message: string }[]).map((l) => l.message));
        offset = page.next_offset ?? offset;
      }
      // Faster than the CLI polls: a second build from cached layers can be over within a second.
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    if (status !== 'DEPLOYED') {
      const tail = await cli('POST', `/v1/projects/${id}/revisions/${newest.id}/build_logs`, { order: 'desc', limit: 30 });
      assert.fail(
        `revision ended ${status}:\n${(tail.logs as { message: string }[])
          .map((l) => l.message)
          .reverse()
          .join('\n')}`,
      );
    }
    assert.ok(
      streamed.some((m) => m.startsWith('Dockerfile')),
      'build logs stream while building',
    );
    return id;
  }

  async function ask(id: string, input: string): Promise<unknown> {
    const deployment = await cli('GET', `/v2/deployments/${id}`);
    const url = deployment.source_config.custom_url as string;
    const sdk = new Client({ apiUrl: url });
    const [assistant] = await sdk.assistants.search({ graphId: 'echo' });
    assert.ok(assistant);
    const thread = await sdk.threads.create();
    return ((await sdk.runs.wait(thread.thread_id, assistant.assistant_id, { input: { input } })) as { output?: unknown }).output;
  }

  test('remote build: upload, PATCH, poll, and a second deploy of a changed graph to the same deployment', { timeout: deadline(20 * 60_000) }, async () => {
    const project = path.join(work, 'my-app');
    await cp(FIXTURE, project, { recursive: true });
    const id = await remoteBuild(project);
    assert.equal(await ask(id, 'hi'), 'echo: hi');
    const revisions = (await cli('GET', `/v2/deployments/${id}/revisions`)).resources as { status: string; status_message: string | null }[];
    assert.equal(revisions.at(-1)?.status, 'SKIPPED', 'the empty first revision gives way to the upload');

    const graph = path.join(project, 'src/graph.ts');
    await writeFile(graph, (await readFile(graph, 'utf8')).replace('`echo: ${state.input}`', '`echo 2: ${state.input}`'));
    assert.equal(await remoteBuild(project), id, 'the second deploy finds the deployment by name');
    assert.equal(await ask(id, 'hi'), 'echo 2: hi');
    const uploads = await run('bash', ['-c', `find ${path.join(data.path, 'uploads')} -name '*.tar.gz' | wc -l`]);
    assert.equal(uploads.stdout.trim(), '0', 'built archives are removed');
  });

  test("uploads refuse what they must: reused, other deployment's or bad tokens, oversize, not gzip, foreign paths", async () => {
    const created = await cli('POST', '/v2/deployments', {
      name: `${name}-x`,
      source: 'internal_source',
      source_config: { deployment_type: 'dev' },
      source_revision_config: {},
      secrets: [],
    });
    const other = await cli('POST', '/v2/deployments', {
      name: `${name}-y`,
      source: 'internal_source',
      source_config: { deployment_type: 'dev' },
      source_revision_config: {},
      secrets: [],
    });
    const project = path.join(work, 'my-app-x');
    await cp(FIXTURE, project, { recursive: true });
    const { file, size } = await archive(project);
    const urls = await cli('POST', `/v2/deployments/${created.id}/upload-url`);
    assert.equal((await upload(urls.upload_url, file, size)).status, 200);
    const reused = await upload(urls.upload_url, file, size);
    assert.equal(reused.status, 403);
    assert.match((await reused.json()).detail, /used|already/i);
    const otherUrls = await cli('POST', `/v2/deployments/${other.id}/upload-url`);
    const swapped = await upload(otherUrls.upload_url.replace(other.id, created.id), file, size);
    assert.equal(swapped.status, 403, 'a token is bound to its deployment');
    assert.equal((await upload(otherUrls.upload_url.replace(/token=[^&]+/, 'token=forged'), file, size)).status, 403);
    const tooBig = await fetch(otherUrls.upload_url, {
      method: 'PUT',
      headers: { 'content-type': 'application/gzip', 'content-length': String(209_715_201) },
      body: 'x',
    }).catch((error: Error) => error);
    if (!(tooBig instanceof Error)) assert.equal(tooBig.status, 413);
    const fresh = await cli('POST', `/v2/deployments/${other.id}/upload-url`);
    const notGzip = await fetch(fresh.upload_url, { method: 'PUT', headers: { 'content-type': 'application/gzip' }, body: 'plain text, not gzip' });
    assert.equal(notGzip.status, 400);

    const foreign = await fetch(`${berth.url}/v2/deployments/${other.id}`, {
      method: 'PATCH',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({
        revision_source: 'internal_source',
        source_revision_config: { source_tarball_path: urls.object_path, langgraph_config_path: 'langgraph.json' },
      }),
    });
    assert.equal(foreign.status, 400, 'an archive uploaded for another deployment cannot be built here');

    const pushToken = await fetch(`${berth.url}/v2/deployments/${created.id}/push-token`, { method: 'POST', headers: { 'x-api-key': KEY } });
    assert.equal(pushToken.status, 400);
    assert.match((await pushToken.json()).detail, /only available for 'internal_docker' source deployments/);
  });

  test(
    "image push: a push token that may push only to the deployment's path, then the pushed digest is deployed",
    { timeout: deadline(10 * 60_000) },
    async () => {
      const created = await cli('POST', '/v2/deployments', {
        name: `pushed-${randomUUID().slice(0, 6)}`,
        source: 'internal_docker',
        source_config: { deployment_type: 'prod' },
        source_revision_config: {},
        secrets: [],
      });
      const { token, registry_url: registryUrl } = await cli('POST', `/v2/deployments/${created.id}/push-token`);
      assert.ok(token && registryUrl);
      const host = registryUrl.split('/')[0];
      const remote = `${registryUrl}/my-agent:v1`;
      images.push(remote);
      const login = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = execFile(
          'podman',
          ['login', '--tls-verify=false', '-u', 'oauth2accesstoken', '--password-stdin', host],
          { env: containersEnv() },
          (error, _stdout, stderr) => resolve({ code: error ? 1 : 0, stderr }),
        );
        child.stdin?.end(`${token}\n`);
      });
      assert.equal(login.code, 0, login.stderr);
      try {
        assert.equal((await run('podman', ['tag', 'localhost/berth-test-agent:v1', remote])).code, 0);
        const digestFile = path.join(work, 'digest');
        const push = await run('podman', ['push', '--tls-verify=false', '--digestfile', digestFile, remote]);
        assert.equal(push.code, 0, push.stderr);
        const elsewhere = await run('podman', ['push', '--tls-verify=false', remote, `${host}/another-deployment/my-agent:v1`]);
        assert.notEqual(elsewhere.code, 0, "the token cannot push outside the deployment's path");
        const digest = (await readFile(digestFile, 'utf8')).trim();
        // Gone from this machine: Berth must pull it from the registry with its own credentials.
        await run('podman', ['rmi', '-f', remote]);
        const updated = await cli('PATCH', `/v2/deployments/${created.id}`, {
          revision_source: 'internal_docker',
          source_revision_config: { image_uri: `${registryUrl}/my-agent@${digest}` },
          secrets: [],
        });
        const revision = await cli('GET', `/v2/deployments/${created.id}/revisions/${updated.latest_revision_id}?wait_for_terminal=300`);
        assert.equal(revision.status, 'DEPLOYED', revision.status_message);
        const deployment = await cli('GET', `/v2/deployments/${created.id}`);
        assert.equal((await fetch(`${deployment.source_config.custom_url}/ok`)).status, 200);
      } finally {
        await run('podman', ['logout', host]);
      }
    },
  );
});
