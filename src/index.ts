// launcher-auth: the framework-free entry. Adapters live under launcher-auth/node, /express, /fastify, /fetch.
export { TokenAuthority } from './core/token-authority.js';
export {
  regenerateToken,
  tokenView,
  type RegenerateOutcome,
  type RegenerateResult,
  type TokenView,
} from './core/settings.js';
export { LauncherAuthError, isLauncherAuthError, type LauncherAuthErrorCode } from './core/errors.js';
export { MemorySecretStore } from './stores/memory.js';
export { FileSecretStore, type FileSecretStoreOptions } from './stores/file/store.js';
export { secretPath } from './stores/secret-path.js';
export type {
  AuthContext,
  JWTPayload,
  RejectReason,
  RotateEvent,
  SaveOptions,
  SecretRecord,
  SecretStore,
  StoreLink,
  TokenAuthorityOptions,
  VerifyResult,
} from './core/types.js';
export type { AuthOptions, Peer, RejectInfo } from './core/gate.js';
export type { CorsOptions } from './core/cors.js';
