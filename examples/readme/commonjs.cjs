// @ts-check
// CommonJS: require() and no top-level await, so the authority is opened inside an async function.
const { createServer } = require('node:http');
const { FileSecretStore, TokenAuthority, secretPath } = require('launcher-auth');
const { withAuth } = require('launcher-auth/node');

async function main() {
  const store = new FileSecretStore(secretPath('my-launcher')); // in the user's configuration folder
  const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
  const handler = withAuth(authority, (req, res) => res.end(`hello, key ${req.auth.keyId}`), {
    health: (_req, res) => res.end('ok'),
  });
  const server = createServer(handler).listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
    const { port } = /** @type {import('node:net').AddressInfo} */ (server.address()); // PORT unset: any free port
    console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:${port}/`);
  });
}

main(); // an error (an unreadable secret file, a port in use) ends the process, as with top-level await
