// Koa: koaAuth first; `ctx.state.auth` is typed through KoaAuthState (Koa's global DefaultState is left alone).
import Koa from 'koa';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { koaAuth, type KoaAuthState } from 'launcher-auth/koa';

const store = new FileSecretStore('.data/secret.json'); // holds the key: add .data/ to your .gitignore
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
const app = new Koa<KoaAuthState>();
app.use(koaAuth(authority, { health: (ctx) => void (ctx.body = 'ok') }));
app.use((ctx) => void (ctx.body = { apps: ['editor', 'terminal'], keyId: ctx.state.auth.keyId }));
app.listen(7878, '127.0.0.1');
console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:7878/apps`);
