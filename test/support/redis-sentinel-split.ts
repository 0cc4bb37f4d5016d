// A Redis Sentinel deployment that a test splits in two, for split-brain tests. On one side the primary P and a
// replica of its own (R2); on the other a replica R and the three sentinels. Every link that crosses the split runs
// through a TCP proxy on loopback (redis-proxy.ts), and split() cuts them all at once: R's replication from P, the
// sentinels' links to P and to R2, the links of a client on P's side to the sentinels, and those of a client on the
// sentinels' side to P. The connections stay open and carry nothing, as in a network partition.
import { budget } from './machine.js';
import type { RedisServer } from './redis-server.js';
import { freePort } from './redis-server.js';
import type { Proxy } from './redis-proxy.js';
import {
  PRIMARY_NAME,
  command,
  at,
  connectSentinel,
  field,
  fieldsOf,
  proxiedParts,
  startSentinelProcess,
  waitFor,
  type Endpoint,
  type SentinelClient,
} from './redis-sentinel.js';

export { SKIP_REASON } from './redis-sentinel.js';

export interface SplitSentinel {
  /** The ports of P, of R (the sentinels' side) and of R2 (P's side). */
  readonly ports: { readonly primary: number; readonly replica: number; readonly primarySideReplica: number };
  /** A Sentinel client on P's side: once split, it reaches P alone (its links to the sentinels are cut). */
  primarySide(): Promise<SentinelClient>;
  /** A Sentinel client on the sentinels' side: once split, it reaches the sentinels and R, never P. */
  sentinelSide(): Promise<SentinelClient>;
  /** Waits until both replicas hold what P holds in `key`. */
  replicated(key: string): Promise<void>;
  /** Cuts every link across the split, in one step. */
  split(): void;
  /** Waits until every sentinel names R as the primary and R takes writes. */
  promoted(): Promise<void>;
  /** Destroys the clients, closes the proxies, kills every process and removes the folder. */
  stop(): Promise<void>;
}

/** Starts P, R2, R and three sentinels, each cross-split link behind a proxy, and waits until all is in sync. */
export async function startSplitSentinel(): Promise<SplitSentinel> {
  const { dir, started, clients, stop, proxy, data } = await proxiedParts('launcher-auth-split-');
  try {
    const primary = await data(await freePort(), []);
    // P as the sentinels' side sees it (the sentinels and that side's clients), and as R replicates it.
    const primaryForSentinels = await proxy(primary.port);
    const primaryForReplica = await proxy(primary.port);
    const replica = await data(await freePort(), ['--replicaof', '127.0.0.1', String(primaryForReplica.port)]);
    // R2 replicates P directly, and tells P (hence the sentinels) to be reached at a proxy of its own.
    const r2Port = await freePort();
    const r2ForSentinels = await proxy(r2Port);
    await data(r2Port, [
      '--replicaof',
      '127.0.0.1',
      String(primary.port),
      '--replica-announce-port',
      String(r2ForSentinels.port),
    ]);
    const inSync = (key: string) =>
      waitFor(`both replicas to hold what the primary holds in ${key}`, async () => {
        const value = await command(primary.port, ['GET', key]);
        for (const port of [replica.port, r2Port]) if ((await command(port, ['GET', key])) !== value) return false;
        return true;
      });
    await waitFor('both replicas to be in sync', async () => {
      const info = await command(primary.port, ['INFO', 'replication']);
      return [field(info, 'slave0'), field(info, 'slave1')].every((line) => line?.includes('state=online') === true);
    });

    const sentinels: RedisServer[] = [];
    for (let index = 0; index < 3; index += 1) {
      // Slower to judge the primary down than the other Sentinel fixture: a loaded machine must not fail it over
      // before the split.
      const sentinel = await startSentinelProcess(dir, primaryForSentinels.port, budget(1500));
      started.push(sentinel);
      sentinels.push(sentinel);
    }
    const sentinelsForPrimarySide = await Promise.all(sentinels.map((sentinel) => proxy(sentinel.port)));
    const named = async (sentinel: RedisServer): Promise<number> =>
      Number(((await command(sentinel.port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', PRIMARY_NAME])) as string[])[1]);
    await waitFor('every sentinel to see both replicas and its two peers', async () => {
      for (const sentinel of sentinels) {
        const replicas = (await command(sentinel.port, ['SENTINEL', 'REPLICAS', PRIMARY_NAME])) as unknown[];
        const peers = (await command(sentinel.port, ['SENTINEL', 'SENTINELS', PRIMARY_NAME])) as unknown[];
        if (replicas.map(fieldsOf).filter((fields) => fields.flags === 'slave').length < 2) return false;
        if (peers.length < 2) return false;
      }
      return true;
    });

    // P's side: the sentinels through its own proxies, and P itself directly where the sentinels name its proxy.
    const primarySideMap: Record<string, Endpoint> = {
      [`127.0.0.1:${primaryForSentinels.port}`]: at(primary.port),
    };
    sentinels.forEach((sentinel, index) => {
      primarySideMap[`127.0.0.1:${sentinel.port}`] = at((sentinelsForPrimarySide[index] as Proxy).port);
    });
    const rootNodes = sentinels.map((sentinel) => at(sentinel.port));
    const connected = async (map?: Record<string, Endpoint>): Promise<SentinelClient> => {
      const client = await connectSentinel(rootNodes, map);
      clients.push(client);
      return client;
    };

    return {
      ports: { primary: primary.port, replica: replica.port, primarySideReplica: r2Port },
      primarySide: () => connected(primarySideMap),
      sentinelSide: () => connected(),
      replicated: inSync,
      split() {
        for (const link of [primaryForSentinels, primaryForReplica, r2ForSentinels, ...sentinelsForPrimarySide])
          link.cut();
      },
      promoted: () =>
        waitFor('the sentinels to promote the replica on their side', async () => {
          for (const sentinel of sentinels) if ((await named(sentinel)) !== replica.port) return false;
          return field(await command(replica.port, ['INFO', 'replication']), 'role') === 'master';
        }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
