import { TokenAuthority } from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { createSentinel } from 'redis';

// The client asks the sentinels which server is the primary, and follows it through failovers.
const client = createSentinel({
  name: 'launcher', // the name in the sentinels' `sentinel monitor` line
  sentinelRootNodes: [
    { host: 'sentinel-1.internal', port: 26379 },
    { host: 'sentinel-2.internal', port: 26379 },
    { host: 'sentinel-3.internal', port: 26379 },
  ],
  masterPoolSize: 2, // a save's WAIT holds one connection to the primary; the other serves everything else
});
client.on('error', (error: Error) => console.error('redis:', error.message));
await client.connect();
// A rotation resolves only once a majority of the primary's replicas have it (the default on Sentinel).
const store = new RedisSecretStore({ client });
const authority = await TokenAuthority.open({ store });
console.log('current key:', authority.keyId);
