// An Electron launcher's main process: it holds the authority (the secret sealed by safeStorage, under
// secretPath()), serves the automation API on 127.0.0.1, and answers the settings window's Show, Copy and
// Regenerate over IPC. Install: npm install launcher-auth (and electron, as for any Electron app).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { BrowserWindow, app, clipboard, ipcMain, type IpcMainInvokeEvent } from 'electron';
import { TokenAuthority, regenerateToken, secretPath, tokenView } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';
import { SafeStorageSecretStore } from './safe-storage-store.js';
import { CHANNELS, type RegenerateView, type SettingsView } from './settings-api.js';

const page = new URL('./index.html', import.meta.url);

await app.whenReady(); // safeStorage can seal only once the app is ready
const authority = await TokenAuthority.open({
  store: new SafeStorageSecretStore(secretPath('my-launcher', 'automation-api.secret')),
  onStoreError: (error) => console.error(`secret store: ${error.message}`),
});

// The automation API: loopback only, so that nothing on the network reaches it. PORT, or any free port.
const api = createServer(
  withAuth(authority, (req, res) => res.end(`hello, key ${req.auth.keyId}\n`), {
    health: (_req, res) => res.end('ok'),
  }),
);
await new Promise<void>((resolve) => api.listen(Number(process.env['PORT'] ?? 0), '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
console.log(`automation API on ${url}`);

const view = (): SettingsView => {
  const { masked, keyId } = tokenView(authority);
  return { masked, keyId, url };
};

/** Only the settings page itself may ask: not another window, not a frame of another origin. */
function fromSettingsPage(event: IpcMainInvokeEvent): void {
  if (event.senderFrame?.url !== page.href) throw new Error('not the settings window');
}

ipcMain.handle(CHANNELS.view, (event) => {
  fromSettingsPage(event);
  return view();
});
ipcMain.handle(CHANNELS.show, (event) => {
  fromSettingsPage(event);
  return tokenView(authority).token;
});
ipcMain.handle(CHANNELS.copy, async (event) => {
  fromSettingsPage(event);
  await clipboard.writeText(tokenView(authority).token);
});
ipcMain.handle(CHANNELS.regenerate, async (event): Promise<RegenerateView> => {
  fromSettingsPage(event);
  const { outcome, message } = await regenerateToken(authority);
  return { outcome, message, view: outcome === 'stopped' ? undefined : view() };
});

const settings = new BrowserWindow({
  width: 640,
  height: 420,
  webPreferences: {
    preload: fileURLToPath(new URL('./preload.cjs', import.meta.url)),
    contextIsolation: true,
    sandbox: true,
  },
});
await settings.loadURL(page.href);

app.on('window-all-closed', () => {
  // The API stops with the launcher: close() refuses every token from then on and ends long-lived responses.
  api.close();
  void authority.close().then(() => app.quit());
});
