import { createPrivateKey, createPublicKey, type KeyObject, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { chmod, link, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** JWS algorithms Debian's docker-registry (distribution 2.8, libtrust) verifies, by key type. */
export type RegistrySigningAlgorithm = 'ES256' | 'ES384' | 'ES512' | 'RS256';

/**
 * The key that signs registry tokens and its self-signed certificate. The registry trusts the
 * certificate through `auth.token.rootcertbundle`; each token carries it in its `x5c` header.
 */
export interface RegistrySigningKey {
  privateKey: KeyObject;
  algorithm: RegistrySigningAlgorithm;
  certificatePem: string;
  /** The `x5c` header value: the certificate's DER in standard base64. */
  x5c: string[];
  notAfter: Date;
}

/** File in the key directory holding the private key and the certificate (mode 0600). */
export const SIGNING_KEY_FILE = 'registry-token-signing.pem';

const CERTIFICATE_YEARS = 10;
// Tolerates a registry whose clock runs behind Berth's when the certificate is brand new.
const BACKDATE_MS = 60 * 60 * 1000;
const GENERATED_CURVE = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export class SigningKeyError extends Error {}

/**
 * Loads the token signing key from `directory`, generating it on first use. Several processes
 * starting at once on one directory end up with the same key: the file appears atomically
 * (hard link of a finished temporary file), and the loser of the race reads the winner's.
 */
export async function loadOrCreateSigningKey(directory: string, now: Date = new Date()): Promise<RegistrySigningKey> {
  const file = path.join(directory, SIGNING_KEY_FILE);
  const existing = await readIfPresent(file);
  if (existing !== null) return fromFile(existing, file, now);

  await mkdir(directory, { recursive: true, mode: 0o700 });
  const generated = await generateKeyFile(now);
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, generated, { mode: 0o600, flag: 'wx' });
    await link(temporary, file).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
  } finally {
    await rm(temporary, { force: true });
  }
  return fromFile(await readFile(file, 'utf8'), file, now);
}

/** A key configured by the operator (PEM text), e.g. one shared by every replica. */
export function signingKeyFromPem(privateKeyPem: string, certificatePem: string, now: Date = new Date()): RegistrySigningKey {
  return assemble(privateKeyPem, certificatePem, 'the configured registry token key', now);
}

/**
 * Writes the certificate bundle the registry's `auth.token.rootcertbundle` points at. It holds
 * only public certificates, so it is world-readable (the registry usually runs as its own user);
 * it is replaced atomically so a registry restarting meanwhile never reads half a file. Several
 * keys may be trusted at once: the old and new key while rotating, or one key per replica.
 */
export async function writeCertificateBundle(keys: RegistrySigningKey | readonly RegistrySigningKey[], file: string): Promise<void> {
  const certificates = (Array.isArray(keys) ? keys : [keys]) as readonly RegistrySigningKey[];
  if (certificates.length === 0) throw new SigningKeyError('a certificate bundle needs at least one certificate');
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, certificates.map((key) => key.certificatePem).join(''), { mode: 0o644 });
    await chmod(temporary, 0o644); // the umask may have narrowed the mode given to writeFile
    await rename(temporary, file);
  } finally {
    await rm(temporary, { force: true });
  }
}

async function readIfPresent(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function fromFile(text: string, file: string, now: Date): RegistrySigningKey {
  const privateKeyPem = pemBlocks(text, 'PRIVATE KEY')[0];
  const certificatePem = pemBlocks(text, 'CERTIFICATE')[0];
  if (!privateKeyPem || !certificatePem) {
    throw new SigningKeyError(`${file} must hold a PRIVATE KEY and a CERTIFICATE block; delete it to generate a new key`);
  }
  return assemble(privateKeyPem, certificatePem, file, now);
}

function pemBlocks(text: string, label: string): string[] {
  const pattern = new RegExp(`-----BEGIN ${label}-----[\\s\\S]+?-----END ${label}-----`, 'g');
  return [...text.matchAll(pattern)].map((match) => `${match[0]}\n`);
}

function assemble(privateKeyPem: string, certificatePem: string, source: string, now: Date): RegistrySigningKey {
  let privateKey: KeyObject;
  let certificate: X509Certificate;
  try {
    privateKey = createPrivateKey(privateKeyPem);
    certificate = new X509Certificate(certificatePem);
  } catch {
    // The parser's message could quote key material; say only where the problem is.
    throw new SigningKeyError(`${source}: the private key or certificate is not valid PEM`);
  }
  const algorithm = algorithmFor(privateKey, source);
  const publicKeyDer = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  if (!publicKeyDer.equals(certificate.publicKey.export({ type: 'spki', format: 'der' }))) {
    throw new SigningKeyError(`${source}: the certificate does not belong to the private key`);
  }
  const notAfter = new Date(certificate.validTo);
  if (notAfter <= now) {
    // The registry checks the certificate's validity on every token, so an expired one locks everyone out.
    throw new SigningKeyError(
      `${source}: the registry token certificate expired on ${notAfter.toISOString()}; replace it (a generated one is replaced by deleting its file) and point the registry's rootcertbundle at the new certificate`,
    );
  }
  return {
    privateKey,
    algorithm,
    certificatePem: certificate.toString(),
    x5c: [certificate.raw.toString('base64')],
    notAfter,
  };
}

function algorithmFor(key: KeyObject, source: string): RegistrySigningAlgorithm {
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  if (key.asymmetricKeyType === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1') return 'ES256';
    if (curve === 'secp384r1') return 'ES384';
    if (curve === 'secp521r1') return 'ES512';
  }
  throw new SigningKeyError(`${source}: docker-registry verifies EC (P-256, P-384, P-521) or RSA token keys only`);
}

async function generateKeyFile(now: Date): Promise<string> {
  // Imported only when a key is made (reading one needs node:crypto alone): with tsyringe and the ASN.1
  // schemas they are some 250 modules that every start of Berth would otherwise load.
  await import('reflect-metadata'); // @peculiar/x509 resolves its ASN.1 handlers through tsyringe, which needs it first
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
  const keys = (await webcrypto.subtle.generateKey(GENERATED_CURVE, true, ['sign', 'verify'])) as CryptoKeyPair;
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f; // a positive serial: Go's x509 parser rejects negative ones
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial.toString('hex'),
    name: 'CN=Berth registry token issuer',
    notBefore: new Date(now.getTime() - BACKDATE_MS),
    notAfter: new Date(Date.UTC(now.getUTCFullYear() + CERTIFICATE_YEARS, now.getUTCMonth(), now.getUTCDate())),
    signingAlgorithm: GENERATED_CURVE,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const privateKeyPem = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }).export({ type: 'pkcs8', format: 'pem' });
  return `${privateKeyPem}${certificate.toString('pem')}\n`;
}
