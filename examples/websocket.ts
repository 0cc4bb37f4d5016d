// A WebSocket endpoint guarded by withUpgradeAuth (launcher-auth/node) and the ws package.
// Run: npx tsx examples/websocket.ts — a socket opened with a token is closed the moment that token is regenerated.
import { addAbortListener } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { WebSocketServer } from 'ws';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { withAuth, withUpgradeAuth } from 'launcher-auth/node';

export interface StartOptions {
  /**
   * Port on 127.0.0.1; 0 picks a free one.
   * @default the PORT environment variable, else 7805
   */
  port?: number;
  /**
   * Folder of the secret file.
   * @default the DATA_DIR environment variable, else the repository's .data/websocket (git-ignored)
   */
  dataDir?: string;
}

export interface Started {
  url: string;
  authority: TokenAuthority;
  close(): Promise<void>;
}

/** The close code a client sees when its token was regenerated (1008: policy violation, RFC 6455 §7.4.1). */
export const CLOSE_TOKEN_REVOKED = 1008;

export async function start(options: StartOptions = {}): Promise<Started> {
  const {
    port = Number(process.env.PORT ?? 7805),
    dataDir = process.env.DATA_DIR || fileURLToPath(new URL('../.data/websocket/', import.meta.url)),
  } = options;
  // First run creates the secret file (mode 0600); later runs load it, so the token survives restarts.
  const authority = await TokenAuthority.open({
    store: new FileSecretStore(join(dataDir, 'secret.json')),
    // A reload that fails (the file damaged or made unreadable while running) keeps the current key: say why.
    onStoreError: (error) => console.error(`secret store: ${error.message}`),
  });

  // Plain HTTP requests: the health check, and 404 for an authenticated request to anything else.
  const server = createServer(
    withAuth(authority, (req, res) => {
      const path = (req.url ?? '/').split('?', 1)[0];
      res.writeHead(path === '/health' ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(path === '/health' ? { status: 'ok' } : { error: 'not found' }));
    }),
  );

  const wss = new WebSocketServer({ noServer: true });
  server.on(
    'upgrade',
    withUpgradeAuth(
      authority,
      (req, socket, head) => {
        const auth = req.auth;
        // With healthPath: false no upgrade is exempt, so auth is always set here; the check narrows the type.
        if (auth === undefined || req.url !== '/events') {
          socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
          return;
        }
        wss.handleUpgrade(req, socket, head, (ws) => {
          // addAbortListener also fires when the key was rotated away between the check and now.
          const revoked = addAbortListener(auth.signal, () => ws.close(CLOSE_TOKEN_REVOKED, 'token regenerated'));
          ws.on('close', () => revoked[Symbol.dispose]());
          ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary })); // echo
          ws.send(JSON.stringify({ hello: 'launcher', keyId: auth.keyId }));
        });
      },
      // Only WebSocket upgrades are this handler's. Any other (`Upgrade: h2c` from curl --http2 or Java's
      // HttpClient) goes back to `server` as the ordinary request it also is, answered by the handler above.
      { healthPath: false, protocols: ['websocket'] },
    ),
  );

  try {
    const url = await listen(server, port);
    return {
      url,
      authority,
      async close() {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await authority.close(); // aborts every auth.signal: the open sockets close themselves
        for (const client of wss.clients) client.terminate();
        wss.close();
        await closed;
      },
    };
  } catch (error) {
    await authority.close();
    throw error;
  }
}

function listen(server: Server, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { url, authority } = await start();
  const ws = url.replace(/^http/, 'ws');
  console.log(`WebSocket endpoint listening on ${ws}/events (health check: ${url}/health)`);
  // The token is shown on purpose: this is the launcher's own terminal, like its settings page.
  console.log(
    `curl -i -N -H "Authorization: Bearer ${authority.issue()}" -H "Connection: Upgrade" -H "Upgrade: websocket" ` +
      `-H "Sec-WebSocket-Version: 13" -H "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" ${url}/events`,
  );
}
