import type { FastifyBaseLogger } from 'fastify';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Parent = FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean };
type Bindings = Record<string, unknown>;

/**
 * Fastify's `childLoggerFactory`: each request's logger (`request.log`), made only when
 * something is logged at a level the logger writes. Fastify makes a pino child per request,
 * and pino runs the redaction's wildcard paths over its bindings (the request id): ~3 KB of
 * garbage per request in all (issue 24, bench/results.md), for a logger that at `warn` and
 * above logs nothing for a request that succeeds. The lines written are the same.
 */
export function lazyRequestLogger(parent: Parent, bindings: Bindings, options: object): FastifyBaseLogger {
  // A route's own logLevel (options.level) or a parent that cannot say what it writes: the child at once.
  if (Object.keys(options).length > 0 || typeof parent.isLevelEnabled !== 'function') return parent.child(bindings, options);
  return new LazyChild(parent, bindings) as unknown as FastifyBaseLogger;
}

class LazyChild {
  #child: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: Parent,
    private readonly bindings: Bindings,
  ) {}

  #made(): FastifyBaseLogger {
    this.#child ??= this.parent.child(this.bindings);
    return this.#child;
  }

  #log(level: Level, args: unknown[]): void {
    if (this.#child === undefined && !this.parent.isLevelEnabled?.(level)) return;
    (this.#made()[level] as (...args: unknown[]) => void)(...args);
  }

  get level(): string {
    return this.#child?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.#made().level = level;
  }

  child(bindings: Bindings, options?: object): FastifyBaseLogger {
    return this.#made().child(bindings, options);
  }

  fatal(...args: unknown[]): void {
    this.#log('fatal', args);
  }

  error(...args: unknown[]): void {
    this.#log('error', args);
  }

  warn(...args: unknown[]): void {
    this.#log('warn', args);
  }

  info(...args: unknown[]): void {
    this.#log('info', args);
  }

  debug(...args: unknown[]): void {
    this.#log('debug', args);
  }

  trace(...args: unknown[]): void {
    this.#log('trace', args);
  }

  silent(): void {}
}
