// node:http: GET /health is open, every other request needs `Authorization: Bearer <token>`.
import { createServer } from 'node:http';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';

const store = new FileSecretStore('.data/secret.json'); // holds the key: add .data/ to your .gitignore
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });

const handler = withAuth(authority, (req, res) => res.end(`hello, key ${req.auth.keyId}`), {
  health: (_req, res) => res.end('ok'), // GET/HEAD /health, without a token and without req.auth
});
createServer(handler).listen(7878, '127.0.0.1');
console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:7878/`);
