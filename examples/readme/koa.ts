// Koa (npm install launcher-auth koa): koaAuth first; `ctx.state.auth` is typed through KoaAuthState (Koa's global DefaultState is left alone).
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { FileSecretStore, TokenAuthority, secretPath } from 'launcher-auth';
import { koaAuth, type KoaAuthState } from 'launcher-auth/koa';

const store = new FileSecretStore(secretPath('my-launcher')); // in the user's configuration folder
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
const app = new Koa<KoaAuthState>();
app.use(koaAuth(authority, { health: (ctx) => void (ctx.body = 'ok') }));
app.use((ctx) => void (ctx.body = { apps: ['editor', 'terminal'], keyId: ctx.state.auth.keyId }));
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo; // PORT unset: any free port
  console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:${port}/apps`);
});
