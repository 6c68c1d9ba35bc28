import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';

/** 204 with an empty body; clients treat an empty body as "no content". */
export function noContent(reply: FastifyReply) {
  return (reply as FastifyReply).code(204).send();
}

export const NoContent = Type.Null({ description: 'No content' });
