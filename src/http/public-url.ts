import type { FastifyRequest } from 'fastify';
import { SELF_HOSTED_PREFIX } from './prefix.js';

/**
 * Berth's address as its clients reach it, for links it hands out (webhook and upload
 * URLs): BERTH_PUBLIC_URL when set, else the scheme and host of the request. A request
 * that came in under `/api-host` gets links under it too, so they work through the same
 * proxy path.
 */
export function publicBaseUrl(request: FastifyRequest, configured: string | undefined): string {
  const prefix = request.url.startsWith(`${SELF_HOSTED_PREFIX}/`) ? SELF_HOSTED_PREFIX : '';
  const origin = configured ? configured.replace(/\/+$/, '') : `${request.protocol}://${request.host}`;
  return `${origin}${prefix}`;
}
