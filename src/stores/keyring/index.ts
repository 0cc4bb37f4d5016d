// launcher-auth/keyring: KeyringSecretStore.
export {};
