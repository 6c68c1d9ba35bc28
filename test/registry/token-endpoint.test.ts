import assert from 'node:assert/strict';
import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { decodeProtectedHeader, importX509, jwtVerify } from 'jose';
import type { RegistryAccess } from '../../src/registry/access.js';
import { credentialVerifier, deriveCredentialSecret, mintPushCredential } from '../../src/registry/credentials.js';
import { loadOrCreateSigningKey, type RegistrySigningKey } from '../../src/registry/signing-key.js';
import { basicPassword, createTokenEndpoint, type TokenEndpointOptions, type TokenRequest } from '../../src/registry/token-endpoint.js';

const SERVICE = 'berth-registry';
const ISSUER = 'berth-token-issuer';
const CREDENTIAL = `cred-${randomBytes(12).toString('hex')}`;
const NOW = new Date('2030-06-01T12:00:00Z');

let dir: string;
let signingKey: RegistrySigningKey;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'berth-token-endpoint-'));
  signingKey = await loadOrCreateSigningKey(dir, NOW);
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function basic(password: string, user = 'oauth2accesstoken'): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

function endpoint(access: RegistryAccess | null, options: Partial<TokenEndpointOptions> = {}) {
  const seen: string[] = [];
  const handle = createTokenEndpoint({
    signingKey,
    issuer: ISSUER,
    service: SERVICE,
    now: () => NOW,
    verifyCredential: async (credential) => {
      seen.push(credential);
      return credential === CREDENTIAL ? access : null;
    },
    ...options,
  });
  return { handle, seen };
}

async function claimsOf(token: string) {
  const header = decodeProtectedHeader(token);
  const certificate = new X509Certificate(Buffer.from(header.x5c?.[0] ?? '', 'base64'));
  const { payload } = await jwtVerify(token, await importX509(certificate.toString(), 'ES256'), { currentDate: NOW });
  return { header, payload, certificate };
}

test('a valid credential gets a registry token granting the requested actions it allows, nothing beyond', async () => {
  const { handle, seen } = endpoint({ subject: 'deployment:d1', repositories: { 'berth/a': ['push', 'pull'] } });
  const request: TokenRequest = {
    authorization: basic(`${CREDENTIAL}\n`),
    service: SERVICE,
    scope: ['repository:berth/a:pull,push,delete', 'repository:berth/b:pull,push'],
  };
  const answer = await handle(request);
  assert.equal(answer.status, 200);
  assert.equal(answer.headers['Cache-Control'], 'no-store');
  if (answer.status !== 200) return;
  assert.deepEqual(seen, [CREDENTIAL], 'the password is passed on without the newline docker login may add');
  assert.equal(answer.body.access_token, answer.body.token);
  assert.equal(answer.body.expires_in, 300);
  assert.equal(answer.body.issued_at, NOW.toISOString());
  const { header, payload, certificate } = await claimsOf(answer.body.token);
  assert.equal(header.alg, 'ES256');
  assert.equal(certificate.toString(), new X509Certificate(signingKey.certificatePem).toString());
  assert.equal(payload.iss, ISSUER);
  assert.equal(payload.aud, SERVICE, 'aud is a single string: distribution 2.8 cannot read a list');
  assert.equal(payload.sub, 'deployment:d1');
  assert.equal(payload.iat, NOW.getTime() / 1000);
  assert.equal(payload.nbf, NOW.getTime() / 1000);
  assert.equal(payload.exp, NOW.getTime() / 1000 + 300);
  assert.equal(typeof payload.jti, 'string');
  assert.deepEqual(payload.access, [{ type: 'repository', name: 'berth/a', actions: ['pull', 'push'] }]);
});

test('the login probe (no scope) gets a token with empty access; each token has its own id', async () => {
  const { handle } = endpoint({ subject: 's', repositories: { 'berth/a': ['pull'] } });
  const first = await handle({ authorization: basic(CREDENTIAL), service: SERVICE });
  const second = await handle({ authorization: basic(CREDENTIAL, 'anyone'), service: SERVICE, scope: 'repository:berth/x:pull' });
  assert.ok(first.status === 200 && second.status === 200);
  const a = await claimsOf(first.body.token);
  const b = await claimsOf(second.body.token);
  assert.deepEqual(a.payload.access, []);
  assert.deepEqual(b.payload.access, []);
  assert.notEqual(a.payload.jti, b.payload.jti);
});

