import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

/**
 * The password of a deployment's database role or Redis user: an HMAC of the deployment
 * id under a key of Berth's (give it one derived for this purpose, see
 * security/derived-keys.ts). 256 bits, never stored, and the same on every call, so
 * provisioning again (a redeploy, a retry, two workers at once) returns a URI that works
 * without cutting off the container that uses the previous one.
 */
export function deploymentPassword(key: Buffer, service: 'postgres' | 'redis', deploymentId: string): string {
  if (key.length < 32) throw new Error('the password key must be at least 32 bytes');
  return createHmac('sha256', key).update(`${service}\0${deploymentId}`, 'utf8').digest('base64url');
}

/**
 * A SCRAM-SHA-256 verifier (RFC 5802 / 7677, the form PostgreSQL stores), so CREATE/ALTER
 * ROLE never carries the password itself: statement logs and pg_stat_activity see only
 * the verifier. The password must be ASCII (SASLprep then leaves it unchanged), which
 * deploymentPassword guarantees.
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
