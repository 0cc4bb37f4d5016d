// A three-primary Redis Cluster on free loopback ports for the tests (made by `redis-cli --cluster create`), plus
// one replica of the primary that owns a given key, all in a temporary folder removed at the end; helpers move the
// key's slot to another primary and fail its primary over to the replica.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createCluster } from 'redis';
import { REDIS_SERVER, freePort, launchRedis, missingTool, type RedisServer } from './redis-server.js';
import { command, field, waitFor } from './redis-sentinel.js';

const REDIS_CLI = process.env['REDIS_CLI'] ?? 'redis-cli';
/** Why the suites are skipped, or `undefined` when they run. */
export const SKIP_REASON = missingTool(REDIS_CLI, 'redis-tools');

export interface ClusterNode extends RedisServer {
  /** The node's id in the cluster. */
  readonly id: string;
  /** Its cluster bus port. */
  readonly bus: number;
}

export interface ClusterDeployment {
  readonly nodes: readonly ClusterNode[];
  /** The hash slot of the key the deployment was made for. */
  readonly slot: number;
  /** The port of the primary that owns the slot now, as that node itself says. */
  ownerPort(): Promise<number>;
  /**
   * Moves the slot to another primary (CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE of its keys, SETSLOT NODE on
   * every node), pausing `pauseMs` between the steps so that clients meet the slot half-moved (`ASK`, `TRYAGAIN`).
   * To the primary on port `to`, or to another one.
   */
  moveSlot(options?: { pauseMs?: number; to?: number }): Promise<{ from: number; to: number; ms: number }>;
  /** Starts moving the slot (IMPORTING on the target, MIGRATING on the source), leaving each step to the caller. */
  beginMove(to?: number): Promise<SlotMove>;
  /** `CLUSTER FAILOVER` on the replica of the slot's primary; resolves once every node names the new primary. */
  failover(): Promise<{ from: number; to: number; ms: number }>;
  /** A connected `createCluster()` client; destroyed by `stop()` if still open. */
  /**
   * Freezes the slot's primary (SIGSTOP) until the cluster has promoted its replica on its own, then lets it run
   * again (it rejoins as a replica). Resolves with the milliseconds from the freeze to the promotion.
   */
  freezePrimary(): Promise<{ from: number; to: number; ms: number }>;
  /** Waits until the slot's primary has a replica in sync. */
  replicated(): Promise<void>;
  client(): Promise<ClusterClient>;
  stop(): Promise<void>;
}

/** A slot move under way: the keys still on the source, one key's MIGRATE, and the end (SETSLOT NODE everywhere). */
export interface SlotMove {
  readonly from: number;
  readonly to: number;
  keysLeft(): Promise<string[]>;
  migrate(key: string): Promise<void>;
  finish(): Promise<void>;
}

export type ClusterClient = Awaited<ReturnType<typeof connectCluster>>;

