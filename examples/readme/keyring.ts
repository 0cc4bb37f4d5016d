// The secret in the OS keychain (npm install @napi-rs/keyring): the same TokenAuthority, another store.
import { TokenAuthority } from 'launcher-auth';
import { KeyringSecretStore } from 'launcher-auth/keyring';

const store = new KeyringSecretStore({ service: 'com.example.launcher', account: 'automation' });
// No keychain here (no Secret Service, a locked keyring): rejects with ERR_STORE_UNAVAILABLE, within `timeout`.
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
console.log(authority.issue()); // the token, as with a file; `launcher-auth rotate --keyring` regenerates it
await authority.close();
