import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { AccessEntry } from '../../src/registry/access.js';
import { type CredentialSecret, credentialVerifier, deriveCredentialSecret, mintPullCredential, mintPushCredential } from '../../src/registry/credentials.js';
import { deploymentPushTarget } from '../../src/registry/image-names.js';
import { parseRegistryLocation } from '../../src/domain/registry-location.js';
import { signRegistryToken } from '../../src/registry/registry-token.js';
import { loadOrCreateSigningKey, type RegistrySigningKey, signingKeyFromPem, writeCertificateBundle } from '../../src/registry/signing-key.js';
import { createTokenEndpoint, DEFAULT_REGISTRY_SERVICE, DEFAULT_TOKEN_ISSUER } from '../../src/registry/token-endpoint.js';
import { serveTokenEndpoint, startTokenRegistry, type TokenRegistry, type TokenServer } from '../support/registry.js';

/*
 * Debian's docker-registry (distribution 2.8) with `auth: token:` pointing at Berth's token
 * endpoint, driven by podman as the LangGraph CLI drives docker: `login -u oauth2accesstoken
 * --password-stdin`, then push; and pulled back by digest as Berth's engine will.
 */

const execFileAsync = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SERVICE = DEFAULT_REGISTRY_SERVICE;
const ISSUER = DEFAULT_TOKEN_ISSUER;
const TOOL_TIMEOUT_MS = 120_000;
// What podman and skopeo print when the registry refuses the token's scope, and when the token
// endpoint refuses the credential at login.
const DENIED = /requested access to the resource is denied/;
const LOGIN_REFUSED = /invalid username\/password/;
const containerEnv = {
  ...process.env,
  CONTAINERS_CONF: process.env.CONTAINERS_CONF ?? '/etc/berth/containers.conf',
  CONTAINERS_REGISTRIES_CONF: process.env.CONTAINERS_REGISTRIES_CONF ?? '/etc/berth/registries.conf',
};

interface ToolResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs podman or skopeo in its own process group, killed whole on timeout; `input` goes to stdin, never argv. */
function runTool(binary: string, args: string[], input?: string): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { env: containerEnv, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }, TOOL_TIMEOUT_MS);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input ?? '');
  });
}

async function onPath(binary: string): Promise<boolean> {
  return execFileAsync('sh', ['-c', `command -v ${binary}`]).then(
    () => true,
    () => false,
  );
}

const missing = [];
for (const tool of ['docker-registry', 'podman', 'buildah']) if (!(await onPath(tool))) missing.push(tool);
// These tools are installed by scripts/setup-containers.sh (and in CI); only a machine without them skips.
const skip = missing.length > 0 ? `${missing.join(', ')} not installed; run scripts/setup-containers.sh` : false;

