// Fastify 5 (npm install launcher-auth fastify): register the plugin before the routes; `request.auth` is typed by declaration merging.
import Fastify from 'fastify';
import { FileSecretStore, TokenAuthority, secretPath } from 'launcher-auth';
import { fastifyAuth, health } from 'launcher-auth/fastify';

const store = new FileSecretStore(secretPath('my-launcher')); // in the user's configuration folder
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });

const app = Fastify();
await app.register(fastifyAuth, { authority });
app.get('/health', health(async () => 'ok')); // typed without request.auth
app.get('/apps', async (request) => ({ apps: ['editor', 'terminal'], keyId: request.auth.keyId }));
const url = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' }); // PORT unset: any free port
console.log(`curl -H "Authorization: Bearer ${authority.issue()}" ${url}/apps`);
