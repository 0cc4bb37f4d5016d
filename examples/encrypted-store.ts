// A SecretStore that keeps the signing key encrypted at rest under a key the host supplies (from the OS keychain),
// and a node:http launcher that uses it. Run: npx tsx examples/encrypted-store.ts
//
// Design: EncryptedSecretStore wraps another SecretStore and transforms the record on its way through. `id` and
// `createdAt` pass as they are; in place of the key the inner store keeps a sealed blob:
//   0x01 (format) ‖ IV (12 random bytes, new on every save) ‖ AES-256-GCM ciphertext of the key ‖ tag (16 bytes)
// with the record id as additional authenticated data, so a sealed key moved under another id fails to open.
// Wrapping (rather than writing a file format of its own) keeps what the inner store already does right: for a
// FileSecretStore the atomic, durable, mode-0600 writes and watch(); and it works the same over any other store.
// The cost: the inner store sees the blob as "the key". Open that file only through EncryptedSecretStore; a
// plain FileSecretStore (or the CLI) reading it would take the blob for a key and sign tokens nobody accepts.
// createdAt is not authenticated: an inner store that rounds dates would otherwise fail to open its own records,
// and altering it changes only the token's `iat`, not which key verifies.
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { mkdir, open, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { FileSecretStore, LauncherAuthError, TokenAuthority, type SecretRecord, type SecretStore } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';

const FORMAT = 0x01;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const MIN_KEY_BYTES = 32;

/** Keeps the key of every record AES-256-GCM encrypted in `inner`, under the 32-byte `hostKey`. */
export class EncryptedSecretStore implements SecretStore {
  readonly #inner: SecretStore;
  readonly #hostKey: KeyObject;
  /** Set exactly when the inner store reports changes, so TokenAuthority follows this store as it would that one. */
  readonly watch?: NonNullable<SecretStore['watch']>;

  constructor(inner: SecretStore, hostKey: Uint8Array) {
    if (typeof inner?.load !== 'function' || typeof inner.save !== 'function') {
      throw new TypeError('EncryptedSecretStore: `inner` must be a SecretStore (an object with load() and save()).');
    }
    if (!(hostKey instanceof Uint8Array) || hostKey.byteLength !== 32) {
      throw new TypeError('EncryptedSecretStore: `hostKey` must be a Uint8Array of exactly 32 bytes (AES-256).');
    }
    this.#inner = inner;
    this.#hostKey = createSecretKey(hostKey); // a copy: the caller may wipe its buffer
    const watch = inner.watch;
    if (typeof watch === 'function') this.watch = (onChange, link) => watch.call(inner, onChange, link);
  }

  async load(): Promise<SecretRecord | undefined> {
    const stored = await this.#inner.load();
    if (stored === undefined) return undefined;
    return { id: stored.id, key: this.#unseal(stored), createdAt: stored.createdAt };
  }

  async save(record: SecretRecord): Promise<void> {
    const { id, key } = record;
    if (typeof id !== 'string' || !(key instanceof Uint8Array) || key.byteLength < MIN_KEY_BYTES) {
      throw new LauncherAuthError(
        'ERR_INVALID_RECORD',
        'EncryptedSecretStore: refusing to save an unusable record ' +
          `(a string id and a key of at least ${MIN_KEY_BYTES} bytes are required).`,
      );
    }
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#hostKey, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(id, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(key), cipher.final()]);
    const sealed = Buffer.concat([Buffer.of(FORMAT), iv, ciphertext, cipher.getAuthTag()]);
    await this.#inner.save({ id, key: new Uint8Array(sealed), createdAt: record.createdAt });
  }

  #unseal(stored: SecretRecord): Uint8Array {
    const sealed = stored.key;
    if (sealed.byteLength < 1 + IV_BYTES + MIN_KEY_BYTES + TAG_BYTES || sealed[0] !== FORMAT) {
      throw new LauncherAuthError(
        'ERR_STORE_CORRUPT',
        'EncryptedSecretStore: the stored record holds no sealed key (was it written by a plain store?). ' +
          'It was left untouched.',
      );
    }
    const decipher = createDecipheriv('aes-256-gcm', this.#hostKey, sealed.subarray(1, 1 + IV_BYTES), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(Buffer.from(stored.id, 'utf8'));
    decipher.setAuthTag(sealed.subarray(sealed.byteLength - TAG_BYTES));
    const ciphertext = sealed.subarray(1 + IV_BYTES, sealed.byteLength - TAG_BYTES);
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
    } catch {
      // GCM cannot tell the two apart, and the message must not carry anything of the key or the blob.
      throw new LauncherAuthError(
        'ERR_STORE_CORRUPT',
        'EncryptedSecretStore: the stored secret cannot be decrypted: the host key is not the one it was saved ' +
          'with, or the stored record was altered. It was left untouched; restore the host key or the record, or ' +
          'move the record away to generate a new secret (every token issued so far will stop working).',
      );
    }
    const key = new Uint8Array(plain); // its own memory, not a slice of Node's shared buffer pool
    plain.fill(0);
    return key;
  }
}

/**
 * Stand-in for the OS keychain, so that the example runs anywhere: a random host key in a 0600 file. A real
 * launcher asks the keychain instead (@napi-rs/keyring, Electron's safeStorage, the macOS Keychain,
 * Windows DPAPI) and never keeps the host key next to the file it protects.
 */
async function hostKeyStandIn(dataDir: string): Promise<Uint8Array> {
  const path = join(dataDir, 'host-key.stand-in');
  try {
    return new Uint8Array(await readFile(path));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  const handle = await open(path, 'wx', 0o600);
  try {
    await handle.writeFile(key);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return new Uint8Array(key);
}

export interface StartOptions {
  /**
   * Port on 127.0.0.1; 0 picks a free one.
   * @default the PORT environment variable, else 7806
   */
  port?: number;
  /**
   * Folder of the encrypted secret file.
   * @default the DATA_DIR environment variable, else the repository's .data/encrypted-store (git-ignored)
   */
  dataDir?: string;
  /** The 32-byte host key. @default a stand-in for the OS keychain, kept in `dataDir` */
  hostKey?: Uint8Array;
}

export interface Started {
  url: string;
  authority: TokenAuthority;
  close(): Promise<void>;
}

export async function start(options: StartOptions = {}): Promise<Started> {
  const {
    port = Number(process.env.PORT ?? 7806),
    dataDir = process.env.DATA_DIR || fileURLToPath(new URL('../.data/encrypted-store/', import.meta.url)),
  } = options;
  const hostKey = options.hostKey ?? (await hostKeyStandIn(dataDir));
  const store = new EncryptedSecretStore(new FileSecretStore(join(dataDir, 'secret.json')), hostKey);
  // A reload that fails (the file damaged, the host key changed) keeps the current key: say why.
  const authority = await TokenAuthority.open({
    store,
    onStoreError: (error) => console.error(`secret store: ${error.message}`),
  });

  const server = createServer(
    withAuth(authority, (req, res) => {
      // Only GET/HEAD /health get here without a token.
      const path = (req.url ?? '/').split('?', 1)[0];
      const body = path === '/health' ? { status: 'ok' } : path === '/api/status' ? { store: 'encrypted' } : undefined;
      res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body ?? { error: 'not found' }));
    }),
  );

  try {
    const url = await listen(server, port);
    return {
      url,
      authority,
      async close() {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await authority.close();
        await closed;
      },
    };
  } catch (error) {
    await authority.close();
    throw error;
  }
}

function listen(server: Server, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { url, authority } = await start();
  console.log(`Automation API (encrypted secret store) listening on ${url}`);
  // The token is shown on purpose: this is the launcher's own terminal, like its settings page.
  console.log(`curl -H "Authorization: Bearer ${authority.issue()}" ${url}/api/status`);
}
