// Pages of one web origin and one browser extension may call the API from a browser, with the token.
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';

const store = new FileSecretStore('.data/secret.json'); // holds the key: add .data/ to your .gitignore
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });

const handler = withAuth(authority, (req, res) => res.end(`hello, key ${req.auth.keyId}`), {
  health: (_req, res) => res.end('ok'),
  cors: {
    origins: ['http://127.0.0.1:5173', 'chrome-extension://abcdefghijklmnopabcdefghijklmnop'],
    allowHeaders: ['content-type'], // besides authorization, which is always allowed
  },
});
const server = createServer(handler);
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`); // PORT unset: any free port
});
