// Hono (npm install launcher-auth hono @hono/node-server): honoAuth first, for every path; `c.get('auth')` is typed in this app only (nothing global).
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { FileSecretStore, TokenAuthority, secretPath } from 'launcher-auth';
import { honoAuth } from 'launcher-auth/hono';

const store = new FileSecretStore(secretPath('my-launcher')); // in the user's configuration folder
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
const app = new Hono().use(honoAuth(authority, { health: (c) => c.text('ok') }));
app.get('/apps', (c) => c.json({ apps: ['editor', 'terminal'], keyId: c.get('auth').keyId }));
serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: '127.0.0.1' }, ({ port }) =>
  console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:${port}/apps`)); // PORT unset: any free port
