// Two instances of one automation API sharing their secret through Redis: "Regenerate token" on one, and the
// other refuses the old token from the moment rotate() resolves. Needs a Redis server:
//   redis-server --port 6379 &   then   REDIS_URL=redis://127.0.0.1:6379 npx tsx examples/several-instances.ts
// Prints statuses and key ids only, never a token.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { TokenAuthority } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';
import { RedisSecretStore } from '@launcher-auth/redis';
import { createClient } from 'redis';

interface Instance {
  authority: TokenAuthority;
  url: string;
  close(): Promise<void>;
}

/**
 * A connected client, or an error that says Redis is not there: node-redis's connect() would otherwise retry in
 * silence for as long as Redis stays away. Once connected, it reconnects by itself after an outage.
 */
async function connect(redisUrl: string) {
  const client = createClient({ url: redisUrl, socket: { connectTimeout: 3000 } });
  const where = new URL(redisUrl).host; // never the password a URL may hold
  try {
    await Promise.race([
      client.connect(),
      new Promise((_resolve, reject) => client.once('error', reject)), // the first failed attempt
    ]);
  } catch (error) {
    client.destroy();
    throw new Error(`Cannot reach Redis (${(error as Error).message}): is Redis running at ${where}?`, {
      cause: error,
    });
  }
  client.on('error', () => undefined); // an outage makes the instance refuse (onStoreError says why), not crash
  return client;
}

/** One instance: its own Redis connection (as on its own host), its authority, node:http on a free port. */
async function startInstance(redisUrl: string, key: string): Promise<Instance> {
  const client = await connect(redisUrl);
  const authority = await TokenAuthority.open({
    store: new RedisSecretStore({ client, key }),
    onStoreError: (error) => console.error(`secret store: ${error.message}`),
  }).catch((error: unknown) => {
    client.destroy();
    throw error;
  });
  const server: Server = createServer(withAuth(authority, (_request, response) => response.end('ok\n')));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    authority,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await authority.close();
      client.destroy();
    },
  };
}

const status = async (url: string, token: string): Promise<number> =>
  (await fetch(url, { headers: { authorization: `Bearer ${token}` } })).status;

/** Runs the demonstration; returns the statuses it printed, for the example's test. */
export async function main(redisUrl: string, key = 'launcher-auth:example'): Promise<number[]> {
  const a = await startInstance(redisUrl, key);
  const b = await startInstance(redisUrl, key);
  try {
    const old = a.authority.issue();
    const before = await status(b.url, old);
    console.log(`instance B, token of key ${a.authority.keyId}: ${before}`);
    const fresh = await a.authority.rotate(); // "Regenerate token" on instance A
    const oldOnB = await status(b.url, old);
    const freshOnB = await status(b.url, fresh);
    console.log(`regenerated on instance A (key ${a.authority.keyId})`);
    console.log(`instance B, old token: ${oldOnB}; new token: ${freshOnB}`);
    return [before, oldOnB, freshOnB];
  } finally {
    await a.close();
    await b.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await main(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379').catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
