// launcher-auth/testing: conformance checks for integrators' own servers and secret stores.
export { checkServer, type CheckCase, type CheckReport, type CheckServerOptions } from './check-server.js';
export {
  checkSecretStore,
  type CheckSecretStoreOptions,
  type StoreCheckCase,
  type StoreCheckReport,
} from './check-store.js';
