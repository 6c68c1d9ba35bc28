import type { FastifyReply, FastifyRequest } from 'fastify';
import { entityTag, ifNoneMatchMatches } from '../domain/entity-tags.js';

/**
 * Answers a GET with its `ETag`, or 304 without a body when `If-None-Match` names it. The
 * route returns what this returns.
 */
export function tagged<T>(request: FastifyRequest, reply: FastifyReply, representation: T, tag = entityTag(representation)): T | FastifyReply {
  reply.header('etag', tag);
  const ifNoneMatch = request.headers['if-none-match'];
  if (typeof ifNoneMatch === 'string' && ifNoneMatchMatches(ifNoneMatch, tag)) return reply.code(304).send();
  return representation;
}

/** The `If-Match` a PATCH or DELETE carries, for its service to check in its transaction. */
export function ifMatchOf(request: FastifyRequest): string | undefined {
  const header = request.headers['if-match'];
  return typeof header === 'string' ? header : undefined;
}
