// Where the secret file lives: the user's own configuration folder, as each platform names it.
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';

function secretPath(app: string): string {
  const { APPDATA, XDG_CONFIG_HOME } = process.env;
  if (process.platform === 'win32') return join(APPDATA ?? join(homedir(), 'AppData', 'Roaming'), app, 'secret.json');
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support', app, 'secret.json');
  // XDG: an unset, empty or relative XDG_CONFIG_HOME means ~/.config.
  const xdg = XDG_CONFIG_HOME !== undefined && isAbsolute(XDG_CONFIG_HOME) ? XDG_CONFIG_HOME : undefined;
  return join(xdg ?? join(homedir(), '.config'), app, 'secret.json');
}

// The folder is made 0700 and the file 0600 on first use; Electron's app.getPath('userData') is the same place.
const store = new FileSecretStore(secretPath('my-launcher'));
const authority = await TokenAuthority.open({ store, onStoreError: (error) => console.error(error.message) });
console.log(authority.keyId); // the key's id, not a secret
