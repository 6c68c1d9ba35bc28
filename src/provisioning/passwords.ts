import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

/**
 * A new password for a deployment's database role or Redis user: 256 random bits. It is
 * kept only inside the URI handed to the deployment, which Berth stores encrypted
 * (deployment_resources.uri_encrypted), so provisioning again after a crash reuses it
 * and a rotated encryption key never changes it.
 */
export function newPassword(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * A name that says nothing about the deployment it belongs to (96 random bits, lower-case
 * hex): other tenants of the same server can list role, database and user names, so
 * those names must not carry deployment names or ids.
 */
export function opaqueName(prefix: string): string {
  return `${prefix}${randomBytes(12).toString('hex')}`;
}

/**
 * A SCRAM-SHA-256 verifier (RFC 5802 / 7677, the form PostgreSQL stores), so CREATE/ALTER
 * ROLE never carries the password itself: statement logs and pg_stat_activity see only
 * the verifier. The password must be ASCII (SASLprep then leaves it unchanged), which
 * newPassword guarantees.
 */
export function scramSha256Verifier(password: string, iterations = 4096): string {
  if (!/^[\x21-\x7e]+$/.test(password)) throw new Error('the password must be printable ASCII');
  const salt = randomBytes(16);
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/** The `#<hex>` form Redis ACL SETUSER takes, so the password itself is never sent. */
export function redisPasswordHash(password: string): string {
  return createHash('sha256').update(password, 'utf8').digest('hex');
}
