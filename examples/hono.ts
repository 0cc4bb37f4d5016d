// A launcher's automation API on Hono (served by @hono/node-server), guarded by launcher-auth/hono.
// Run: npx tsx examples/hono.ts — GET /health is open; every other request needs the token or gets an empty 401.
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { honoAuth } from 'launcher-auth/hono';

export interface StartOptions {
  /**
   * Port on 127.0.0.1; 0 picks a free one.
   * @default the PORT environment variable, else 7804
   */
  port?: number;
  /**
   * Folder of the secret file.
   * @default the DATA_DIR environment variable, else the repository's .data/hono (git-ignored)
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
    port = Number(process.env.PORT ?? 7804),
    dataDir = process.env.DATA_DIR || fileURLToPath(new URL('../.data/hono/', import.meta.url)),
  } = options;
  // First run creates the secret file (mode 0600); later runs load it, so the token survives restarts.
  const authority = await TokenAuthority.open({
    store: new FileSecretStore(join(dataDir, 'secret.json')),
    // A reload that fails (the file damaged or made unreadable while running) keeps the current key: say why.
    onStoreError: (error) => console.error(`secret store: ${error.message}`),
  });
  const running: string[] = [];

  // The first middleware, for every path: unknown paths without a token get 401, not a 404. It answers the
  // health check itself, so every route below has `c.get('auth')`.
  const app = new Hono().use(honoAuth(authority, { health: (c) => c.json({ status: 'ok' }) }));
  app.get('/api/running', (c) => c.json({ running }));
  app.post('/api/apps/:app/launch', (c) => {
    const name = c.req.param('app');
    if (!APPS.includes(name)) return c.json({ error: 'not found' }, 404);
    running.push(name); // simulated: a real launcher would start the app here
    return c.json({ launched: name, keyId: c.get('auth').keyId }, 202);
  });

  try {
    const { server, address } = await new Promise<{ server: ReturnType<typeof serve>; address: AddressInfo }>(
      (resolve, reject) => {
        const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, (address) =>
          resolve({ server, address }),
        );
        server.once('error', reject);
      },
    );
    return {
      url: `http://127.0.0.1:${address.port}`,
      authority,
      async close() {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        if ('closeAllConnections' in server) server.closeAllConnections();
        await authority.close();
        await closed;
      },
    };
  } catch (error) {
    await authority.close();
    throw error;
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { url, authority } = await start();
  console.log(`Automation API (Hono) listening on ${url}`);
  // The token is shown on purpose: this is the launcher's own terminal, like its settings page.
  console.log(`curl -H "Authorization: Bearer ${authority.issue()}" ${url}/api/running`);
}
