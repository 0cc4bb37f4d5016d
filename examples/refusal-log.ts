// Logs refused requests without flooding the log: at most one line per client address per minute, in words a
// launcher's user can act on. Never the token: `onReject` is not given it. The HTTP answer stays the same 401.
// Run: npx tsx examples/refusal-log.ts   (serves on http://127.0.0.1:7807, or the PORT environment variable)
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { MemorySecretStore, TokenAuthority, type RejectInfo, type RejectReason } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';

export interface RefusalLogOptions {
  /**
   * Where a line goes.
   * @default console.warn
   */
  write?: (line: string) => void;
  /**
   * How long a client stays quiet after a line about it, in milliseconds.
   * @default 60000
   */
  intervalMs?: number;
  /**
   * How many client addresses are remembered; past it the one written about least recently is forgotten, so a
   * flood from many addresses cannot grow the map.
   * @default 1000
   */
  maxClients?: number;
  /**
   * The clock, in milliseconds.
   * @default performance.now
   */
  now?: () => number;
}

const WHAT: Record<RejectReason, string> = {
  missing: 'sent no token',
  malformed: 'sent something that is not a launcher token',
  invalid: 'sent a token this launcher never issued',
  rotated: 'still uses a token from before the last Regenerate',
  suspended: 'was refused while the secret store could not confirm the current key',
};

/** An `onReject` hook that writes one line per client address per `intervalMs`, counting what it held back. */
export function refusalLog(options: RefusalLogOptions = {}): (info: RejectInfo) => void {
  const { write = (line) => console.warn(line), intervalMs = 60_000, maxClients = 1000 } = options;
  const { now = () => performance.now() } = options;
  // address -> when its last line was written and how many refusals were held back since. A Map keeps insertion
  // order, so re-inserting on every write makes its first key the one written about least recently.
  const clients = new Map<string, { at: number; held: number }>();

  return (info) => {
    const address = info.remoteAddress ?? 'an unknown address';
    const time = now();
    const seen = clients.get(address);
    if (seen !== undefined && time - seen.at < intervalMs) {
      seen.held += 1;
      return;
    }
    const held = seen === undefined || seen.held === 0 ? '' : ` (${seen.held} more refusals since the last line)`;
    clients.delete(address);
    clients.set(address, { at: time, held: 0 });
    if (clients.size > maxClients) clients.delete(clients.keys().next().value as string);
    const who = info.reason === 'rotated' ? 'a script' : 'a client';
    write(`${who} at ${address} ${WHAT[info.reason]}: ${info.method} ${info.path}${held}`);
  };
}

/** A small launcher API whose refusals go through {@link refusalLog}; `port` 0 picks a free one. */
export async function start(port = Number(process.env.PORT ?? 7807), log: RefusalLogOptions = {}) {
  const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  const server = createServer(withAuth(authority, (_req, res) => res.end('ok'), { onReject: refusalLog(log) }));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject).listen(port, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    authority,
    async close(): Promise<void> {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await authority.close();
      await closed;
    },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { url } = await start();
  console.log(`listening on ${url}; a request without a token is refused, and logged once a minute at most:`);
  console.log(`curl -i ${url}/apps`);
}
