import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LocalContainerRuntime } from '../../src/containers/runtime/index.js';
import type { RunRequest, RuntimeDriver, StepContext } from '../../src/engine/drivers/types.js';
import {
  DEFAULT_REGISTRY_SERVICE,
  DEFAULT_TOKEN_ISSUER,
  deriveCredentialSecret,
  loadOrCreateSigningKey,
  mintPushCredential,
  writeCertificateBundle,
} from '../../src/registry/index.js';
import { parseEncryptionKey } from '../../src/security/encryption.js';
import { containersEnv, run, ROOT } from '../build/helpers.js';
import { type Client, client } from '../support/http.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import { freePort } from '../support/process.js';
import { startTokenRegistry, TOKEN_PATH, type TokenRegistry } from '../support/registry.js';
import { type DatabaseKind, startTestServer, type TestServer } from '../support/server.js';
import { otherTenants } from '../support/suite.js';
import { deadline } from '../support/deadline.js';
import { describeEachDatabase } from '../support/database.js';

const TEST_IMAGE = 'localhost/berth-test-agent:v1';
const DENIED = /denied|unauthorized|authentication required/i;
const REFUSED = /not in a repository of a deployment of this workspace/;

/** The real runtime (podman), noting every start request so a test can tell which credentials it got. */
class RecordingRuntime implements RuntimeDriver {
  readonly name = 'podman (recorded)';
  readonly started: RunRequest[] = [];
  constructor(private readonly inner: RuntimeDriver) {}
  unavailableReason() {
    return this.inner.unavailableReason();
  }
  start(request: RunRequest, context: StepContext) {
    this.started.push(request);
    return this.inner.start(request, context);
  }
  retire(handle: string, context: StepContext) {
    return this.inner.retire(handle, context);
  }
  teardown(deploymentId: string, context: StepContext) {
    return this.inner.teardown(deploymentId, context);
  }
}

/**
 * Issue 20, item 2: workspace B cannot pull or deploy workspace A's images from Berth's registry
 * (real docker-registry behind Berth's token realm, real podman), by image_uri at create, at
 * PATCH, or through a row written before the rule; A's push token cannot push into B's path; A's
 * own images, including those named by the layouts of before the rule, keep deploying.
 */
describe('registry images are scoped to their workspace', async () => {
  const unavailable = await new LocalContainerRuntime({ runtime: 'podman', env: containersEnv() }).unavailableReason();
  if (unavailable) {
    process.stdout.write(`# SKIP registry workspace scope: ${unavailable}\n`);
    return;
  }
  holdMachineTurnForSuite({ before, after });
  before(async () => {
    const built = await run('bash', [path.join(ROOT, 'scripts/build-test-image.sh'), TEST_IMAGE]);
    assert.equal(built.code, 0, built.stderr);
  });
  describeEachDatabase('', scopeSuite);
});

