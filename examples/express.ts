// A launcher's automation API on Express (5 or 4), guarded by launcher-auth/express. Run: npx tsx examples/express.ts
// GET /health is open; every other request needs `Authorization: Bearer <token>` or gets an empty 401.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import express from 'express';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { expressAuth } from 'launcher-auth/express';

export interface StartOptions {
  /**
   * Port on 127.0.0.1; 0 picks a free one.
   * @default the PORT environment variable, else 7802
   */
  port?: number;
  /**
   * Folder of the secret file.
   * @default the DATA_DIR environment variable, else the repository's .data/express (git-ignored)
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
    port = Number(process.env.PORT ?? 7802),
    dataDir = process.env.DATA_DIR || fileURLToPath(new URL('../.data/express/', import.meta.url)),
  } = options;
  // First run creates the secret file (mode 0600); later runs load it, so the token survives restarts.
  const authority = await TokenAuthority.open({
    store: new FileSecretStore(join(dataDir, 'secret.json')),
    // A reload that fails (the file damaged or made unreadable while running) keeps the current key: say why.
    onStoreError: (error) => console.error(`secret store: ${error.message}`),
  });
  const running: string[] = [];

  const app = express();
  // Before every route: unknown paths without a token get 401 too, not a 404 that would list what exists.
  app.use(expressAuth(authority));
  app.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/api/running', (_req, res) => {
    res.json({ running });
  });
  app.post('/api/apps/:app/launch', (req, res) => {
    const name = req.params.app;
    if (!APPS.includes(name)) {
      res.status(404).json({ error: 'not found' });
      return;
    }
    running.push(name); // simulated: a real launcher would start the app here
    res.status(202).json({ launched: name });
  });

  const server = createServer(app);
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
  console.log(`Automation API (Express) listening on ${url}`);
  // The token is shown on purpose: this is the launcher's own terminal, like its settings page.
  console.log(`curl -H "Authorization: Bearer ${authority.issue()}" ${url}/api/running`);
}
