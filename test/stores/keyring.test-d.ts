// What users import from launcher-auth/keyring, as the type checker sees it.
import { describe, expectTypeOf, it } from 'vitest';
import type { SecretStore } from 'launcher-auth';
import { KeyringSecretStore, type KeyringSecretStoreOptions } from 'launcher-auth/keyring';

describe('launcher-auth/keyring types', () => {
  it('KeyringSecretStore is a SecretStore built from its exported options', () => {
    expectTypeOf<KeyringSecretStore>().toExtend<SecretStore>();
    expectTypeOf<ConstructorParameters<typeof KeyringSecretStore>>().toEqualTypeOf<[KeyringSecretStoreOptions]>();
    expectTypeOf<KeyringSecretStoreOptions>().toEqualTypeOf<{
      service: string;
      account: string;
      pollInterval?: number;
      timeout?: number;
    }>();
    expectTypeOf<KeyringSecretStore['service']>().toEqualTypeOf<string>();
    // @ts-expect-error: service and account are required
    new KeyringSecretStore({ service: 'com.example.launcher' });
  });
});