test('a registry token never outlives its credential', async () => {
  const expiresAt = new Date(NOW.getTime() + 42_000);
  const { handle } = endpoint({ subject: 's', repositories: {}, expiresAt });
  const answer = await handle({ authorization: basic(CREDENTIAL), service: SERVICE });
  assert.equal(answer.status, 200);
  if (answer.status !== 200) return;
  assert.equal(answer.body.expires_in, 42);
  assert.equal((await claimsOf(answer.body.token)).payload.exp, expiresAt.getTime() / 1000);
});

test('missing, malformed or unknown credentials get 401 with a Docker-style error that never echoes them', async () => {
  const { handle } = endpoint({ subject: 's', repositories: { 'berth/a': ['pull'] } });
  const wrong = `wrong-${randomBytes(8).toString('hex')}`;
  const cases: (string | undefined)[] = [undefined, 'Bearer x', 'Basic !!!', basic(''), `Basic ${Buffer.from(wrong).toString('base64')}`, basic(wrong)];
  for (const authorization of cases) {
    const answer = await handle({ authorization, service: SERVICE, scope: 'repository:berth/a:pull' });
    assert.equal(answer.status, 401, String(authorization));
    assert.equal(answer.headers['WWW-Authenticate'], `Basic realm="${SERVICE}"`);
    const text = JSON.stringify(answer);
    assert.doesNotMatch(text, new RegExp(wrong));
    assert.doesNotMatch(text, /eyJ/);
    if (answer.status === 401) assert.equal(answer.body.errors[0]?.code, 'UNAUTHORIZED');
  }
});

test('a credential that has expired by the time it is checked is refused', async () => {
  const { handle } = endpoint({ subject: 's', repositories: {}, expiresAt: NOW });
  assert.equal((await handle({ authorization: basic(CREDENTIAL), service: SERVICE })).status, 401);
});

test('another service or a malformed scope is a 400 naming the problem, before the credential is looked at', async () => {
  const { handle, seen } = endpoint({ subject: 's', repositories: {} });
  const other = await handle({ authorization: basic(CREDENTIAL), service: 'other', scope: 'repository:berth/a:pull' });
  assert.equal(other.status, 400);
  assert.match(JSON.stringify(other.body), /issues tokens for the registry service \\"berth-registry\\" only/);
  const malformed = await handle({ authorization: basic(CREDENTIAL), service: SERVICE, scope: 'repository:berth/a' });
  assert.equal(malformed.status, 400);
  assert.match(JSON.stringify(malformed.body), /malformed scope/);
  assert.deepEqual(seen, []);
});

test('with Berth credentials: a push token for one repository is honoured for it only', async () => {
  const secret = deriveCredentialSecret(randomBytes(32));
  const handle = createTokenEndpoint({ signingKey, issuer: ISSUER, service: SERVICE, verifyCredential: credentialVerifier(secret) });
  const { credential } = await mintPushCredential(secret, { subject: 'deployment:d1', repository: 'berth/d1/*' });
  const answer = await handle({
    authorization: basic(credential),
    service: SERVICE,
    scope: 'repository:berth/d1/agent:push,pull repository:berth/d2/agent:push,pull',
  });
  assert.equal(answer.status, 200);
  if (answer.status !== 200) return;
  const { payload } = await jwtVerify(answer.body.token, await importX509(signingKey.certificatePem, 'ES256'));
  assert.deepEqual(payload.access, [{ type: 'repository', name: 'berth/d1/agent', actions: ['pull', 'push'] }]);
});

test('basicPassword reads the password part only', () => {
  assert.equal(basicPassword(basic('p:with:colons')), 'p:with:colons');
  assert.equal(basicPassword(`basic ${Buffer.from('u:p').toString('base64')}`), 'p');
  assert.equal(basicPassword(`Basic ${Buffer.from('no-colon').toString('base64')}`), null);
  assert.equal(basicPassword(undefined), null);
});
