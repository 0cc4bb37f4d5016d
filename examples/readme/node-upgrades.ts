// node:http with WebSockets and uploads: one handler behind withAuth (requests) and withContinueAuth
// (`Expect: 100-continue`, refused before the upload), the WebSocket server behind withUpgradeAuth.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { withAuth, withContinueAuth, withUpgradeAuth } from 'launcher-auth/node';
import type { AuthenticatedRequest, HealthRequest } from 'launcher-auth/node';

const store = new FileSecretStore('.data/secret.json'); // holds the key: add .data/ to your .gitignore
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
const api = (req: AuthenticatedRequest, res: ServerResponse) => res.end(`hello, key ${req.auth.keyId}`);
const options = { health: (_req: HealthRequest, res: ServerResponse) => res.end('ok') };
const wss = new WebSocketServer({ noServer: true });

const server = createServer(withAuth(authority, api, options));
server.on('checkContinue', withContinueAuth(authority, api, options));
// Only WebSocket upgrades reach this handler; any other (`Upgrade: h2c`) is an ordinary request for `api`.
server.on(
  'upgrade',
  withUpgradeAuth(authority, (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => ws.send('hi')), {
    protocols: ['websocket'],
  }),
);
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`); // PORT unset: any free port
});
