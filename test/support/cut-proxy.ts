import net from 'node:net';

/**
 * A TCP proxy to a local port that a test can cut: while cut, every connection open through
 * it is dropped and every new one closed at once (the far side looks unreachable), until it
 * is restored. For a client that must survive losing the control plane.
 */
export interface CutProxy {
  url: string;
  /** Connections closed at once because the proxy was cut (a client's attempts to come back). */
  readonly refused: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startCutProxy(targetPort: number): Promise<CutProxy> {
  let isCut = false;
  let refused = 0;
  const open = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    if (isCut) {
      refused += 1;
      socket.destroy();
      return;
    }
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const end of [socket, upstream]) {
      open.add(end);
      end.on('close', () => open.delete(end));
      end.on('error', () => {
        socket.destroy();
        upstream.destroy();
      });
    }
    socket.pipe(upstream).pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const dropAll = () => {
    for (const socket of open) socket.destroy();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    get refused() {
      return refused;
    },
    cut() {
      isCut = true;
      dropAll();
    },
    restore() {
      isCut = false;
    },
    async close() {
      dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A URL of a database that reaches it through a cut proxy: what PostgreSQL restarting or a
 * network partition looks like from Berth, on the test's own database.
 */
export async function throughCutProxy(databaseUrl: string): Promise<{ url: string; proxy: CutProxy }> {
  const url = new URL(databaseUrl);
  const proxy = await startCutProxy(Number(url.port || 5432));
  url.host = new URL(proxy.url).host;
  return { url: url.toString(), proxy };
}
