import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, type ErrorKind, type FieldIssue } from '../domain/errors.js';
import { partOf, toFieldIssues } from './validation.js';

const STATUS_BY_KIND: Record<ErrorKind, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  invalid: 422,
};

/** A malformed JSON body, raised by our content-type parser and answered as FastAPI does. */
export class JsonBodyError extends Error {
  constructor(
    readonly position: number,
    readonly reason: string,
  ) {
    super('JSON decode error');
  }
}

/**
 * The one place where failures become HTTP answers. Every body is FastAPI-shaped:
 * `{"detail": "<text>"}`, or for 422 `{"detail": [{type, loc, msg, input}]}`.
 * Unexpected errors answer 500 with a fixed text; their details go to the log only.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | DomainError | JsonBodyError, request, reply) => {
    if (error instanceof DomainError) {
      const status = STATUS_BY_KIND[error.kind];
      return status === 422 ? sendIssues(reply, error.issues) : reply.code(status).send({ detail: error.message });
    }
    if (error instanceof JsonBodyError) {
      return sendIssues(reply, [
        { type: 'json_invalid', loc: ['body', error.position], msg: 'JSON decode error', input: {}, ctx: { error: error.reason } } as FieldIssue,
      ]);
    }
    if (error.validation) {
      const part = partOf(error.validationContext);
      return sendIssues(reply, toFieldIssues(error.validation as never, part, dataFor(request, part)));
    }
    const status = error.statusCode ?? 500;
    if (status >= 500) {
      request.log.error({ err: error }, 'request failed');
      return reply.code(500).send({ detail: 'Internal Server Error' });
    }
    return reply.code(status).send({ detail: clientMessage(error, status) });
  });

  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ detail: 'Not Found' }));
}

function sendIssues(reply: FastifyReply, issues: FieldIssue[]) {
  return reply.code(422).send({ detail: issues });
}

function dataFor(request: FastifyRequest, part: ReturnType<typeof partOf>): unknown {
  switch (part) {
    case 'query':
      return request.query;
    case 'path':
      return request.params;
    case 'header':
      return request.headers;
    default:
      return request.body;
  }
}

/** Framework errors below 500 (oversize body, wrong media type, …) in plain words. */
function clientMessage(error: FastifyError, status: number): string {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'Request body is too large.';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return `Unsupported media type; send 'Content-Type: application/json'.`;
    default:
      return status === 404 ? 'Not Found' : error.message;
  }
}
