// Hono through launcher-auth/fetch (npm install launcher-auth hono @hono/node-server; the same guard serves Bun, Deno, Next.js route handlers, Workers).
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { FileSecretStore, TokenAuthority, secretPath } from 'launcher-auth';
import { fetchAuth } from 'launcher-auth/fetch';
const store = new FileSecretStore(secretPath('my-launcher')); // in the user's configuration folder
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
const guard = fetchAuth(authority); // resolves with a 401 Response, the AuthContext, or undefined for /health
const app = new Hono().use(async (c, next) => {
  const result = await guard(c.req.raw);
  return result instanceof Response ? result : next();
}).get('/health', (c) => c.text('ok')).get('/apps', (c) => c.json(['editor', 'terminal']));
serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: '127.0.0.1' }, ({ port }) =>
  console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:${port}/apps`)); // PORT unset: any free port
