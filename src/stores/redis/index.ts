// launcher-auth/redis: one secret shared by every instance of a service through Redis, revoked on all at once.
export { RedisSecretStore, type RedisSecretStoreOptions } from './store.js';
export type {
  RedisAnyClient,
  RedisClientLike,
  RedisClusterLike,
  RedisClusterNodeClientLike,
  RedisClusterNodeLike,
  RedisSentinelLeaseLike,
  RedisSentinelLike,
  RedisSubscriberLike,
} from './client.js';
