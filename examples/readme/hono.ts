// Hono through launcher-auth/fetch (the same guard serves Bun, Deno, Next.js route handlers, Workers).
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { fetchAuth } from 'launcher-auth/fetch';
const store = new FileSecretStore('.data/secret.json'); // holds the key: add .data/ to your .gitignore
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
const guard = fetchAuth(authority); // resolves with a 401 Response, the AuthContext, or undefined for /health
const app = new Hono().use(async (c, next) => {
  const result = await guard(c.req.raw);
  return result instanceof Response ? result : next();
}).get('/health', (c) => c.text('ok')).get('/apps', (c) => c.json(['editor', 'terminal']));
serve({ fetch: app.fetch, port: 7878, hostname: '127.0.0.1' });
console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:7878/apps`);
