/**
 * Requests that outlive their authentication (long polls, event streams) end once their
 * key is revoked. They are kept here by key id, so a thousand waiting agents cost one
 * database read per `everyMs` (which of the watched keys still exist), not a lookup of each
 * key per request; a revocation made by this process ends its requests at once.
 */
export class KeyWatches {
  readonly #byKey = new Map<string, Set<AbortController>>();
  #timer: NodeJS.Timeout | undefined;
  #checking = false;

  constructor(
    /** Which of these key ids still exist. */
    private readonly existing: (keyIds: string[]) => Promise<Set<string>>,
    private readonly everyMs: number,
  ) {}

  watch(keyId: string): { signal: AbortSignal; stop(): void } {
    const revoked = new AbortController();
    let controllers = this.#byKey.get(keyId);
    if (!controllers) this.#byKey.set(keyId, (controllers = new Set()));
    controllers.add(revoked);
    // Ticking only while something is watched.
    this.#timer ??= setInterval(() => void this.#check(), this.everyMs).unref();
    return { signal: revoked.signal, stop: () => this.#forget(keyId, revoked) };
  }

  /** The key is gone: its requests end now. */
  revoked(keyId: string): void {
    for (const controller of this.#byKey.get(keyId) ?? []) controller.abort();
  }

  #forget(keyId: string, controller: AbortController): void {
    const controllers = this.#byKey.get(keyId);
    if (!controllers?.delete(controller) || controllers.size > 0) return;
    this.#byKey.delete(keyId);
    if (this.#byKey.size > 0) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #check(): Promise<void> {
    if (this.#checking || this.#byKey.size === 0) return;
    this.#checking = true;
    try {
      const ids = [...this.#byKey.keys()];
      const existing = await this.existing(ids);
      for (const id of ids) if (!existing.has(id)) this.revoked(id);
    } catch {
      // A failed lookup (the database away for a moment) is not a revocation.
    } finally {
      this.#checking = false;
    }
  }
}
