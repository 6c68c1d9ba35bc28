import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { loadOrCreateSigningKey, SIGNING_KEY_FILE, SigningKeyError, signingKeyFromPem, writeCertificateBundle } from '../../src/registry/signing-key.js';

const run = promisify(execFile);
let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'berth-signing-key-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('the key is generated once, kept in a 0600 file and loaded the same afterwards', async () => {
  const keyDir = path.join(dir, 'once');
  const first = await loadOrCreateSigningKey(keyDir);
  const file = path.join(keyDir, SIGNING_KEY_FILE);
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  assert.equal((await stat(keyDir)).mode & 0o777, 0o700);
  const again = await loadOrCreateSigningKey(keyDir);
  assert.equal(again.certificatePem, first.certificatePem);
  assert.deepEqual(again.x5c, first.x5c);
  assert.equal(first.algorithm, 'ES256');
});

test('processes racing to create the key all end up with one key', async () => {
  const keyDir = path.join(dir, 'race');
  const keys = await Promise.all(Array.from({ length: 6 }, () => loadOrCreateSigningKey(keyDir)));
  assert.equal(new Set(keys.map((key) => key.certificatePem)).size, 1);
});

test('the certificate is a self-signed CA for the key, valid now, that openssl verifies', async () => {
  const key = await loadOrCreateSigningKey(path.join(dir, 'cert'));
  const certificate = new X509Certificate(key.certificatePem);
  assert.ok(certificate.ca);
  assert.ok(certificate.checkIssued(certificate));
  assert.ok(certificate.verify(certificate.publicKey));
  assert.ok(new Date(certificate.validFrom) < new Date() && key.notAfter > new Date(Date.now() + 9 * 365 * 86400_000));
  assert.equal(Buffer.from(key.x5c[0] ?? '', 'base64').toString('base64'), certificate.raw.toString('base64'));
  const bundle = path.join(dir, 'cert-bundle.pem');
  await writeCertificateBundle(key, bundle);
  const { stdout } = await run('openssl', ['verify', '-CAfile', bundle, bundle]);
  assert.match(stdout, /OK/);
});

test('the bundle holds only the certificate and is readable by the registry user', async () => {
  const key = await loadOrCreateSigningKey(path.join(dir, 'bundle'));
  const bundle = path.join(dir, 'etc', 'registry', 'berth-token.pem');
  await writeCertificateBundle(key, bundle);
  const text = await readFile(bundle, 'utf8');
  assert.equal(text, key.certificatePem);
  assert.doesNotMatch(text, /PRIVATE KEY/);
  assert.equal((await stat(bundle)).mode & 0o777, 0o644);
});

test("configured PEMs: an EC key loads; another key's certificate and Ed25519 keys are refused", async () => {
  const ec = await loadOrCreateSigningKey(path.join(dir, 'configured'));
  const pem = ec.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  assert.equal(signingKeyFromPem(pem, ec.certificatePem).algorithm, 'ES256');
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  assert.throws(() => signingKeyFromPem(rsa, ec.certificatePem), /does not belong to the private key/);
  assert.throws(() => signingKeyFromPem('garbage', ec.certificatePem), SigningKeyError);
  const ed = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  assert.throws(() => signingKeyFromPem(ed, ec.certificatePem), /EC \(P-256, P-384, P-521\) or RSA token keys only/);
});

test('an expired certificate is refused with what to do, not used until the registry rejects every token', async () => {
  const keyDir = path.join(dir, 'expired');
  const key = await loadOrCreateSigningKey(keyDir);
  await assert.rejects(loadOrCreateSigningKey(keyDir, new Date(key.notAfter.getTime() + 1000)), /expired on .*replace it/);
});

test('a damaged key file is refused with its path, never with its content', async () => {
  const keyDir = path.join(dir, 'damaged');
  await loadOrCreateSigningKey(keyDir);
  const file = path.join(keyDir, SIGNING_KEY_FILE);
  const text = await readFile(file, 'utf8');
  await writeFile(file, text.replace(/-----BEGIN CERTIFICATE-----[\s\S]*$/, ''));
  await assert.rejects(loadOrCreateSigningKey(keyDir), (error: Error) => {
    assert.ok(error instanceof SigningKeyError);
    assert.ok(error.message.includes(file));
    assert.doesNotMatch(error.message, /BEGIN/);
    return true;
  });
});
