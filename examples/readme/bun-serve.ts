// Bun.serve: GET /health is open, every other request needs `Authorization: Bearer <token>`. bun add launcher-auth
import { FileSecretStore, TokenAuthority, secretPath } from 'launcher-auth';
import { fetchAuth } from 'launcher-auth/fetch';

const authority = await TokenAuthority.open({ store: new FileSecretStore(secretPath('my-launcher')) });
const guard = fetchAuth(authority); // a 401 Response, the AuthContext, or undefined for GET /health
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: Number(process.env.PORT ?? 0), // PORT unset: any free port
  async fetch(request) {
    const auth = await guard(request);
    if (auth instanceof Response) return auth;
    return new Response(auth === undefined ? 'ok' : `hello, key ${auth.keyId}\n`);
  },
});
console.log(`curl -H "Authorization: Bearer ${authority.issue()}" ${server.url}`);
