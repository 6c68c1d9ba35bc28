import { idempotencyAnswerContext, idempotencyFingerprintContext } from '../security/idempotency-contexts.js';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { StoredAnswer } from '../domain/idempotency.js';
import type { Encryptor } from '../security/encryption.js';
import type { Db } from '../store/database.js';
import * as repo from '../store/repositories/idempotency-keys.js';

export interface IdempotencyOptions {
  /** BERTH_IDEMPOTENCY_KEY_HOURS, in ms: how long a key and its answer are kept. */
  ttlMs: number;
  /**
   * How long a first request holds its key before a retry may take the key over. Only a
   * process that died mid-request leaves a key held that long: a live one answers or lets go.
   */
  lockMs?: number;
}

/** What to do with a request that carries an idempotency key. */
export type Claim =
  /** Run it: this request holds the key (`id`) and stores its answer, or lets go. */
  | { kind: 'run'; id: string }
  | { kind: 'replay'; answer: StoredAnswer }
  /** The key was used for another request. */
  | { kind: 'reused' }
  /** The first request with this key has not answered yet. */
  | { kind: 'in_progress' };

const fingerprintContext = idempotencyFingerprintContext;
const answerContext = idempotencyAnswerContext;

const DEFAULT_LOCK_MS = 120_000;
const iso = (ms: number) => new Date(ms).toISOString();

export function createIdempotencyService({ db, encryptor }: { db: Db; encryptor: Encryptor }, { ttlMs, lockMs = DEFAULT_LOCK_MS }: IdempotencyOptions) {
  const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

  return {
    /**
     * Decides a keyed request: the unique (scope, key) row makes one request of several
     * concurrent ones the first; the others replay, are refused, or wait their turn.
     * `scope` is the workspace (or organization) the caller acts in, so equal keys of
     * different workspaces never meet.
     */
    async claim(scope: string, key: string, fingerprint: string): Promise<Claim> {
      // A few rounds: a row may expire or be let go between the insert and the read.
      for (let round = 0; round < 3; round += 1) {
        const now = Date.now();
        const id = randomUUID();
        const claimed = await repo.claimIdempotencyKey(db, {
          id,
          scope,
          key,
          fingerprint_encrypted: encryptor.encrypt(fingerprint, fingerprintContext(id)),
          response_encrypted: null,
          locked_until: iso(now + lockMs),
          created_at: iso(now),
          expires_at: iso(now + ttlMs),
        });
        if (claimed) return { kind: 'run', id };
        const row = await repo.findIdempotencyKey(db, scope, key);
        if (!row) continue;
        if (row.expires_at <= iso(now)) {
          await repo.removeExpiredIdempotencyKey(db, row.id, iso(now));
          continue;
        }
        if (!same(encryptor.decrypt(row.fingerprint_encrypted, fingerprintContext(row.id)), fingerprint)) return { kind: 'reused' };
        if (row.response_encrypted !== null) {
          return { kind: 'replay', answer: JSON.parse(encryptor.decrypt(row.response_encrypted, answerContext(row.id))) as StoredAnswer };
        }
        if (row.locked_until > iso(now)) return { kind: 'in_progress' };
        // Its first request died with its process: one retry takes the key over and runs.
        if (await repo.takeOverIdempotencyKey(db, row.id, row.locked_until, iso(now + lockMs))) return { kind: 'run', id: row.id };
        return { kind: 'in_progress' };
      }
      return { kind: 'in_progress' };
    },

    /** Keeps the answer of the request holding key `id`, for its retries. */
    async answer(id: string, answer: StoredAnswer): Promise<void> {
      await repo.answerIdempotencyKey(db, id, encryptor.encrypt(JSON.stringify(answer), answerContext(id)));
    },

    /** Lets go of key `id` without an answer: a retry runs again. */
    async release(id: string): Promise<void> {
      await repo.releaseIdempotencyKey(db, id);
    },

    /** Removes expired keys; the count removed. */
    async sweep(): Promise<number> {
      return repo.sweepIdempotencyKeys(db, new Date().toISOString());
    },
  };
}

export type IdempotencyService = ReturnType<typeof createIdempotencyService>;
