import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_BY_CODE } from '../contract/errors.js';
import { DomainError, type ErrorCode, type FieldIssue } from '../domain/errors.js';
import { boundedIssues } from './echo.js';
import { partOf, toFieldIssues } from './validation.js';

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
 * A failure of the database itself (`databaseUnavailable`: lost, unreachable, busy) answers
 * 503 `database_unavailable` with `Retry-After`, since trying again shortly may succeed.
 * Other unexpected errors answer 500 with a fixed text; their details go to the log only.
 */
export function installErrorHandling(app: FastifyInstance, databaseUnavailable: (error: unknown) => boolean): void {
  app.setErrorHandler((error: FastifyError | DomainError | JsonBodyError, request, reply) => {
    try {
      if (!(error instanceof DomainError) && databaseUnavailable(error)) {
        request.log.warn({ err: error }, 'request failed: the database is unavailable');
        reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
        return send(
          reply,
          'database_unavailable',
          `The database is unavailable (its connection was lost, or it is restarting or busy). Retry in ${DATABASE_RETRY_AFTER_SECONDS} s.`,
        );
      }
      return answer(error, request, reply);
    } catch (failure) {
      // The handler itself must never fail over to Fastify's own error format.
      request.log.error({ err: failure }, 'error handler failed');
      return send(reply, 'internal_error', 'Internal Server Error');
    }
  });

  app.setNotFoundHandler((_request, reply) => send(reply, 'route_not_found', 'Not Found'));
}

const DATABASE_RETRY_AFTER_SECONDS = 1;

function answer(error: FastifyError | DomainError | JsonBodyError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof DomainError) {
    if (error.code === 'validation_error') return sendIssues(reply, error.issues);
    // Load shed on purpose (an answer with Retry-After) is no failure to log: a flood would fill the log.
    if (STATUS_BY_CODE[error.code] >= 500 && error.retryAfterSeconds === undefined) request.log.error({ err: error }, 'request failed');
    if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
    return send(reply, error.code, error.message);
  }
  if (error instanceof JsonBodyError) {
    return sendIssues(reply, [{ type: 'json_invalid', loc: ['body', error.position], msg: 'JSON decode error', input: {}, ctx: { error: error.reason } }]);
  }
  if (error.validation) {
    const part = partOf(error.validationContext);
    return sendIssues(reply, toFieldIssues(error.validation as never, part, dataFor(request, part)));
  }
  const status = error.statusCode ?? 500;
  if (status >= 500) {
    request.log.error({ err: error }, 'request failed');
    return send(reply, 'internal_error', 'Internal Server Error');
  }
  const code = codeOfFrameworkError(error, status);
  return send(reply, code, clientMessage(error, code));
}

/** Every error answer: `{detail, code}` with the code's status. */
export function send(reply: FastifyReply, code: ErrorCode, detail: string) {
  return reply.code(STATUS_BY_CODE[code]).send({ detail, code });
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
  return send(reply, 'malformed_request', detail);
}

const CLIENT_ERRORS: Record<string, [ErrorCode, string, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: ['request_timeout', 'Request Timeout', 'The request was not received in time.'],
  HPE_HEADER_OVERFLOW: ['headers_too_large', 'Request Header Fields Too Large', 'The request headers (or the URL) are too large.'],
};

/**
 * Errors Node raises on the connection itself (a request not sent in time, headers too
 * large, unparsable HTTP), answered in the API's form before the connection closes.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [code, reason, detail] = CLIENT_ERRORS[error.code ?? ''] ?? ['malformed_request', 'Bad Request', 'Malformed HTTP request.'];
  const status = STATUS_BY_CODE[code];
  const body = JSON.stringify({ detail, code });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

function sendIssues(reply: FastifyReply, issues: FieldIssue[]) {
  return reply.code(STATUS_BY_CODE.validation_error).send({ detail: boundedIssues(issues), code: 'validation_error' });
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

const CODE_BY_STATUS: Partial<Record<number, ErrorCode>> = {
  404: 'route_not_found',
  408: 'request_timeout',
  413: 'body_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  431: 'headers_too_large',
};

/** Fastify's own client errors by status; the rest are plain bad requests. */
function codeOfFrameworkError(error: FastifyError, status: number): ErrorCode {
  return CODE_BY_STATUS[status] ?? 'bad_request';
}

/** Framework errors below 500 (oversize body, wrong media type, …) in plain words. */
function clientMessage(error: FastifyError, code: ErrorCode): string {
  switch (code) {
    case 'body_too_large':
      return 'Request body is too large.';
    case 'unsupported_media_type':
      return `Unsupported media type; send 'Content-Type: application/json'.`;
    case 'route_not_found':
      return 'Not Found';
    default:
      return error.message;
  }
}