describe('docker-registry behind Berth token auth', { skip }, () => {
  let work: string;
  let signingKey: RegistrySigningKey;
  let secret: CredentialSecret;
  let tokens: TokenServer;
  let registry: TokenRegistry;
  const image = `localhost/berth-registry-test:${randomUUID().slice(0, 8)}`;
  const pulled: string[] = [];

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'berth-registry-test-'));
    signingKey = await loadOrCreateSigningKey(path.join(work, 'data', 'registry'));
    const bundle = path.join(work, 'rootcertbundle.pem');
    await writeCertificateBundle(signingKey, bundle);
    secret = deriveCredentialSecret(randomBytes(32));
    tokens = await serveTokenEndpoint(createTokenEndpoint({ signingKey, issuer: ISSUER, service: SERVICE, verifyCredential: credentialVerifier(secret) }));
    registry = await startTokenRegistry({ realm: tokens.realm, service: SERVICE, issuer: ISSUER, rootCertBundle: bundle });
    await execFileAsync(path.join(root, 'scripts/build-test-image.sh'), [image], { env: containerEnv, timeout: TOOL_TIMEOUT_MS });
  });

  after(async () => {
    await registry?.stop();
    await tokens?.stop();
    await runTool('podman', ['rmi', '--ignore', image, ...pulled]);
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** A fresh auth file per login, so no test sees another's credentials. */
  async function login(credential: string): Promise<{ result: ToolResult; authfile: string }> {
    const authfile = path.join(work, `auth-${randomUUID()}.json`);
    const result = await runTool(
      'podman',
      ['login', '--authfile', authfile, '--tls-verify=false', '-u', 'oauth2accesstoken', '--password-stdin', registry.host],
      `${credential}\n`,
    );
    return { result, authfile };
  }

  async function loggedIn(credential: string): Promise<string> {
    const { result, authfile } = await login(credential);
    assert.equal(result.code, 0, `podman login failed: ${result.stderr}`);
    return authfile;
  }

  function push(authfile: string, reference: string, digestfile?: string): Promise<ToolResult> {
    const args = ['push', '--authfile', authfile, '--tls-verify=false'];
    if (digestfile) args.push('--digestfile', digestfile);
    return runTool('podman', [...args, image, `docker://${reference}`]);
  }

  /** Asks the registry directly with a registry token: what a client holding that token would see. */
  async function tagsWith(token: string, repository: string): Promise<{ status: number; body: string; challenge: string | null }> {
    const response = await fetch(`${registry.url}/v2/${repository}/tags/list`, { headers: { Authorization: `Bearer ${token}` } });
    return { status: response.status, body: await response.text(), challenge: response.headers.get('www-authenticate') };
  }

  async function registryToken(access: AccessEntry[], overrides: { key?: RegistrySigningKey; issuer?: string; ageSeconds?: number } = {}) {
    const issuedAt = new Date(Date.now() - (overrides.ageSeconds ?? 0) * 1000);
    return signRegistryToken(overrides.key ?? signingKey, {
      issuer: overrides.issuer ?? ISSUER,
      service: SERVICE,
      subject: 'test',
      access,
      issuedAt,
      expiresAt: new Date(issuedAt.getTime() + 300_000),
    });
  }

  let digest = '';

  test('the registry sends clients to Berth for a token', async () => {
    const response = await fetch(`${registry.url}/v2/berth/a/tags/list`);
    assert.equal(response.status, 401);
    assert.equal(response.headers.get('www-authenticate'), `Bearer realm="${tokens.realm}",service="${SERVICE}",scope="repository:berth/a:pull"`);
  });

  test('a push token for berth/a logs in and pushes to berth/a', async () => {
    const { credential } = await mintPushCredential(secret, { subject: 'deployment:a', repository: 'berth/a' });
    const authfile = await loggedIn(credential);
    const digestfile = path.join(work, 'digest-a');
    const pushed = await push(authfile, `${registry.host}/berth/a:v1`, digestfile);
    assert.equal(pushed.code, 0, `push to berth/a failed: ${pushed.stderr}\n${registry.output().slice(-3000)}`);
    digest = (await readFile(digestfile, 'utf8')).trim();
    assert.match(digest, /^sha256:[0-9a-f]{64}$/);
    const asked = tokens.requests.filter((request) => request.scope.some((scope) => /^repository:berth\/a:(pull,push|push,pull)$/.test(scope)));
    assert.ok(asked.length > 0 && asked.every((request) => request.status === 200 && request.service === SERVICE), JSON.stringify(tokens.requests));
    assert.ok(!pushed.stderr.includes(credential) && !pushed.stdout.includes(credential));
  });

  test('the same push token cannot push to berth/b, and nothing lands there', async () => {
    const { credential } = await mintPushCredential(secret, { subject: 'deployment:a', repository: 'berth/a' });
    const authfile = await loggedIn(credential);
    const pushed = await push(authfile, `${registry.host}/berth/b:v1`);
    assert.notEqual(pushed.code, 0, 'push to berth/b must be refused');
    assert.match(pushed.stderr, DENIED);
    const look = await tagsWith(await registryToken([{ type: 'repository', name: 'berth/b', actions: ['pull'] }]), 'berth/b');
    assert.equal(look.status, 404, look.body);
    assert.match(look.body, /NAME_UNKNOWN/);
  });

  test('a pull credential pulls berth/a back by digest, and cannot push', async () => {
    assert.ok(digest, 'needs the push test to have run');
    const { credential } = await mintPullCredential(secret, { subject: 'berth-engine', repository: 'berth/a' });
    const authfile = await loggedIn(credential);
    const reference = `${registry.host}/berth/a@${digest}`;
    const pulledNow = await runTool('podman', ['pull', '--authfile', authfile, '--tls-verify=false', reference]);
    assert.equal(pulledNow.code, 0, `pull by digest failed: ${pulledNow.stderr}`);
    pulled.push(reference);
    const inspected = await runTool('podman', ['image', 'inspect', '--format', '{{json .RepoDigests}}', reference]);
    assert.ok(inspected.stdout.includes(reference), inspected.stdout);
    const pushed = await push(authfile, `${registry.host}/berth/a:v2`);
    assert.notEqual(pushed.code, 0, 'a pull credential must not push');
    assert.match(pushed.stderr, DENIED);
  });

  test('a credential for another repository cannot pull berth/a', async () => {
    assert.ok(digest, 'needs the push test to have run');
    const { credential } = await mintPullCredential(secret, { subject: 'other', repository: 'berth/b' });
    const authfile = await loggedIn(credential);
    const result = await runTool('skopeo', ['inspect', '--authfile', authfile, '--tls-verify=false', `docker://${registry.host}/berth/a@${digest}`]);
    assert.notEqual(result.code, 0, 'pull of berth/a with a berth/b credential must be refused');
    assert.match(result.stderr, DENIED);
  });

  test('as the LangGraph CLI does: registry_url from BERTH_REGISTRY, push below it, nowhere else', async () => {
    const workspace = randomUUID();
    const deployment = randomUUID();
    const target = deploymentPushTarget(parseRegistryLocation(`${registry.host}/berth`), workspace, deployment);
    const { credential } = await mintPushCredential(secret, { subject: `deployment:${deployment}`, repository: target.repositoryGrant });
    const host = target.registryUrl.split('/')[0];
    assert.equal(host, registry.host);
    const authfile = await loggedIn(credential);
    const ours = await push(authfile, `${target.registryUrl}/my-agent:v1`);
    assert.equal(ours.code, 0, `push below the deployment's path failed: ${ours.stderr}`);
    for (const other of [
      deploymentPushTarget(parseRegistryLocation(`${registry.host}/berth`), workspace, randomUUID()),
      deploymentPushTarget(parseRegistryLocation(`${registry.host}/berth`), randomUUID(), deployment),
    ]) {
      const theirs = await push(authfile, `${other.registryUrl}/my-agent:v1`);
      assert.notEqual(theirs.code, 0, `push into ${other.repositoryPath} (another deployment's or workspace's path) must be refused`);
      assert.match(theirs.stderr, DENIED);
    }
    // Nor into the deployment's own repository, where only Berth's builder pushes.
    const built = await push(authfile, `${target.registryUrl}:v1`);
    assert.notEqual(built.code, 0, "the CLI's token cannot overwrite the images Berth builds");
    assert.match(built.stderr, DENIED);
  });

  test('an expired push token is refused at login, and the refusal does not show it', async () => {
    const { credential } = await mintPushCredential(secret, {
      subject: 'deployment:a',
      repository: 'berth/a',
      ttlSeconds: 3600,
      now: new Date(Date.now() - 2 * 3600_000),
    });
    const { result } = await login(credential);
    assert.notEqual(result.code, 0, 'login with an expired push token must fail');
    assert.match(result.stderr, LOGIN_REFUSED);
    assert.ok(!result.stderr.includes(credential) && !result.stdout.includes(credential));
    assert.ok(!registry.output().includes(credential));
  });

  test('a tampered push token is refused at login', async () => {
    const { credential } = await mintPushCredential(secret, { subject: 'deployment:a', repository: 'berth/a' });
    const [header, payload, signature] = credential.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    claims.repositories = { 'berth/b': ['push', 'pull'] };
    const widened = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
    const rewritten = (await login(widened)).result;
    assert.notEqual(rewritten.code, 0, 'a token with rewritten grants must not log in');
    assert.match(rewritten.stderr, LOGIN_REFUSED);
    const flipped = `${header}.${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
    const resigned = (await login(flipped)).result;
    assert.notEqual(resigned.code, 0, 'a token with a changed signature must not log in');
    assert.match(resigned.stderr, LOGIN_REFUSED);
  });

  test('the registry itself refuses registry tokens that are tampered with, expired, misissued or signed by another key', async () => {
    const readA: AccessEntry[] = [{ type: 'repository', name: 'berth/a', actions: ['pull'] }];
    const good = await registryToken(readA);
    assert.equal((await tagsWith(good, 'berth/a')).status, 200, 'a well-formed token is accepted (control)');

    const [header, , signature] = good.split('.') as [string, string, string];
    const payload = JSON.parse(Buffer.from(good.split('.')[1] ?? '', 'base64url').toString());
    payload.access = [{ type: 'repository', name: 'berth/b', actions: ['pull'] }];
    const rewritten = `${header}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${signature}`;
    const expired = await registryToken(readA, { ageSeconds: 600 }); // expired 300 s ago, beyond the registry's 60 s leeway
    const misissued = await registryToken(readA, { issuer: 'someone-else' });
    const foreign = await registryToken(readA, { key: await loadOrCreateSigningKey(path.join(work, 'foreign')) });
    for (const [name, token, repository] of [
      ['rewritten', rewritten, 'berth/b'],
      ['expired', expired, 'berth/a'],
      ['misissued', misissued, 'berth/a'],
      ['foreign key', foreign, 'berth/a'],
    ] as const) {
      const look = await tagsWith(token, repository);
      assert.equal(look.status, 401, `${name}: ${look.body}`);
      assert.match(look.challenge ?? '', /error="invalid_token"/, name);
    }
  });

  test('an operator-made RSA key (openssl) and a bundle trusting two keys at once, as while rotating', async () => {
    const keyFile = path.join(work, 'operator-key.pem');
    const certFile = path.join(work, 'operator-cert.pem');
    await execFileAsync('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '30',
      '-subj',
      '/CN=berth registry tokens',
      '-sha256',
    ]);
    const operatorKey = signingKeyFromPem(await readFile(keyFile, 'utf8'), await readFile(certFile, 'utf8'));
    assert.equal(operatorKey.algorithm, 'RS256');
    const bundle = path.join(work, 'two-key-bundle.pem');
    await writeCertificateBundle([signingKey, operatorKey], bundle);
    const rotating = await startTokenRegistry({ realm: tokens.realm, service: SERVICE, issuer: ISSUER, rootCertBundle: bundle });
    try {
      const readA: AccessEntry[] = [{ type: 'repository', name: 'berth/a', actions: ['pull'] }];
      for (const key of [operatorKey, signingKey]) {
        const token = await registryToken(readA, { key });
        const response = await fetch(`${rotating.url}/v2/berth/a/tags/list`, { headers: { Authorization: `Bearer ${token}` } });
        // Authorized; the repository is simply empty in this second registry.
        assert.equal(response.status, 404, `${key.algorithm}: ${await response.text()}`);
      }
    } finally {
      await rotating.stop();
    }
  });
});
