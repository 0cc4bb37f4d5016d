// A launcher's automation API on Fastify 5, guarded by launcher-auth/fastify. Run: npx tsx examples/fastify.ts
// GET /health is open; every other request needs `Authorization: Bearer <token>` or gets an empty 401.
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Fastify from 'fastify';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { fastifyAuth } from 'launcher-auth/fastify';

export interface StartOptions {
  /**
   * Port on 127.0.0.1; 0 picks a free one.
   * @default the PORT environment variable, else 7803
   */
  port?: number;
  /**
   * Folder of the secret file.
   * @default the DATA_DIR environment variable, else the repository's .data/fastify (git-ignored)
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
    port = Number(process.env.PORT ?? 7803),
    dataDir = process.env.DATA_DIR || fileURLToPath(new URL('../.data/fastify/', import.meta.url)),
  } = options;
  // First run creates the secret file (mode 0600); later runs load it, so the token survives restarts.
  const authority = await TokenAuthority.open({
    store: new FileSecretStore(join(dataDir, 'secret.json')),
    // A reload that fails (the file damaged or made unreadable while running) keeps the current key: say why.
    onStoreError: (error) => console.error(`secret store: ${error.message}`),
  });
  const running: string[] = [];

  const app = Fastify();
  // Registered first, its hook covers every route of the app; the health exemption follows the route that
  // matched, so no other handler is reachable without a token.
  await app.register(fastifyAuth, { authority });
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/api/running', async () => ({ running }));
  app.post<{ Params: { app: string } }>('/api/apps/:app/launch', async (request, reply) => {
    const name = request.params.app;
    if (!APPS.includes(name)) return reply.code(404).send({ error: 'not found' });
    running.push(name); // simulated: a real launcher would start the app here
    return reply.code(202).send({ launched: name, keyId: request.auth?.keyId });
  });

  try {
    await app.listen({ port, host: '127.0.0.1' });
  } catch (error) {
    await app.close();
    await authority.close();
    throw error;
  }
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : port}`;
  return {
    url,
    authority,
    async close() {
      await authority.close();
      await app.close();
    },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { url, authority } = await start();
  console.log(`Automation API (Fastify) listening on ${url}`);
  // The token is shown on purpose: this is the launcher's own terminal, like its settings page.
  console.log(`curl -H "Authorization: Bearer ${authority.issue()}" ${url}/api/running`);
}
