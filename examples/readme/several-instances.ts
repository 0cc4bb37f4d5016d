import { createServer } from 'node:http';
import { TokenAuthority } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';
import { RedisSecretStore } from '@launcher-auth/redis';
import { createClient } from 'redis';

const client = createClient({ url: process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379' }); // see SECURITY.md
client.on('error', (error: Error) => console.error('redis:', error.message));
await client.connect();
// Every instance: the same key; rotate() on any of them revokes the old token on all of them.
const store = new RedisSecretStore({ client, key: 'launcher-auth:secret' });
// Redis gone, or back without the record: told here, and every request is refused until it is back.
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
const api = (_request: unknown, response: { end(text: string): void }) => response.end('ok');
// Reached by the load balancer, so not loopback only: put TLS in front (the token is a bearer credential).
createServer(withAuth(authority, api)).listen(Number(process.env.PORT ?? 0), '0.0.0.0'); // behind the balancer: set PORT
