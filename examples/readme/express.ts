// Express 4 or 5 (npm install launcher-auth express): the middleware goes before the routes, so unknown paths get 401 too, not 404.
import express from 'express';
import type { AddressInfo } from 'node:net';
import { FileSecretStore, TokenAuthority, secretPath } from 'launcher-auth';
import { authenticated, expressAuth } from 'launcher-auth/express';

const store = new FileSecretStore(secretPath('my-launcher')); // in the user's configuration folder
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });

const app = express();
app.use(expressAuth(authority));
app.get('/health', (_req, res) => res.send('ok'));
app.get('/apps', authenticated((req, res) => res.json({ apps: ['editor'], keyId: req.auth.keyId })));
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo; // PORT unset: any free port
  console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:${port}/apps`);
});
