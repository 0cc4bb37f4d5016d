// @ts-check
// CommonJS: require() and no top-level await, so the authority is opened inside an async function.
const { createServer } = require('node:http');
const { FileSecretStore, TokenAuthority } = require('launcher-auth');
const { withAuth } = require('launcher-auth/node');

async function main() {
  const authority = await TokenAuthority.open({ store: new FileSecretStore('.data/secret.json') });
  const handler = withAuth(authority, (req, res) => res.end(`hello, key ${req.auth.keyId}`), {
    health: (_req, res) => res.end('ok'),
  });
  const server = createServer(handler).listen(Number(process.env.PORT ?? 7878), '127.0.0.1', () => {
    const { port } = /** @type {import('node:net').AddressInfo} */ (server.address()); // PORT=0: a free port
    console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:${port}/`);
  });
}

main(); // an error (an unreadable secret file, a port in use) ends the process, as with top-level await
