// @launcher-auth/redis: one secret shared by every instance of a service through Redis, revoked on all at once.
export { RedisSecretStore } from './store.js';
export type { RedisSecretStoreOptions } from './options.js';
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
