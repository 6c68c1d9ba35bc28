import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { deriveKey } from '../../src/security/derived-keys.js';
import { TokenError, type TokenFailure, TokenSigner } from '../../src/security/signed-tokens.js';

const signer = new TokenSigner(randomBytes(32));
const NOW = Date.UTC(2030, 0, 1);

function failure(run: () => unknown): TokenFailure {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof TokenError, `expected a TokenError, got ${String(error)}`);
    return error.reason;
  }
  assert.fail('the token was accepted');
}

describe('signed tokens', () => {
  const { token, claims } = signer.sign({ purpose: 'upload', ttlSeconds: 900, bound: { deployment: 'd1', objectPath: 'p' }, now: NOW });

  it('verify returns the claims of a token it signed, with its bound fields', () => {
    const verified = signer.verify(token, { purpose: 'upload', bound: { deployment: 'd1' }, now: NOW + 1000 });
    assert.deepEqual(verified, claims);
    assert.equal(verified.bound.objectPath, 'p');
    assert.equal(verified.exp, NOW / 1000 + 900);
  });

  it('tokens are URL-safe and unique', () => {
    const other = signer.sign({ purpose: 'upload', ttlSeconds: 900, now: NOW });
    assert.match(token, /^[A-Za-z0-9._-]+$/);
    assert.notEqual(other.claims.jti, claims.jti);
  });

  it('refuses an expired token, from the expiry second on', () => {
    assert.equal(
      failure(() => signer.verify(token, { purpose: 'upload', now: NOW + 900_000 })),
      'expired',
    );
    assert.doesNotThrow(() => signer.verify(token, { purpose: 'upload', now: NOW + 899_999 }));
  });

  it('refuses a token issued for another purpose', () => {
    assert.equal(
      failure(() => signer.verify(token, { purpose: 'download', now: NOW })),
      'wrong_purpose',
    );
  });

  it('refuses a token bound to another resource, or missing a binding', () => {
    assert.equal(
      failure(() => signer.verify(token, { purpose: 'upload', bound: { deployment: 'd2' }, now: NOW })),
      'wrong_binding',
    );
    assert.equal(
      failure(() => signer.verify(token, { purpose: 'upload', bound: { revision: 'r1' }, now: NOW })),
      'wrong_binding',
    );
  });

  it('refuses a token signed with another key', () => {
    const forged = new TokenSigner(randomBytes(32)).sign({ purpose: 'upload', ttlSeconds: 900, bound: { deployment: 'd1' }, now: NOW });
    assert.equal(
      failure(() => signer.verify(forged.token, { purpose: 'upload', now: NOW })),
      'bad_signature',
    );
  });

  it('refuses claims changed after signing', () => {
    const [version, payload, signature] = token.split('.');
    const claimsJson = JSON.parse(Buffer.from(payload as string, 'base64url').toString('utf8'));
    claimsJson.bound.deployment = 'd2';
    claimsJson.exp += 3600;
    const tampered = [version, Buffer.from(JSON.stringify(claimsJson)).toString('base64url'), signature].join('.');
    assert.equal(
      failure(() => signer.verify(tampered, { purpose: 'upload', now: NOW })),
      'bad_signature',
    );
  });

  it('reports malformed tokens as malformed', () => {
    for (const bad of ['', 'abc', 'v1.abc', 'v2.abc.def', `${token}.x`, 'v1..', 'v1.a b.c', 'v1.abc.short', 'x'.repeat(5000)]) {
      assert.equal(
        failure(() => signer.verify(bad, { purpose: 'upload', now: NOW })),
        'malformed',
        bad.slice(0, 40),
      );
    }
  });

  it('derived keys differ per label and are stable for one master key', () => {
    const master = randomBytes(32);
    assert.deepEqual(deriveKey(master, 'upload-url'), deriveKey(master, 'upload-url'));
    assert.notDeepEqual(deriveKey(master, 'upload-url'), deriveKey(master, 'postgres-passwords'));
    const a = new TokenSigner(deriveKey(master, 'upload-url'));
    const b = new TokenSigner(deriveKey(master, 'other-links'));
    const issued = a.sign({ purpose: 'upload', ttlSeconds: 60, now: NOW });
    assert.equal(
      failure(() => b.verify(issued.token, { purpose: 'upload', now: NOW })),
      'bad_signature',
    );
  });
});
