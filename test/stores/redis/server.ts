// One redis-server and one client per suite (see test/support/redis-server.ts).
import { afterAll, beforeAll } from 'vitest';
import { connectedClient, startRedis, type RedisServer } from '../../support/redis-server.js';

export { SKIP_REASON, connectedClient, freePort, startRedis, type RedisServer } from '../../support/redis-server.js';

export type Client = Awaited<ReturnType<typeof connectedClient>>;

/** One redis-server and one connected client for a whole suite, started before it and killed after. */
export function sharedRedis(): { readonly server: RedisServer; readonly client: Client } {
  const shared = {} as { server: RedisServer; client: Client };
  beforeAll(async () => {
    shared.server = await startRedis();
    shared.client = await connectedClient(shared.server.url);
  });
  afterAll(async () => {
    shared.client?.destroy();
    await shared.server?.kill();
  });
  return shared;
}
