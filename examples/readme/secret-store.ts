// Writing a secret store: keep the secret where the launcher keeps its credentials, here the OS keychain.
import type { SecretRecord, SecretStore } from 'launcher-auth';

/** The two calls an OS keychain binding offers: read and write one password (a service and an account). */
export interface Keychain {
  getPassword(service: string, account: string): Promise<string | null>;
  setPassword(service: string, account: string, password: string): Promise<void>;
}

/**
 * TokenAuthority checks every record load() returns (a key under 32 bytes or a bad date rejects with
 * ERR_INVALID_RECORD), so a store only moves bytes. save() must be durable once it resolves; watch() is optional.
 * Use: TokenAuthority.open({ store: new KeychainSecretStore(yourKeychain) })
 */
export class KeychainSecretStore implements SecretStore {
  constructor(
    private readonly keychain: Keychain,
    private readonly service = 'my-launcher',
  ) {}

  async load(): Promise<SecretRecord | undefined> {
    const text = await this.keychain.getPassword(this.service, 'automation-api');
    if (text === null) return undefined; // nothing yet: TokenAuthority.open generates a secret and saves it
    const { id, key, createdAt } = JSON.parse(text) as { id: string; key: string; createdAt: string };
    return { id, key: Buffer.from(key, 'base64url'), createdAt: new Date(createdAt) };
  }

  async save({ id, key, createdAt }: SecretRecord): Promise<void> {
    const text = JSON.stringify({ id, key: Buffer.from(key).toString('base64url'), createdAt });
    await this.keychain.setPassword(this.service, 'automation-api', text);
  }
}
