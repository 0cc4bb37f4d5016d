// A launcher's automation API: GET /health is open, every other request needs `Authorization: Bearer <token>`.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FileSecretStore, TokenAuthority, secretPath } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';

// ~/.config/my-launcher/secret.json (or the platform's own folder), created on the first run: the token survives restarts.
const store = new FileSecretStore(secretPath('my-launcher'));
let authority: TokenAuthority;
try {
  authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
} catch (error) {
  console.error((error as Error).message); // a damaged or unreadable secret file: the message names it and the fix
  process.exit(1);
}
const handler = withAuth(authority, (req, res) => res.end(`hello, key ${req.auth.keyId}\n`), { health: (_req, res) => res.end('ok') });
const server = createServer(handler).listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo; // PORT unset: any free port
  console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:${port}/`);
});
