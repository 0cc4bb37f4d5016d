// Regenerate token and long-lived connections: an event stream opened with a token ends when it is regenerated.
import { addAbortListener } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';

const store = new FileSecretStore('.data/secret.json'); // holds the key: add .data/ to your .gitignore
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });

const handler = withAuth(authority, (req, res) => {
  if (req.auth === undefined) {
    res.end('ok'); // GET /health
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
  const timer = setInterval(() => res.write(`data: ${new Date().toISOString()}\n\n`), 1000);
  // auth.signal aborts when the key that authenticated this request is rotated away (or on close()).
  const revoked = addAbortListener(req.auth.signal, () => {
    clearInterval(timer);
    res.end();
  });
  res.on('close', () => {
    clearInterval(timer);
    revoked[Symbol.dispose]();
  });
});
const server = createServer(handler);
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`); // PORT unset: any free port
});

/** The settings page's "Regenerate token" button: the new token works at once; old streams end, old tokens get 401. */
export function regenerateToken(): Promise<string> {
  return authority.rotate();
}
