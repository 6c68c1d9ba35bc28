import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { addressLiteral, isPublicAddress } from './addresses.js';

export interface OutboundPolicy {
  /** BERTH_OUTBOUND_ALLOW_PRIVATE: loopback, link-local and private targets allowed. */
  allowPrivate: boolean;
  timeoutMs: number;
  /** Bytes of the answer kept. */
  excerptBytes: number;
}

export type PostResult = { statusCode: number; excerpt: string } | { error: string };

/** Raised by the lookup below; its message names the address, never a body. */
class RefusedAddress extends Error {}

const refusal = (host: string, address: string) =>
  `${host} resolves to ${address}, a loopback, link-local, private or otherwise non-public address; ` +
  'webhooks are not sent there unless the operator sets BERTH_OUTBOUND_ALLOW_PRIVATE=on';

/**
 * Why a URL may not receive webhooks, or null when it may: not http(s), credentials in it,
 * or a host that is, or resolves to, a refused address (every address it resolves to is
 * checked). At subscription time and again before each delivery.
 */
export async function targetRefusal(url: string, policy: Pick<OutboundPolicy, 'allowPrivate'>): Promise<string | null> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not a valid URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'only http:// and https:// URLs receive webhooks';
  if (parsed.username || parsed.password) return 'a webhook URL may not carry credentials; authenticate deliveries with the signature';
  if (policy.allowPrivate) return null;
  const literal = addressLiteral(parsed.hostname);
  if (literal) return isPublicAddress(literal) ? null : refusal(parsed.hostname, literal);
  try {
    const addresses = await resolveAll(parsed.hostname);
    const refused = addresses.find((entry) => !isPublicAddress(entry.address));
    return refused ? refusal(parsed.hostname, refused.address) : null;
  } catch (error) {
    return `${parsed.hostname} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'lookup failed'})`;
  }
}

function resolveAll(hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => dnsLookup(hostname, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))));
}

/**
 * The lookup the connection uses: it checks every address the name resolves to, so the
 * address connected to is the one checked (no window for DNS rebinding between a check and
 * the connection).
 */
function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, family: options.family, hints: options.hints }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const refused = allowPrivate ? undefined : addresses.find((entry) => !isPublicAddress(entry.address));
      if (refused) return callback(new RefusedAddress(refusal(hostname, refused.address)), '', 0);
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/**
 * POSTs a body once: no redirect is followed (a 3xx is an answer like any other), the
 * whole exchange is cut off after `timeoutMs`, and at most `excerptBytes` of the answer are
 * read before the connection is dropped. Never throws: a failure is `{ error }`.
 */
export async function postOnce(url: string, body: string, headers: Record<string, string>, policy: OutboundPolicy): Promise<PostResult> {
  const refused = await targetRefusal(url, policy);
  if (refused) return { error: refused };
  const target = new URL(url);
  const client = target.protocol === 'https:' ? https : http;
  return new Promise<PostResult>((resolve) => {
    let settled = false;
    const finish = (result: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(result);
    };
    const request = client.request(
      target,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'Berth-Webhooks', ...headers },
        lookup: guardedLookup(policy.allowPrivate),
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        const done = () => finish({ statusCode: response.statusCode ?? 0, excerpt: Buffer.concat(chunks).subarray(0, policy.excerptBytes).toString('utf8') });
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          kept += chunk.length;
          if (kept >= policy.excerptBytes) done();
        });
        response.on('end', done);
        response.on('error', done);
      },
    );
    const timer = setTimeout(() => finish({ error: `no answer within ${policy.timeoutMs / 1000} s` }), policy.timeoutMs);
    request.on('error', (error: NodeJS.ErrnoException) =>
      finish({ error: error instanceof RefusedAddress ? error.message : `${error.code ?? 'error'}: ${error.message}`.slice(0, 500) }),
    );
    request.end(body);
  });
}
