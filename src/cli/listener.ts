// Who listens on a TCP port of this machine, from Linux's socket tables: `check` sends the current token only to a
// listener that the caller or root owns, never to another local user who took the port while the launcher was down.
import { readFileSync } from 'node:fs';

/** A socket's state in /proc/net/tcp: 0A is TCP_LISTEN. */
const LISTEN = '0A';

/**
 * The users (uids) that own a listening socket on `port`, whatever its address, in this machine's network
 * namespace; `undefined` where the tables cannot be read (not Linux).
 */
export function listenerOwners(port: number): number[] | undefined {
  const owners = new Set<number>();
  let read = false;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'latin1');
    } catch {
      continue; // No IPv6, or not Linux.
    }
    read = true;
    // "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...", the port in hex.
    for (const line of text.split('\n').slice(1)) {
      const [, local, , state, , , , uid] = line.trim().split(/\s+/);
      if (state !== LISTEN || local === undefined || uid === undefined) continue;
      if (Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port) owners.add(Number(uid));
    }
  }
  return read ? [...owners] : undefined;
}

/** Whether `hostname` (as `URL` gives it) is this machine's loopback: `localhost`, 127.0.0.0/8 or `[::1]`. */
export function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}
