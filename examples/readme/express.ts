// Express 4 or 5: the middleware goes before the routes, so unknown paths get 401 too, not 404.
import express from 'express';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { authenticated, expressAuth } from 'launcher-auth/express';

const store = new FileSecretStore('.data/secret.json'); // holds the key: add .data/ to your .gitignore
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });

const app = express();
app.use(expressAuth(authority));
app.get('/health', (_req, res) => res.send('ok'));
app.get('/apps', authenticated((req, res) => res.json({ apps: ['editor'], keyId: req.auth.keyId })));
app.listen(7878, '127.0.0.1');
console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:7878/apps`);
