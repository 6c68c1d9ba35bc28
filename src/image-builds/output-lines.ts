import { StringDecoder } from 'node:string_decoder';
import type { BuildLog } from './types.js';

/** Longer lines are cut: one runaway line must not flood the build log. */
const MAX_LINE_CHARS = 4000;
/** Lines kept for explaining a failure. */
const TAIL_LINES = 200;
/** Lines waiting for a slow `log` before the builder's output is paused. */
const HIGH_WATER = 500;

// Colour and cursor sequences (CSI and OSC) mean nothing in a stored log.
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g;

export function cleanLine(raw: string): string {
  const line = raw.replace(ANSI, '').trimEnd();
  return line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… (${line.length - MAX_LINE_CHARS} more characters)` : line;
}

/**
 * Turns the chunks of one or more output streams into lines, hands them to `log` strictly
 * one after another, and keeps the last lines for error messages. Each stream has its own
 * decoder and partial line, so stdout and stderr never split each other's lines.
 */
export class OutputLines {
  readonly #log: BuildLog;
  readonly #tail: string[] = [];
  #chain: Promise<void> = Promise.resolve();
  #pending = 0;
  #onDrain: (() => void)[] = [];

  constructor(log: BuildLog) {
    this.#log = log;
  }

  /** Feeds a readable stream; pauses it while too many lines wait for `log`. */
  follow(stream: NodeJS.ReadableStream): void {
    const decoder = new StringDecoder('utf8');
    let partial = '';
    const take = (text: string) => {
      const parts = (partial + text).split(/\r\n|\n|\r/);
      partial = parts.pop() ?? '';
      for (const part of parts) this.#push(part);
      if (this.#pending > HIGH_WATER) {
        stream.pause();
        this.#onDrain.push(() => stream.resume());
      }
    };
    stream.on('data', (chunk: Buffer) => take(decoder.write(chunk)));
    stream.on('end', () => {
      const rest = partial + decoder.end();
      partial = '';
      if (rest) this.#push(rest);
    });
  }

  /** Adds a line of Berth's own (e.g. what it cleaned up) to the same ordered log. */
  note(line: string): void {
    this.#push(line);
  }

  /** The last lines seen, oldest first. */
  tail(): string[] {
    return [...this.#tail];
  }

  /** Resolves when every line so far has been passed to `log`. */
  async flushed(): Promise<void> {
    await this.#chain;
  }

  #push(raw: string): void {
    const line = cleanLine(raw);
    if (line === '') return;
    this.#tail.push(line);
    if (this.#tail.length > TAIL_LINES) this.#tail.shift();
    this.#pending++;
    this.#chain = this.#chain.then(async () => {
      try {
        await this.#log(line);
      } catch {
        // A lost log line must not fail or stall the build it describes.
      }
      this.#pending--;
      if (this.#pending <= HIGH_WATER / 2 && this.#onDrain.length > 0) {
        for (const resume of this.#onDrain.splice(0)) resume();
      }
    });
  }
}
