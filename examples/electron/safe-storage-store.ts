// A SecretStore for Electron launchers: the secret sealed by the operating system through Electron's safeStorage
// (the Keychain on macOS, DPAPI on Windows, the Secret Service or KWallet on Linux), in a file of the user's
// configuration folder. It runs only in Electron's main process, once `app.whenReady()` has resolved (see main.ts).
import { safeStorage } from 'electron';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { LauncherAuthError, type SecretRecord, type SecretStore } from 'launcher-auth';

export class SafeStorageSecretStore implements SecretStore {
  /** The sealed file: only safeStorage, as the same OS user and app, can open it. */
  readonly path: string;

  /** @param path - where the sealed file goes, e.g. `secretPath('my-launcher', 'automation-api.secret')`. */
  constructor(path: string) {
    this.path = path;
  }

  async load(): Promise<SecretRecord | undefined> {
    let sealed: Buffer;
    try {
      sealed = await readFile(this.path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined; // TokenAuthority.open creates one
      throw new LauncherAuthError('ERR_STORE_IO', `cannot read ${this.path}`, { cause: error });
    }
    await requireEncryption();
    let text: string;
    try {
      // The asynchronous API (Electron deprecates the synchronous one). Its `shouldReEncrypt` is left to
      // the next save: a load never writes.
      ({ result: text } = await safeStorage.decryptStringAsync(sealed));
    } catch (error) {
      // Another OS user's or another machine's file, or a damaged one: never replaced silently.
      throw new LauncherAuthError('ERR_STORE_CORRUPT', `${this.path} cannot be decrypted by this user`, {
        cause: error,
      });
    }
    const { id, key, createdAt } = JSON.parse(text) as { id: string; key: string; createdAt: string };
    // TokenAuthority checks the record (key length, id, date) and refuses a bad one with ERR_INVALID_RECORD.
    return { id, key: Buffer.from(key, 'base64url'), createdAt: new Date(createdAt) };
  }

  async save(record: SecretRecord, options?: { signal?: AbortSignal }): Promise<void> {
    await requireEncryption();
    const text = JSON.stringify({
      id: record.id,
      key: Buffer.from(record.key).toString('base64url'),
      createdAt: record.createdAt,
    });
    const sealed = await safeStorage.encryptStringAsync(text);
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    // Write a temporary file, flush it, then rename it over the old one: a crash leaves the old or the new secret.
    const temporary = `${this.path}.${process.pid}.tmp`;
    const file = await open(temporary, 'w', 0o600);
    try {
      await file.writeFile(sealed);
      await file.sync();
    } finally {
      await file.close();
    }
    if (options?.signal?.aborted === true) {
      // rotate() gave up on this save: change nothing, as the SecretStore contract asks.
      await rm(temporary, { force: true });
      throw options.signal.reason;
    }
    await rename(temporary, this.path);
  }
}

async function requireEncryption(): Promise<void> {
  // Before `app.whenReady()`, or on Linux without a keyring, there is nothing to seal with.
  if (!(await safeStorage.isAsyncEncryptionAvailable())) {
    throw new LauncherAuthError('ERR_STORE_IO', 'safeStorage cannot encrypt yet: open the store after app.whenReady()');
  }
  // On Linux without a Secret Service or KWallet, Chromium "encrypts" with a fixed, public password.
  if (process.platform === 'linux' && safeStorage.getSelectedStorageBackend() === 'basic_text') {
    throw new LauncherAuthError(
      'ERR_STORE_IO',
      'safeStorage has no keyring on this Linux session (basic_text): not safe for a secret',
    );
  }
}
