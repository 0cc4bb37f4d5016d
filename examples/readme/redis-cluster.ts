import { TokenAuthority } from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { createCluster } from 'redis';

// Any few nodes of the cluster: the client learns the rest, and which primary owns which hash slot.
const client = createCluster({
  rootNodes: [{ url: 'redis://redis-1.internal:6379' }, { url: 'redis://redis-2.internal:6379' }],
});
client.on('error', (error: Error) => console.error('redis:', error.message));
await client.connect();
// The record and the instance table (`{launcher-auth:secret}:instances`) hash to one slot, whatever the key.
const authority = await TokenAuthority.open({ store: new RedisSecretStore({ client, key: 'launcher-auth:secret' }) });
console.log('current key:', authority.keyId);