async function connectCluster(port: number) {
  const client = createCluster({
    rootNodes: [{ url: `redis://127.0.0.1:${port}` }],
    defaults: { socket: { connectTimeout: 500, reconnectStrategy: () => 50 } },
  });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** The primaries and their slot ranges, as `node` sees them: port → [start, end][]. */
async function owners(port: number): Promise<Map<number, Array<[number, number]>>> {
  const slots = (await command(port, ['CLUSTER', 'SLOTS'])) as Array<[number, number, [string, number, string]]>;
  const map = new Map<number, Array<[number, number]>>();
  for (const [start, end, [, owner]] of slots) map.set(owner, [...(map.get(owner) ?? []), [start, end]]);
  return map;
}

async function ownerOf(port: number, slot: number): Promise<number | undefined> {
  for (const [owner, ranges] of await owners(port))
    if (ranges.some(([start, end]) => start <= slot && slot <= end)) return owner;
  return undefined;
}

/** Starts three primaries (and a replica of the one that owns `key`) and waits until the cluster is whole. */
export async function startCluster(key: string): Promise<ClusterDeployment> {
  const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-cluster-'));
  const nodes: ClusterNode[] = [];
  const clients: ClusterClient[] = [];
  const stop = async (): Promise<void> => {
    for (const client of clients) if (client.isOpen) client.destroy();
    await Promise.all(nodes.map((node) => node.kill()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const start = async (): Promise<ClusterNode> => {
      // The bus port is chosen too: port + 10000, the default, may be taken or past 65535.
      const [port, bus] = [await freePort(), await freePort()];
      const server = await launchRedis(
        REDIS_SERVER,
        [
          '--port',
          String(port),
          '--cluster-port',
          String(bus),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          '1000',
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
          '--repl-diskless-sync',
          'yes',
          '--repl-diskless-sync-delay',
          '0',
        ],
        port,
      );
      const node = { ...server, id: String(await command(port, ['CLUSTER', 'MYID'])), bus };
      nodes.push(node);
      return node;
    };
    const primaries = [await start(), await start(), await start()];
    await promisify(execFile)(REDIS_CLI, [
      '--cluster',
      'create',
      ...primaries.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    const first = primaries[0] as ClusterNode;
    const slot = Number(await command(first.port, ['CLUSTER', 'KEYSLOT', key]));
    const whole = () =>
      waitFor('every node to agree on the slots', async () => {
        for (const node of nodes) {
          if (!String(await command(node.port, ['CLUSTER', 'INFO'])).includes('cluster_state:ok')) return false;
        }
        return true;
      });
    await whole();

    // The replica, of the slot's primary only: the failover case needs one, the others need none.
    const ownerPort = await ownerOf(first.port, slot);
    const primary = primaries.find((node) => node.port === ownerPort);
    if (primary === undefined) throw new Error('no owner for the slot');
    const replica = await start();
    await command(replica.port, ['CLUSTER', 'MEET', '127.0.0.1', String(primary.port), String(primary.bus)]);
    await waitFor('the replica to meet the cluster', async () =>
      String(await command(replica.port, ['CLUSTER', 'NODES'])).includes(primary.id),
    );
    await command(replica.port, ['CLUSTER', 'REPLICATE', primary.id]);
    await waitFor('the replica to be in sync', async () => {
      const info = String(await command(replica.port, ['INFO', 'replication']));
      return info.includes('master_link_status:up');
    });
    await whole();

    const agreeOn = (owner: number) =>
      waitFor("every node to name the slot's new primary", async () => {
        for (const node of nodes) if ((await ownerOf(node.port, slot)) !== owner) return false;
        return true;
      });

    const beginMove = async (to?: number): Promise<SlotMove> => {
      const from = await currentOwner();
      const source = nodes.find((node) => node.port === from) as ClusterNode;
      const target = nodes.find(
        (node) => node.port !== from && (to === undefined ? primaries.includes(node) : node.port === to),
      );
      if (target === undefined) throw new Error('no primary to move the slot to');
      await command(target.port, ['CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', source.id]);
      await command(source.port, ['CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', target.id]);
      return {
        from,
        to: target.port,
        keysLeft: async () =>
          (await command(source.port, ['CLUSTER', 'GETKEYSINSLOT', String(slot), '100'])) as string[],
        async migrate(key) {
          await command(source.port, [
            'MIGRATE',
            '127.0.0.1',
            String(target.port),
            '',
            '0',
            '2000',
            'REPLACE',
            'KEYS',
            key,
          ]);
        },
        async finish() {
          await command(target.port, ['CLUSTER', 'SETSLOT', String(slot), 'NODE', target.id]);
          await command(source.port, ['CLUSTER', 'SETSLOT', String(slot), 'NODE', target.id]);
          for (const node of nodes) {
            if (node !== source && node !== target) {
              // A replica refuses SETSLOT; it learns the owner from its primary.
              await command(node.port, ['CLUSTER', 'SETSLOT', String(slot), 'NODE', target.id]).catch(() => undefined);
            }
          }
          await agreeOn(target.port);
        },
      };
    };

    /** The node that replicates the primary on port `primary`. */
    const replicaOf = async (primary: number): Promise<ClusterNode> => {
      for (const node of nodes) {
        const info = await command(node.port, ['INFO', 'replication']);
        if (field(info, 'role') === 'slave' && field(info, 'master_port') === String(primary)) return node;
      }
      throw new Error("no replica of the slot's primary");
    };

    const currentOwner = async (): Promise<number> => {
      const port = await ownerOf(first.port, slot);
      if (port === undefined) throw new Error('no owner for the slot');
      return port;
    };

    return {
      nodes,
      slot,
      ownerPort: currentOwner,
      beginMove,
      async moveSlot({ pauseMs = 0, to }: { pauseMs?: number; to?: number } = {}) {
        const began = performance.now();
        const move = await beginMove(to);
        await new Promise((resolve) => setTimeout(resolve, pauseMs));
        for (let keys = await move.keysLeft(); keys.length > 0; keys = await move.keysLeft()) {
          // One key at a time, with the pause between: clients meet the slot with some keys moved (TRYAGAIN).
          for (const moving of keys) {
            await move.migrate(moving);
            await new Promise((resolve) => setTimeout(resolve, pauseMs));
          }
        }
        await move.finish();
        return { from: move.from, to: move.to, ms: Math.round(performance.now() - began) };
      },
      async failover() {
        const from = await currentOwner();
        const to = (await replicaOf(from)).port;
        const began = performance.now();
        await command(to, ['CLUSTER', 'FAILOVER']);
        await agreeOn(to);
        return { from, to, ms: Math.round(performance.now() - began) };
      },
      async freezePrimary() {
        const from = await currentOwner();
        const frozen = nodes.find((node) => node.port === from) as ClusterNode;
        const to = (await replicaOf(from)).port;
        const began = performance.now();
        frozen.process.kill('SIGSTOP');
        try {
          // Asked of the others only: a stopped process accepts connections and never answers.
          await waitFor('the cluster to promote the replica', async () => {
            for (const node of nodes) if (node !== frozen && (await ownerOf(node.port, slot)) !== to) return false;
            return true;
          });
          return { from, to, ms: Math.round(performance.now() - began) };
        } finally {
          frozen.process.kill('SIGCONT');
        }
      },
      async replicated() {
        const owner = await currentOwner();
        await waitFor(
          "a replica in sync with the slot's primary",
          async () => field(await command(owner, ['INFO', 'replication']), 'slave0')?.includes('state=online') === true,
        );
      },
      async client() {
        const client = await connectCluster(first.port);
        clients.push(client);
        return client;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
