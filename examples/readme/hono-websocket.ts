// Hono's WebSocket helper on Node (@hono/node-server with `ws`): the handshake passes through honoAuth too.
import { serve, upgradeWebSocket, type WebSocketServerLike } from '@hono/node-server';
import { Hono } from 'hono';
import { WebSocketServer } from 'ws';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { honoAuth } from 'launcher-auth/hono';

const authority = await TokenAuthority.open({ store: new FileSecretStore('.data/secret.json') });
// subprotocolToken: a page may send the token as `new WebSocket(url, ['launcher.v1', 'authorization.bearer.' + token])`.
const app = new Hono().use(honoAuth(authority, { health: (c) => c.text('ok'), subprotocolToken: true }));
app.get(
  '/ws',
  upgradeWebSocket((c) => {
    const { signal } = c.get('auth');
    return {
      onOpen(_event, ws) {
        // "Regenerate token" ends the connection (1008: policy violation).
        signal.addEventListener('abort', () => ws.close(1008, 'token revoked'), { once: true });
        ws.send('hello');
      },
    };
  }),
);
// The cast is only for `exactOptionalPropertyTypes`, under which ws's `noServer?: boolean` does not match.
const wss = new WebSocketServer({ noServer: true }) as unknown as WebSocketServerLike;
serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: '127.0.0.1', websocket: { server: wss } }, ({ port }) =>
  console.log(`http://127.0.0.1:${port}/`)); // PORT unset: any free port
