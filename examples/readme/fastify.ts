// Fastify 5: register the plugin before the routes; `request.auth` is typed by declaration merging.
import Fastify from 'fastify';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { fastifyAuth, health } from 'launcher-auth/fastify';

const store = new FileSecretStore('.data/secret.json'); // holds the key: add .data/ to your .gitignore
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });

const app = Fastify();
await app.register(fastifyAuth, { authority });
app.get('/health', health(async () => 'ok')); // typed without request.auth
app.get('/apps', async (request) => ({ apps: ['editor', 'terminal'], keyId: request.auth.keyId }));
await app.listen({ port: 7878, host: '127.0.0.1' });
console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:7878/apps`);
