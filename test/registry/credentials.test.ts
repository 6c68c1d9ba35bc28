import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import {
  credentialVerifier,
  deriveCredentialSecret,
  mintPullCredential,
  mintPushCredential,
  mintRegistryCredential,
  verifyRegistryCredential,
} from '../../src/registry/credentials.js';

const secret = deriveCredentialSecret(randomBytes(32));
const HOUR = 3600 * 1000;

test('a push credential grants push and pull on its repository for an hour by default', async () => {
  const now = new Date('2030-01-01T00:00:00Z');
  const issued = await mintPushCredential(secret, { subject: 'deployment:d1', repository: 'berth/d1/*', now });
  assert.equal(issued.expiresAt.getTime(), now.getTime() + HOUR);
  const access = await verifyRegistryCredential(secret, issued.credential, new Date(now.getTime() + HOUR - 1000));
  assert.deepEqual(access, { subject: 'deployment:d1', repositories: { 'berth/d1/*': ['push', 'pull'] }, expiresAt: issued.expiresAt });
});

test('a pull credential grants pull only, and the lifetime is configurable', async () => {
  const now = new Date();
  const issued = await mintPullCredential(secret, { subject: 'berth-engine', repository: 'berth/a', ttlSeconds: 60, now });
  assert.equal(issued.expiresAt.getTime(), Math.floor(now.getTime() / 1000) * 1000 + 60_000);
  const access = await credentialVerifier(secret)(issued.credential);
  assert.deepEqual(access?.repositories, { 'berth/a': ['pull'] });
});

test('an expired credential is refused', async () => {
  const issued = await mintPushCredential(secret, { subject: 's', repository: 'berth/a', ttlSeconds: 60, now: new Date(Date.now() - 2 * HOUR) });
  assert.equal(await verifyRegistryCredential(secret, issued.credential), null);
});

test('a tampered credential is refused: changed claims, changed signature, or another secret', async () => {
  const { credential } = await mintPushCredential(secret, { subject: 's', repository: 'berth/a' });
  const [header, payload, signature] = credential.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  claims.repositories = { 'berth/*': ['*'] };
  const widened = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
  assert.equal(await verifyRegistryCredential(secret, widened), null);
  const flipped = `${header}.${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
  assert.equal(await verifyRegistryCredential(secret, flipped), null);
  assert.equal(await verifyRegistryCredential(deriveCredentialSecret(randomBytes(32)), credential), null);
  assert.equal(await verifyRegistryCredential(secret, 'not-a-token'), null);
  assert.equal(await verifyRegistryCredential(secret, ''), null);
});

test('the credential secret is derived from the master key, the same on every replica', () => {
  const master = randomBytes(32);
  assert.deepEqual(deriveCredentialSecret(master), deriveCredentialSecret(Buffer.from(master)));
  assert.notDeepEqual(deriveCredentialSecret(master), new Uint8Array(master));
  assert.throws(() => deriveCredentialSecret(randomBytes(16)), RangeError);
});

test('minting refuses grants the registry could not name and unknown actions', async () => {
  await assert.rejects(mintRegistryCredential(secret, { subject: 's', repositories: { 'Berth/A': ['pull'] } }), RangeError);
  await assert.rejects(mintRegistryCredential(secret, { subject: 's', repositories: { 'berth/a': ['admin' as 'pull'] } }), RangeError);
  await assert.rejects(mintPushCredential(secret, { subject: 's', repository: 'berth/a', ttlSeconds: 0 }), RangeError);
  await assert.rejects(mintPushCredential(secret, { subject: '', repository: 'berth/a' }), RangeError);
});
