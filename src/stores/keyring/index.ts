// launcher-auth/keyring: the secret in the OS keychain (needs the optional peer dependency @napi-rs/keyring).
export { KeyringSecretStore, type KeyringSecretStoreOptions } from './store.js';
