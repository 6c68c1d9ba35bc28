import type { Socket } from 'node:net';
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
    try {
      return answer(error, request, reply);
    } catch (failure) {
      // The handler itself must never fail over to Fastify's own error format.
      request.log.error({ err: failure }, 'error handler failed');
      return reply.code(500).send({ detail: 'Internal Server Error' });
    }
  });

  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ detail: 'Not Found' }));
}

function answer(error: FastifyError | DomainError | JsonBodyError, request: FastifyRequest, reply: FastifyReply) {
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
}

/**
 * Errors Fastify raises before routing (a malformed `%` escape, an over-long path
 * parameter), answered in the API's form.
 */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  const detail =
    error.code === 'FST_ERR_BAD_URL'
      ? 'Malformed URL: the path has an invalid percent-encoding.'
      : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? 'A path parameter is too long.'
        : 'Bad request.';
  return reply.code(error.statusCode && error.statusCode < 500 ? error.statusCode : 400).send({ detail });
}

const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'The request was not received in time.'],
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'The request headers (or the URL) are too large.'],
};

/**
 * Errors Node raises on the connection itself (a request not sent in time, headers too
 * large, unparsable HTTP), answered in the API's form before the connection closes.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, detail] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'Bad Request', 'Malformed HTTP request.'];
  const body = JSON.stringify({ detail });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
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
