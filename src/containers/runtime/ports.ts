import net from 'node:net';
import { DriverError } from '../driver.js';

const PORT_RESERVATION_MS = 5 * 60_000;
/** Ports handed out recently by this process, so concurrent starts never share one. */
const reservedPorts = new Map<number, number>();

export async function freePort(host: string): Promise<number> {
  const now = Date.now();
  for (const [port, expires] of reservedPorts) if (expires <= now) reservedPorts.delete(port);
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await ephemeralPort(host);
    if (!reservedPorts.has(port)) {
      reservedPorts.set(port, now + PORT_RESERVATION_MS);
      return port;
    }
  }
  throw new DriverError(`Could not find a free TCP port on ${host}`);
}

function ephemeralPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('could not allocate a port'))));
    });
  });
}
