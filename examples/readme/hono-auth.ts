// Hono: honoAuth first, for every path; `c.get('auth')` is typed in this app only (nothing global).
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { honoAuth } from 'launcher-auth/hono';

const store = new FileSecretStore('.data/secret.json'); // holds the key: add .data/ to your .gitignore
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
const app = new Hono().use(honoAuth(authority, { health: (c) => c.text('ok') }));
app.get('/apps', (c) => c.json({ apps: ['editor', 'terminal'], keyId: c.get('auth').keyId }));
serve({ fetch: app.fetch, port: 7878, hostname: '127.0.0.1' });
console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:7878/apps`);
