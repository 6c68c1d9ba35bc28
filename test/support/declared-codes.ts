import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { resolved } from './openapi.js';

/**
 * Every error answer a test receives from Berth carries a code its route declares in the
 * OpenAPI document (`x-error-codes` under that status, or the validation error of a 422), so
 * a code a route can answer but does not declare fails whichever test meets it.
 */

/**
 * Answered before a route's handler could declare anything: the request's framing (its JSON,
 * its size, its media type, its headers, how fast it came), checked by the server for every
 * route alike (http/errors.ts maps them).
 */
const FRAMING_CODES = new Set(['malformed_request', 'bad_request', 'body_too_large', 'unsupported_media_type', 'request_timeout', 'headers_too_large']);

interface DeclaredOperation {
  method: string;
  path: RegExp;
  codes: Map<number, Set<string>>;
}

/**
 * The document every server of this checkout serves, as `npm run generate:client` wrote it
 * (test/client/generated.test.ts keeps the two equal). Read from the file rather than asked of
 * the server: a request of the check's own would spend the client's rate-limit budget, which
 * the abuse tests count to the request.
 */
const DOCUMENT = path.resolve(import.meta.dirname, '../../src/client/openapi.json');
let operations: Promise<DeclaredOperation[] | null> | undefined;

/** Why the answer breaks the contract, or null when it keeps it (or is not Berth's to judge). */
export async function undeclaredAnswer(method: string, url: string, status: number, body: unknown): Promise<string | null> {
  const code = (body as { code?: unknown } | null)?.code;
  if (status < 400 || typeof code !== 'string' || FRAMING_CODES.has(code)) return null;
  operations ??= declaredOperations();
  const path = new URL(url, 'http://berth').pathname.replace(/^\/api-host(?=\/)/, '');
  const operation = (await operations)?.find((candidate) => candidate.method === method.toLowerCase() && candidate.path.test(path));
  // No route answered (route_not_found), or a server that is not Berth.
  if (!operation) return null;
  if (operation.codes.get(status)?.has(code)) return null;
  return `${method} ${path} answered ${status} ${code}, which its operation does not declare (declared: ${JSON.stringify(Object.fromEntries([...operation.codes].map(([s, c]) => [s, [...c]])))})`;
}

async function declaredOperations(): Promise<DeclaredOperation[] | null> {
  try {
    const doc = JSON.parse(await readFile(DOCUMENT, 'utf8')) as { paths?: Record<string, Record<string, { responses?: Record<string, unknown> }>> };
    if (!doc.paths) return null;
    return Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => ({
        method,
        path: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}$`),
        codes: new Map(Object.entries(operation.responses ?? {}).map(([status, response]) => [Number(status), new Set(codesOf(doc, response))])),
      })),
    );
  } catch {
    return null;
  }
}

/** The codes a documented answer can carry: its `x-error-codes`, else the code enums of its schema (a 422's validation error among them). */
function codesOf(doc: unknown, response: any): string[] {
  if (Array.isArray(response?.['x-error-codes'])) return response['x-error-codes'];
  const walk = (schema: any): string[] => {
    const target = resolved(doc, schema);
    if (!target || typeof target !== 'object') return [];
    if (target.title === 'HTTPValidationError') return ['validation_error'];
    const own = resolved(doc, target.properties?.code)?.enum ?? [];
    return [...own, ...[...(target.anyOf ?? []), ...(target.oneOf ?? [])].flatMap(walk)];
  };
  return walk(response?.content?.['application/json']?.schema);
}
