/**
 * Bounds how many request bodies that nobody has authenticated yet are read at once.
 * Webhook deliveries prove themselves only with a signature over their whole body, so the
 * body must be read (and held) before anything can tell a delivery from junk: without a
 * bound, 80 connections sending 25 MB each took the server from 393 MB to 1.86 GB. With
 * one, at most `limit` bodies of at most the body cap are held at any moment, and the
 * excess is refused at once, before its body is read.
 *
 * One key (a workspace) may hold at most half of the slots, so a workspace flooding its
 * own integration's webhook URL leaves the other half to everyone else.
 */
export class BodyGate {
  readonly #perKey: number;
  readonly #byKey = new Map<string, number>();
  #reading = 0;

  constructor(readonly limit: number) {
    this.#perKey = Math.max(1, Math.floor(limit / 2));
  }

  /** A slot for one body, or null when none is free: the caller refuses the request. */
  tryEnter(key: string): (() => void) | null {
    const held = this.#byKey.get(key) ?? 0;
    if (this.#reading >= this.limit || held >= this.#perKey) return null;
    this.#reading += 1;
    this.#byKey.set(key, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#reading -= 1;
      const left = (this.#byKey.get(key) ?? 1) - 1;
      if (left > 0) this.#byKey.set(key, left);
      else this.#byKey.delete(key);
    };
  }
}
