// node:http with WebSockets and uploads: one handler behind withAuth (requests) and withContinueAuth
// (`Expect: 100-continue`, refused before the upload), the WebSocket server behind withUpgradeAuth.
import { createServer, type ServerResponse } from 'node:http';
import { WebSocketServer } from 'ws';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { withAuth, withContinueAuth, withUpgradeAuth, type AuthenticatedRequest } from 'launcher-auth/node';

const authority = await TokenAuthority.open({ store: new FileSecretStore('.data/secret.json') });
const api = (req: AuthenticatedRequest, res: ServerResponse): void => {
  res.end(req.auth === undefined ? 'ok' : `hello, key ${req.auth.keyId}`);
};
const wss = new WebSocketServer({ noServer: true });

const server = createServer(withAuth(authority, api));
server.on('checkContinue', withContinueAuth(authority, api));
// Only WebSocket upgrades reach this handler; any other (`Upgrade: h2c`) is an ordinary request for `api`.
server.on(
  'upgrade',
  withUpgradeAuth(authority, (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => ws.send('hi')), {
    protocols: ['websocket'],
  }),
);
server.listen(7878, '127.0.0.1');
