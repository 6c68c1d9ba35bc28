/** A maintenance command that cannot go on: the message says what failed and what to do. */
export class OperationError extends Error {}
