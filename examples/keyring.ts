// A launcher that keeps its automation secret in the OS keychain, or in a 0600 file where there is none at its
// first start (a headless Linux box). Run: npx tsx examples/keyring.ts  (needs @napi-rs/keyring)
// Regenerate from a terminal with: npx launcher-auth rotate --keyring com.example.launcher/automation
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { FileSecretStore, TokenAuthority, isLauncherAuthError } from 'launcher-auth';
import { KeyringSecretStore } from 'launcher-auth/keyring';
import { withAuth } from 'launcher-auth/node';

export interface StartOptions {
  /** The keychain service. @default 'com.example.launcher' */
  service?: string;
  /** The keychain account. @default 'automation' */
  account?: string;
  /** Folder of the fallback secret file. @default the repository's .data/keyring (git-ignored) */
  dataDir?: string;
  /** Port on 127.0.0.1; 0 picks a free one. @default the PORT environment variable, else 7808 */
  port?: number;
}

export interface Started {
  url: string;
  authority: TokenAuthority;
  /** Where the secret is: `'keychain'`, or `'file'` when the keychain was not available at the first start. */
  kept: 'keychain' | 'file';
  /** The secret file, used when `kept` is `'file'`. */
  secretFile: string;
  close(): Promise<void>;
}

/**
 * The keychain when there is one at the first start; otherwise the file. The choice is written down and kept: a
 * launcher that fell back at every start would switch to a new secret (and back) whenever the keyring is locked.
 */
async function openAuthority(
  options: Required<Omit<StartOptions, 'port'>>,
): Promise<Pick<Started, 'authority' | 'kept'>> {
  const choice = join(options.dataDir, 'secret-store.txt');
  // A reload that fails later (a keyring locked while running, a damaged file) keeps the current key: say why.
  const onStoreError = (error: Error): void => console.error(`secret store: ${error.message}`);
  const chosen = (await readFile(choice, 'utf8').catch(() => undefined))?.trim();
  const choose = async (kept: Started['kept']): Promise<void> => {
    await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
    await writeFile(choice, kept, { mode: 0o600 });
  };
  const file = new FileSecretStore(join(options.dataDir, 'secret.json'));
  if (chosen === 'file') return { authority: await TokenAuthority.open({ store: file, onStoreError }), kept: 'file' };
  const keychain = new KeyringSecretStore({ service: options.service, account: options.account });
  try {
    const authority = await TokenAuthority.open({ store: keychain, onStoreError });
    if (chosen === undefined) await choose('keychain');
    return { authority, kept: 'keychain' };
  } catch (error) {
    // Only "no keychain at the first start" falls back; a locked keyring later, or a damaged entry, is reported.
    if (chosen !== undefined || !isLauncherAuthError(error, 'ERR_STORE_UNAVAILABLE')) throw error;
    console.warn(
      `${error.message}\n` +
        `No keychain at this first start: the secret is kept in the file ${file.path} instead. The choice is ` +
        `permanent (recorded in ${choice}): this launcher stays with the file even once a keychain is available. ` +
        `To choose again, stop it and delete both files; the token then changes.`,
    );
    const authority = await TokenAuthority.open({ store: file, onStoreError });
    await choose('file');
    return { authority, kept: 'file' };
  }
}

export async function start(options: StartOptions = {}): Promise<Started> {
  const dataDir = options.dataDir ?? fileURLToPath(new URL('../.data/keyring/', import.meta.url));
  const { authority, kept } = await openAuthority({
    service: options.service ?? 'com.example.launcher',
    account: options.account ?? 'automation',
    dataDir,
  });
  const server: Server = createServer(
    withAuth(authority, (req, res) => {
      const status = req.url === '/health' ? { status: 'ok' } : { kept, keyId: req.auth?.keyId };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(status));
    }),
  );
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? Number(process.env.PORT ?? 7808), '127.0.0.1', resolve);
    });
  } catch (error) {
    await authority.close();
    throw error;
  }
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    authority,
    kept,
    secretFile: join(dataDir, 'secret.json'),
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await authority.close();
      await closed;
    },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { url, authority, kept, secretFile } = await start();
  const where =
    kept === 'keychain' ? 'the OS keychain' : `the file ${secretFile} (chosen at the first start, for good)`;
  console.log(`Automation API listening on ${url}, secret kept in ${where}`);
  // The token is shown on purpose: this is the launcher's own terminal, like its settings page.
  console.log(`curl -H "Authorization: Bearer ${authority.issue()}" ${url}/api/status`);
}