function scopeSuite(kind: DatabaseKind): void {
  const masterKeyHex = randomBytes(32).toString('hex');
  const runtime = new RecordingRuntime(new LocalContainerRuntime({ runtime: 'podman', env: containersEnv(), healthTimeoutMs: null }));
  const deployments: string[] = [];
  const localImages: string[] = [];
  let work: string;
  let registry: TokenRegistry;
  let server: TestServer;
  let a: Client;
  let b: Client;
  let workspaceA: string;
  let workspaceB: string;
  // Workspace A's deployment, its push token's registry_url and the image A pushed there.
  let deploymentA: string;
  let urlA: string;
  let imageA: string;
  let deploymentB: string;
  let urlB: string;

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'berth-scope-'));
    // The operator's signing key, so the registry can trust it before Berth starts.
    const signingKey = await loadOrCreateSigningKey(path.join(work, 'key'));
    const keyFile = path.join(work, 'token-key.pem');
    const certFile = path.join(work, 'token-cert.pem');
    await writeFile(keyFile, signingKey.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    await writeFile(certFile, signingKey.certificatePem);
    const bundle = path.join(work, 'bundle.pem');
    await writeCertificateBundle(signingKey, bundle);
    const port = await freePort();
    registry = await startTokenRegistry({
      realm: `http://127.0.0.1:${port}${TOKEN_PATH}`,
      service: DEFAULT_REGISTRY_SERVICE,
      issuer: DEFAULT_TOKEN_ISSUER,
      rootCertBundle: bundle,
    });
    server = await startTestServer(kind, {
      encryptionKey: masterKeyHex,
      overrides: { runtime },
      env: {
        PORT: String(port),
        BERTH_REGISTRY: registry.host,
        BERTH_REGISTRY_TOKEN_KEY_FILE: keyFile,
        BERTH_REGISTRY_TOKEN_CERT_FILE: certFile,
      },
    });
    a = client(server.url, { key: server.adminKey });
    workspaceA = server.workspaceId;
    const others = await otherTenants({ server, api: a, anonymous: client(server.url) });
    b = client(server.url, { key: others.otherWorkspaceKey });
    workspaceB = others.otherWorkspaceId;
  });

  after(async () => {
    // The engine first: a deploy it had in flight could otherwise start a container after the sweep below.
    await server?.close();
    for (const id of deployments) {
      const ids = (await run('podman', ['ps', '-aq', '--filter', `label=berth.deployment=${id}`])).stdout.split('\n').filter(Boolean);
      if (ids.length > 0) await run('podman', ['rm', '-f', '-t', '0', ...ids]);
    }
    const pulled = (await run('podman', ['images', '--format', '{{.Repository}}:{{.Tag}}'])).stdout
      .split('\n')
      .filter((image) => registry && image.startsWith(`${registry.host}/`));
    const ours = [...pulled, ...localImages];
    if (ours.length > 0) await run('podman', ['rmi', '-f', ...ours]);
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  async function create(api: Client, body: Record<string, unknown>) {
    const created = await api('POST', '/v2/deployments', {
      body: { name: `scope-${randomUUID().slice(0, 8)}`, source: 'internal_docker', source_config: { deployment_type: 'dev' }, secrets: [], ...body },
    });
    if (created.status === 201) deployments.push(created.body.id);
    return created;
  }

  async function pushToken(api: Client, deploymentId: string): Promise<{ token: string; registry_url: string }> {
    const answer = await api('POST', `/v2/deployments/${deploymentId}/push-token`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body;
  }

  /** `podman login` with the credential into an auth file of its own; returns the file. */
  async function login(credential: string): Promise<string> {
    const authfile = path.join(work, `auth-${randomUUID()}.json`);
    const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
      const child = execFile(
        'podman',
        ['login', '--authfile', authfile, '--tls-verify=false', '-u', 'oauth2accesstoken', '--password-stdin', registry.host],
        { env: containersEnv() },
        (error, _stdout, stderr) => resolve({ code: error ? 1 : 0, stderr }),
      );
      child.stdin?.end(`${credential}\n`);
    });
    assert.equal(result.code, 0, result.stderr);
    return authfile;
  }

  /** Pushes the test image to `destination`; the digest when it was accepted. */
  async function push(authfile: string, destination: string): Promise<{ code: number; stderr: string; digest: string }> {
    const digestFile = path.join(work, `digest-${randomUUID()}`);
    const pushed = await run('podman', ['push', '--authfile', authfile, '--tls-verify=false', '--digestfile', digestFile, TEST_IMAGE, destination]);
    const digest = pushed.code === 0 ? (await readFile(digestFile, 'utf8')).trim() : '';
    return { code: pushed.code, stderr: pushed.stderr, digest };
  }

  async function finalRevision(api: Client, deploymentId: string, revisionId: string) {
    const answer = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}?wait_for_terminal=240`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body as { id: string; status: string; status_message: string | null };
  }

  async function patchImage(api: Client, deploymentId: string, image: string) {
    return api('PATCH', `/v2/deployments/${deploymentId}`, {
      body: { revision_source: 'internal_docker', source_revision_config: { image_uri: image }, secrets: [] },
    });
  }

  /** The repositories and actions of the registry credential the runtime got for a revision. */
  /** Rewrites a stored revision as an older Berth might have left it. */
  async function rewriteRevision(revisionId: string, change: { image_uri?: string; image_ref?: string }) {
    const db = server.berth.db;
    const row = await db.selectFrom('revisions').select('source_revision_config').where('id', '=', revisionId).executeTakeFirstOrThrow();
    const config = JSON.parse(row.source_revision_config) as Record<string, unknown>;
    if (change.image_uri) config.image_uri = change.image_uri;
    await db
      .updateTable('revisions')
      .set({ source_revision_config: JSON.stringify(config), ...(change.image_ref ? { image_ref: change.image_ref } : {}) })
      .where('id', '=', revisionId)
      .execute();
  }

  function pullGrants(revisionId: string): unknown {
    const request = runtime.started.find((r) => r.revisionId === revisionId);
    assert.ok(request, `the runtime was asked to start revision ${revisionId}`);
    assert.ok(request.pull, 'with a pull credential');
    const payload = request.pull.password.split('.')[1] ?? '';
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')).repositories;
  }

  test("A pushes below its deployment's path and deploys it, pulled with a credential for that repository alone", { timeout: deadline(300_000) }, async () => {
    deploymentA = (await create(a, { source_revision_config: {} })).body.id;
    deploymentB = (await create(b, { source_revision_config: {} })).body.id;
    const tokenA = await pushToken(a, deploymentA);
    urlA = tokenA.registry_url;
    urlB = (await pushToken(b, deploymentB)).registry_url;
    assert.equal(urlA, `${registry.host}/${workspaceA}/${deploymentA}`);
    assert.equal(urlB, `${registry.host}/${workspaceB}/${deploymentB}`);

    const authA = await login(tokenA.token);
    const pushed = await push(authA, `${urlA}/agent:v1`);
    assert.equal(pushed.code, 0, pushed.stderr);
    imageA = `${urlA}/agent@${pushed.digest}`;
    // A's token cannot write into B's path, nor into A's own repository where Berth's builder pushes.
    for (const elsewhere of [`${urlB}/agent:v1`, `${urlA}:v1`, `${registry.host}/${workspaceA}/${randomUUID()}/agent:v1`]) {
      const refused = await push(authA, elsewhere);
      assert.notEqual(refused.code, 0, `A's push token pushed to ${elsewhere}`);
      assert.match(refused.stderr, DENIED);
    }

    const patched = await patchImage(a, deploymentA, imageA);
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const revision = await finalRevision(a, deploymentA, patched.body.latest_revision_id);
    assert.equal(revision.status, 'DEPLOYED', revision.status_message ?? '');
    assert.deepEqual(pullGrants(revision.id), { [`${workspaceA}/${deploymentA}/agent`]: ['pull'] });
  });

  test("B's push token cannot push into A's path; B asking for A's is refused and recorded nowhere", async () => {
    const tokenB = (await pushToken(b, deploymentB)).token;
    const authB = await login(tokenB);
    const refused = await push(authB, `${urlA}/agent:v2`);
    assert.notEqual(refused.code, 0, "B's push token pushed into A's path");
    assert.match(refused.stderr, DENIED);
    assert.equal((await b('POST', `/v2/deployments/${deploymentA}/push-token`)).status, 404);

    // Each credential handed out is in its own workspace's audit log, without the credential.
    const rowsOf = async (api: Client, id: string) => (await api('GET', `/v1/audit-log?target_id=${id}&limit=100`)).body.resources as { action: string }[];
    const issuedA = (await rowsOf(a, deploymentA)).filter((row) => row.action === 'deployment.push_token_issue');
    const auditorB = (await a('POST', '/v1/api-keys', { body: { name: 'auditor-b', role: 'read_only', workspace_id: workspaceB } })).body;
    const issuedB = await rowsOf(client(server.url, { key: auditorB.key }), deploymentB);
    assert.equal(issuedA.length, 1, 'one row for the one token A was given');
    assert.equal(issuedB.filter((row) => row.action === 'deployment.push_token_issue').length, 2, "B's two tokens, and none for A's deployment");
    assert.ok(!JSON.stringify(issuedB).includes(tokenB));
  });

  test("B cannot name A's image at create or at PATCH: 403 image_not_in_workspace, and nothing is created", async () => {
    assert.ok(imageA, 'needs the first test');
    const local = `localhost/berth/${workspaceA}/${deploymentA}:${randomUUID()}`;
    // A deployment of B's own workspace that does not exist answers exactly as A's does: ids cannot be probed.
    const nobody = `${registry.host}/${workspaceB}/${randomUUID()}/agent:v1`;
    for (const image of [imageA, `${urlA}/agent:v1`, `${registry.host.toUpperCase()}/${workspaceA}/${deploymentA}/agent:v1`, local, nobody]) {
      const created = await create(b, { source_revision_config: { image_uri: image } });
      assert.equal(created.status, 403, `create with ${image}: ${JSON.stringify(created.body)}`);
      assert.equal(created.body.code, 'image_not_in_workspace');
      assert.equal(typeof created.body.detail, 'string');

      const before = (await b('GET', `/v2/deployments/${deploymentB}`)).body.latest_revision_id;
      const patched = await patchImage(b, deploymentB, image);
      assert.equal(patched.status, 403, `PATCH with ${image}: ${JSON.stringify(patched.body)}`);
      assert.equal(patched.body.code, 'image_not_in_workspace');
      assert.equal((await b('GET', `/v2/deployments/${deploymentB}`)).body.latest_revision_id, before, 'no revision was made');
    }
    assert.equal(runtime.started.filter((r) => r.deploymentId === deploymentB).length, 0);
    // An image id would let the local store answer for any workspace's image.
    const byId = await create(b, { source_revision_config: { image_uri: 'a2a9' } });
    assert.equal(byId.status, 403);
    assert.equal(byId.body.code, 'image_not_in_workspace');
    // A's own deployment may name A's image.
    const mine = await create(a, { source_revision_config: { image_uri: `${urlA}/agent:v1` } });
    assert.equal(mine.status, 201, JSON.stringify(mine.body));
  });

  test(
    'images of any other registry are unaffected, and a row stored before the rule ends DEPLOY_FAILED without a credential',
    { timeout: deadline(300_000) },
    async () => {
      assert.ok(imageA, 'needs the first test');
      const own = await patchImage(b, deploymentB, TEST_IMAGE);
      assert.equal(own.status, 200, JSON.stringify(own.body));
      const deployed = await finalRevision(b, deploymentB, own.body.latest_revision_id);
      assert.equal(deployed.status, 'DEPLOYED', deployed.status_message ?? '');

      // As if written before the rule: B's finished revision now names A's image (present in this
      // machine's image store since A deployed it), and B redeploys it.
      await rewriteRevision(deployed.id, { image_uri: imageA });
      const redeployed = await b('POST', `/v2/deployments/${deploymentB}/revisions/${deployed.id}/redeploy`);
      assert.equal(redeployed.status, 200, JSON.stringify(redeployed.body));
      const failed = await finalRevision(b, deploymentB, redeployed.body.latest_revision_id);
      assert.equal(failed.status, 'DEPLOY_FAILED');
      assert.match(failed.status_message ?? '', REFUSED);
      assert.ok(!runtime.started.some((r) => r.revisionId === failed.id), 'the runtime was never asked to run it, so no credential was minted');

      // The same through a built image of before the rule (`localhost/berth/<name>:<revision id>`) of A's.
      const nameA = (await a('GET', `/v2/deployments/${deploymentA}`)).body.name as string;
      const revisionA = (await a('GET', `/v2/deployments/${deploymentA}`)).body.latest_revision_id as string;
      await rewriteRevision(deployed.id, { image_uri: TEST_IMAGE, image_ref: `localhost/berth/${nameA}:${revisionA}` });
      const again = await b('POST', `/v2/deployments/${deploymentB}/revisions/${deployed.id}/redeploy`);
      assert.equal(again.status, 200, JSON.stringify(again.body));
      const alsoFailed = await finalRevision(b, deploymentB, again.body.latest_revision_id);
      assert.equal(alsoFailed.status, 'DEPLOY_FAILED');
      assert.match(alsoFailed.status_message ?? '', /local image namespace/);
      assert.ok(!runtime.started.some((r) => r.revisionId === alsoFailed.id));
    },
  );

  test("A's images named by the layouts of before the rule still deploy for A, and only for A", { timeout: deadline(300_000) }, async () => {
    assert.ok(imageA, 'needs the first test');
    // A push token as Berth issued them before: `<deployment id>/*`.
    const { credential } = await mintPushCredential(deriveCredentialSecret(parseEncryptionKey(masterKeyHex)), {
      subject: `deployment:${deploymentA}`,
      repository: `${deploymentA}/*`,
    });
    const legacy = `${registry.host}/${deploymentA}/agent`;
    const pushed = await push(await login(credential), `${legacy}:v1`);
    assert.equal(pushed.code, 0, pushed.stderr);
    const refused = await patchImage(b, deploymentB, `${legacy}@${pushed.digest}`);
    assert.equal(refused.status, 403);
    const patched = await patchImage(a, deploymentA, `${legacy}@${pushed.digest}`);
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const revision = await finalRevision(a, deploymentA, patched.body.latest_revision_id);
    assert.equal(revision.status, 'DEPLOYED', revision.status_message ?? '');
    assert.deepEqual(pullGrants(revision.id), { [`${deploymentA}/agent`]: ['pull'] });

    // A build of before the rule, `localhost/berth/<deployment name>:<revision id>`, whose revision
    // was pruned since: redeploying a revision that carries it still runs it.
    const nameA = (await a('GET', `/v2/deployments/${deploymentA}`)).body.name as string;
    const built = `localhost/berth/${nameA}:${randomUUID()}`;
    localImages.push(built);
    assert.equal((await run('podman', ['tag', TEST_IMAGE, built])).code, 0);
    await rewriteRevision(revision.id, { image_ref: built });
    const redeployed = await a('POST', `/v2/deployments/${deploymentA}/revisions/${revision.id}/redeploy`);
    assert.equal(redeployed.status, 200, JSON.stringify(redeployed.body));
    const rerun = await finalRevision(a, deploymentA, redeployed.body.latest_revision_id);
    assert.equal(rerun.status, 'DEPLOYED', rerun.status_message ?? '');
    assert.equal(runtime.started.find((r) => r.revisionId === rerun.id)?.image, built);
  });
}
