/**
 * Associated data of an idempotency key's stored request fingerprint and answer (answers can
 * hold keys shown only once): binds each ciphertext to its row and column. Written by the use
 * case, re-encrypted by key rotation.
 */
export const idempotencyFingerprintContext = (id: string) => `idempotency-key:${id}:fingerprint`;
export const idempotencyAnswerContext = (id: string) => `idempotency-key:${id}:answer`;
