// launcher-auth: the framework-free entry. Adapters live under launcher-auth/node, /express, /fastify, /fetch, /hono
// and /koa.
export { TokenAuthority } from './authority/token-authority.js';
export {
  regenerateToken,
  tokenView,
  type RegenerateOutcome,
  type RegenerateResult,
  type TokenView,
} from './authority/settings.js';
export { LauncherAuthError, isLauncherAuthError, type LauncherAuthErrorCode } from './authority/errors.js';
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
  TokenState,
  VerifyResult,
} from './authority/types.js';
export type { AuthOptions, Peer, RejectInfo } from './gate/gate.js';
export type { CorsOptions } from './gate/cors.js';
