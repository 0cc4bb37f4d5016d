// Quick start: the core API that a launcher's settings page and its automation API share.
import { FileSecretStore, TokenAuthority } from 'launcher-auth';

// Loads the secret file, or creates it (mode 0600) with a fresh secret on the first run.
const store = new FileSecretStore('.data/secret.json'); // holds the key: add .data/ to your .gitignore
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });

// The one permanent token: the settings page shows it; it stays the same across restarts.
const token = authority.issue();
console.log((await authority.verify(token)).ok); // true

// What every adapter asks for each request: is this Authorization header good?
const result = await authority.authenticate(`Bearer ${token}`);
if (result.ok) console.log(result.keyId === authority.keyId); // true

// "Regenerate token": the new token works at once, and every older one is refused at once.
const fresh = await authority.rotate();
console.log((await authority.verify(token)).ok, (await authority.verify(fresh)).ok); // false true

await authority.close();
