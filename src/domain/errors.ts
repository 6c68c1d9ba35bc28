/**
 * The closed list of failures a use case can report on purpose. `http/errors.ts` is the
 * one place that turns them into statuses and FastAPI-style bodies; anything thrown that
 * is not one of these is a bug and answers 500 without details.
 */
export type ErrorKind = 'bad_request' | 'unauthorized' | 'forbidden' | 'not_found' | 'conflict' | 'invalid';

export interface FieldIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
}

export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly issues: FieldIssue[] = [],
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const badRequest = (message: string) => new DomainError('bad_request', message);
export const unauthorized = (message: string) => new DomainError('unauthorized', message);
export const forbidden = (message: string) => new DomainError('forbidden', message);
export const notFound = (message: string) => new DomainError('not_found', message);
export const conflict = (message: string) => new DomainError('conflict', message);
/** A field-level rule that the route schema cannot express; answers 422 like schema errors. */
export const invalidField = (issue: FieldIssue) => new DomainError('invalid', issue.msg, [issue]);

export const deploymentNotFound = (id: string) => notFound(`Deployment ID ${id} not found.`);
export const revisionNotFound = (id: string) => notFound(`Revision ID ${id} not found.`);
export const listenerNotFound = (id: string) => notFound(`Listener ID ${id} not found.`);
