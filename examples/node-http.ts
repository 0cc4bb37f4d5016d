// A launcher's automation API on plain node:http, guarded by launcher-auth/node. Run: npx tsx examples/node-http.ts
// GET /health is open; every other request needs `Authorization: Bearer <token>` or gets an empty 401.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';

export interface StartOptions {
  /**
   * Port on 127.0.0.1; 0 picks a free one.
   * @default the PORT environment variable, else 7801
   */
  port?: number;
  /**
   * Folder of the secret file.
   * @default the DATA_DIR environment variable, else the repository's .data/node-http (git-ignored)
   */
  dataDir?: string;
}

export interface Started {
  url: string;
  authority: TokenAuthority;
  close(): Promise<void>;
}

const APPS = ['editor', 'terminal', 'browser'];

export async function start(options: StartOptions = {}): Promise<Started> {
  const {
    port = Number(process.env.PORT ?? 7801),
    dataDir = process.env.DATA_DIR || fileURLToPath(new URL('../.data/node-http/', import.meta.url)),
  } = options;
  // First run creates the secret file (mode 0600); later runs load it, so the token survives restarts.
  const authority = await TokenAuthority.open({
    store: new FileSecretStore(join(dataDir, 'secret.json')),
    // A reload that fails (the file damaged or made unreadable while running) keeps the current key: say why.
    onStoreError: (error) => console.error(`secret store: ${error.message}`),
  });
  const running: string[] = [];

  const server = createServer(
    withAuth(authority, (req, res) => {
      // Only GET/HEAD /health get here without a token; every other request below is authenticated.
      const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
      if (path === '/health') return send(res, 200, { status: 'ok' });
      if (req.method === 'GET' && path === '/api/running') return send(res, 200, { running });
      const app = /^\/api\/apps\/([^/]+)\/launch$/.exec(path)?.[1];
      if (req.method === 'POST' && app !== undefined && APPS.includes(app)) {
        running.push(app); // simulated: a real launcher would start the app here
        return send(res, 202, { launched: app, keyId: req.auth?.keyId });
      }
      send(res, 404, { error: 'not found' });
    }),
  );

  try {
    const url = await listen(server, port);
    return {
      url,
      authority,
      async close() {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await authority.close();
        await closed;
      },
    };
  } catch (error) {
    await authority.close();
    throw error;
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
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
  console.log(`Automation API (node:http) listening on ${url}`);
  // The token is shown on purpose: this is the launcher's own terminal, like its settings page.
  console.log(`curl -H "Authorization: Bearer ${authority.issue()}" ${url}/api/running`);
}
