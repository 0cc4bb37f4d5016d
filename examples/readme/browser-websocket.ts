// A WebSocket endpoint that web pages can open: the token comes as a protocol entry (subprotocolToken).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { withAuth, withUpgradeAuth } from 'launcher-auth/node';

const store = new FileSecretStore('.data/secret.json'); // holds the key: add .data/ to your .gitignore
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
// The token entry is removed before ws sees the request: the host chooses among the page's other protocols.
const wss = new WebSocketServer({ noServer: true, handleProtocols: (offered) => offered.has('launcher.v1') && 'launcher.v1' });
const onSocket = withUpgradeAuth(
  authority,
  (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.send(`hello, key ${req.auth.keyId}`);
      // "Regenerate token" closes the sockets opened with the old token.
      req.auth.signal.addEventListener('abort', () => ws.close(1008, 'token regenerated'), { once: true });
    }),
  { subprotocolToken: true },
);
const server = createServer(withAuth(authority, (_req, res) => res.writeHead(404).end()));
server.on('upgrade', onSocket);
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo; // PORT unset: any free port
  console.log(`WebSocket on ws://127.0.0.1:${port}/ (protocol launcher.v1)`);
});
