import { EventEmitter } from 'node:events';
import pg from 'pg';

/**
 * Wake-ups between the API, the engine and waiting clients. `work` means a deployment has
 * something for the engine to do; `deployment` means it has new events (status changes or
 * log lines) to read from the database; `listener` means a listener's desired state changed
 * (`listenerId`; `deploymentId` is empty); `webhooks` means the outbox has news for the
 * deliverer (an event or a redelivery; `deploymentId` is empty); `build-job` means a build job for runners was
 * queued, claimed, reported on or ended (`jobId`). Messages carry ids only: the database is the
 * truth, the bus only says "look now" so nobody waits for a polling tick.
 */
export type BusMessage = {
  topic: 'work' | 'deployment' | 'listener' | 'webhooks' | 'build-job';
  deploymentId: string;
  listenerId?: string;
  /** `build-job`: a build job was queued or changed (docs/build-runners.md). */
  jobId?: string;
  /** The engine worker whose change this announces: it need not react to its own news. */
  origin?: string;
};

export interface EventBus {
  publish(message: BusMessage): void;
  subscribe(listener: (message: BusMessage) => void): () => void;
  close(): Promise<void>;
}

/** One process: an in-memory emitter. */
export class LocalEventBus implements EventBus {
  protected readonly emitter = new EventEmitter().setMaxListeners(0);

  publish(message: BusMessage): void {
    this.emitter.emit('message', message);
  }

  subscribe(listener: (message: BusMessage) => void): () => void {
    this.emitter.on('message', listener);
    return () => this.emitter.off('message', listener);
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}

const CHANNEL = 'berth_events';
const RECONNECT_FIRST_MS = 1_000;
const RECONNECT_MAX_MS = 30_000;

/**
 * Several processes on one PostgreSQL: messages go through LISTEN/NOTIFY, so an engine in
 * another process starts on a new revision at once and a client waiting on one replica
 * hears of a status change made by another. Every message, our own included, arrives
 * through the notification, so each is delivered exactly once per process.
 */
export class PostgresEventBus extends LocalEventBus {
  readonly #pool: pg.Pool;
  readonly #url: string;
  #listener: pg.Client | undefined;
  #reconnecting = false;
  #closed = false;

  private constructor(url: string) {
    super();
    this.#url = url;
    this.#pool = new pg.Pool({ connectionString: url, max: 2 });
    this.#pool.on('error', () => {});
  }

  static async connect(url: string): Promise<PostgresEventBus> {
    const bus = new PostgresEventBus(url);
    await bus.#listen();
    return bus;
  }

  async #listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#url });
    client.on('notification', (n) => {
      if (!n.payload) return;
      try {
        this.emitter.emit('message', JSON.parse(n.payload) as BusMessage);
      } catch {
        // Not ours; ignore.
      }
    });
    client.on('error', () => {
      // The connection dropped (a PostgreSQL restart, a failover, the network): listen again
      // on a new one. Wake-ups missed meanwhile are covered by the engine's periodic sweep and
      // by waiters re-reading the database.
      if (this.#listener !== client) return;
      this.#listener = undefined;
      client.end().catch(() => {});
      this.#reconnect();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    // Closed while this connection was being made: it must not outlive the bus.
    if (this.#closed) await client.end().catch(() => {});
    else this.#listener = client;
  }

  /**
   * Listens again on a new connection, trying until it does or the bus is closed: after 1 s,
   * then twice as long each time up to 30 s. PostgreSQL may be down for longer than one try,
   * and a single failed try used to leave the process deaf to every other process for good.
   * One attempt at a time, so there is never more than one listening connection (each message
   * arrives once).
   */
  #reconnect(): void {
    if (this.#closed || this.#reconnecting) return;
    this.#reconnecting = true;
    this.#retryListen(RECONNECT_FIRST_MS);
  }

  #retryListen(delayMs: number): void {
    const timer = setTimeout(() => {
      if (this.#closed) return;
      this.#listen().then(
        () => {
          this.#reconnecting = false;
        },
        () => this.#retryListen(Math.min(delayMs * 2, RECONNECT_MAX_MS)),
      );
    }, delayMs);
    timer.unref();
  }

  override publish(message: BusMessage): void {
    this.#pool.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify(message)]).catch(() => {
      // Delivery is best effort; see the reconnect note above.
    });
  }

  override async close(): Promise<void> {
    this.#closed = true;
    await super.close();
    await this.#listener?.end().catch(() => {});
    await this.#pool.end().catch(() => {});
  }
}
