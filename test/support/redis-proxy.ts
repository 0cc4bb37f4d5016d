// A TCP proxy of the tests' own in front of redis-server: `cut()` stops carrying bytes and closes both ways (a
// partition: the connection stays open, nothing arrives), `heal()` carries them again; `moveTo()` puts another server behind it.
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface Proxy {
  readonly port: number;
  cut(): void;
  heal(): void;
  /**
   * Closes every connection and sends the next ones to the server on `port`: to its clients, a server that went
   * away and came back at once, as a restart would if it took no time.
   */
  moveTo(port: number): void;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number): Promise<Proxy> {
  let target = targetPort;
  let cut = false;
  const pairs = new Set<[Socket, Socket]>();
  const held: Array<() => void> = [];
  const pipe = (from: Socket, to: Socket): void => {
    from.on('data', (chunk) => {
      if (cut) held.push(() => to.write(chunk));
      else to.write(chunk);
    });
  };
  const server: Server = createServer((inbound) => {
    const outbound = connect(target, '127.0.0.1');
    const pair: [Socket, Socket] = [inbound, outbound];
    pairs.add(pair);
    const end = (): void => {
      // A partition carries no FIN or reset either: while cut, the other side learns of a close only once the link
      // heals (a primary keeps listing a replica whose link across the split closed, until its own timeout).
      if (cut) {
        held.push(end);
        return;
      }
      inbound.destroy();
      outbound.destroy();
      pairs.delete(pair);
    };
    inbound.on('error', end).on('close', end);
    outbound.on('error', end).on('close', end);
    pipe(inbound, outbound);
    pipe(outbound, inbound);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const closeAll = (): void => {
    for (const [a, b] of pairs) {
      a.destroy();
      b.destroy();
    }
  };
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    cut() {
      cut = true;
    },
    heal() {
      cut = false;
      for (const deliver of held.splice(0)) deliver();
    },
    moveTo(port) {
      target = port;
      held.length = 0;
      closeAll();
    },
    async close() {
      closeAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
