// Where the secret file lives: the user's own configuration folder, as each platform names it.
import { FileSecretStore, TokenAuthority, secretPath } from 'launcher-auth';

// ~/.config/my-launcher/secret.json on Linux (or under $XDG_CONFIG_HOME), ~/Library/Application Support/my-launcher/
// on macOS, %APPDATA%\my-launcher\ on Windows: the same file whatever folder the launcher was started from.
// The folder is made 0700 and the file 0600 on first use; Electron's app.getPath('userData') is the same place.
const store = new FileSecretStore(secretPath('my-launcher'));
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
console.log(authority.keyId); // the key's id, not a secret
