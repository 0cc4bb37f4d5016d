// A Redis Sentinel deployment for failback tests: a primary P, a replica R and three sentinels that fail over only
// when told to (SENTINEL FAILOVER). Clients reach it through sides: each side's every link (to the sentinels, to P,
// to R) runs through TCP proxies of its own (redis-proxy.ts) that cut() and heal() together. Once R is promoted, P
// can be made to replicate R through a proxy too: cut, P lags behind R while its link still looks up (Redis notices
// only after `repl-timeout`), so the sentinels still take it for a healthy replica and can promote it again.
import { budget } from './machine.js';
import { freePort, type RedisServer } from './redis-server.js';
import type { Proxy } from './redis-proxy.js';
import {
  PRIMARY_NAME,
  command,
  at,
  connectSentinel,
  field,
  fieldsOf,
  proxiedParts,
  replicaOnline,
  startSentinelProcess,
  waitFor,
  type Endpoint,
  type SentinelClient,
} from './redis-sentinel.js';

export { SKIP_REASON } from './redis-sentinel.js';

/** Clients whose links all run through proxies of their own. */
export interface Side {
  /** A `createSentinel()` client on this side, connected. */
  client(): Promise<SentinelClient>;
  /** Cuts every link of this side's clients, in one step (the connections stay open and carry nothing). */
  cut(): void;
  /** Carries them again, with what they held. */
  heal(): void;
}

export interface FailbackSentinel {
  /** The ports of P (the first primary) and R (the first replica). */
  readonly ports: { readonly primary: number; readonly replica: number };
  side(): Promise<Side>;
  /**
   * Waits until every sentinel takes `to` (the one replica) for a healthy replica, has Sentinel fail over to it, and
   * resolves once every sentinel names it and it takes writes, without waiting for the former primary to become a
   * replica (Sentinel turns it into one some seconds later).
   */
  failover(to: number): Promise<void>;
  /**
   * Makes P, the former primary, a replica of R through a proxy, and resolves once it holds what R holds in `key`.
   * The sentinels take it for a healthy replica (one they may promote) only at their next look at it, up to 10 s
   * later: failover() waits for that.
   */
  replicateThroughProxy(key: string): Promise<void>;
  /** Cuts P's replication from R: P takes no more of R's writes, and its link still looks up. */
  cutReplication(): void;
  /** The server on `port`'s value of `key`. */
  get(port: number, key: string): Promise<string | null>;
  /** Destroys the clients, closes the proxies, kills every process and removes the folder. */
  stop(): Promise<void>;
}

/** Starts P, R (replicating P directly) and three sentinels, and waits until every sentinel sees R and its peers. */
export async function startFailbackSentinel(): Promise<FailbackSentinel> {
  const { dir, started, clients, stop, proxy, data } = await proxiedParts('launcher-auth-failback-');
  try {
    const primary = await data(await freePort(), []);
    const replica = await data(await freePort(), ['--replicaof', '127.0.0.1', String(primary.port)]);
    await replicaOnline(primary.port);
    const sentinels: RedisServer[] = [];
    for (let index = 0; index < 3; index += 1) {
      // Slow to judge a server down: every failover here is one the test asks for.
      const sentinel = await startSentinelProcess(dir, primary.port, budget(5000), {
        // Long: a sentinel puts back a replica that replicates from another address only after this long, and P's
        // replication through a proxy must stay as the test set it.
        failoverTimeoutMs: 120_000,
      });
      started.push(sentinel);
      sentinels.push(sentinel);
    }
    const named = async (sentinel: RedisServer): Promise<number> =>
      Number(((await command(sentinel.port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', PRIMARY_NAME])) as string[])[1]);
    /** Every sentinel names `port` as the primary, knows its two peers, and takes `replicaPort` for a healthy replica. */
    const settled = (port: number, replicaPort: number) =>
      waitFor(
        `every sentinel to name ${port} and see ${replicaPort} as a healthy replica`,
        async () => {
          for (const sentinel of sentinels) {
            if ((await named(sentinel)) !== port) return false;
            const replicas = (await command(sentinel.port, ['SENTINEL', 'REPLICAS', PRIMARY_NAME])) as unknown[];
            const healthy = replicas
              .map(fieldsOf)
              .some(
                (fields) =>
                  Number(fields.port) === replicaPort &&
                  fields.flags === 'slave' &&
                  fields['master-link-status'] === 'ok',
              );
            const peers = (await command(sentinel.port, ['SENTINEL', 'SENTINELS', PRIMARY_NAME])) as unknown[];
            if (!healthy || peers.length < 2) return false;
          }
          return true;
        },
        // A sentinel looks at a replica every 10 s.
        30_000,
      );
    await settled(primary.port, replica.port);

    let replication: Proxy | undefined;
    return {
      ports: { primary: primary.port, replica: replica.port },
      async side() {
        const own: Proxy[] = [];
        const map: Record<string, Endpoint> = {};
        for (const port of [...sentinels.map((sentinel) => sentinel.port), primary.port, replica.port]) {
          const link = await proxy(port);
          own.push(link);
          map[`127.0.0.1:${port}`] = at(link.port);
        }
        const roots = sentinels.map((sentinel) => at((own[sentinels.indexOf(sentinel)] as Proxy).port));
        return {
          async client() {
            const client = await connectSentinel(roots, map);
            clients.push(client);
            return client;
          },
          cut() {
            for (const link of own) link.cut();
          },
          heal() {
            for (const link of own) link.heal();
          },
        };
      },
      async failover(to) {
        await settled(await named(sentinels[0] as RedisServer), to);
        await command((sentinels[0] as RedisServer).port, ['SENTINEL', 'FAILOVER', PRIMARY_NAME]);
        await waitFor(`the sentinels to promote ${to}`, async () => {
          for (const sentinel of sentinels) if ((await named(sentinel)) !== to) return false;
          return field(await command(to, ['INFO', 'replication']), 'role') === 'master';
        });
      },
      async replicateThroughProxy(key) {
        const link = await proxy(replica.port);
        replication = link;
        await command(primary.port, ['REPLICAOF', '127.0.0.1', String(link.port)]);
        await waitFor('the former primary to replicate through the proxy', async () => {
          const info = await command(primary.port, ['INFO', 'replication']);
          if (field(info, 'master_port') !== String(link.port)) return false;
          if (field(info, 'master_link_status') !== 'up') return false;
          return (await command(primary.port, ['GET', key])) === (await command(replica.port, ['GET', key]));
        });
      },
      cutReplication() {
        if (replication === undefined) throw new Error('P does not replicate through a proxy');
        replication.cut();
      },
      async get(port, key) {
        return (await command(port, ['GET', key])) as string | null;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
