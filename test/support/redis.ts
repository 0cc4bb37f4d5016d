// The Redis fixture: one import for every way a test gets Redis. Each deployment skips its suite (with the reason)
// when its Debian tool is missing, and fails instead under LAUNCHER_AUTH_REQUIRE_SERVICES=1; every server it starts
// is a child that dies with the test process (children.ts).
//
//   startRedis()              one redis-server on a free loopback port (optionally persisted, or with a clock shift)
//   sharedRedis()             one server and one client for a whole suite (beforeAll/afterAll)
//   startSentinel()           a primary, a replica and three sentinels
//   startSplitSentinel()      the same with a second replica, every link across a split behind a proxy: split()
//   startFailbackSentinel()   a primary, a replica and sentinels that fail over when told; clients on sides behind
//                             proxies that cut() and heal(); the former primary's replication behind one as well
//   startCluster(key)         a three-primary cluster with replicas, slot moves and failovers
//   startProxy(port)          a TCP proxy in front of any of them: cut(), heal(), moveTo() another server
//   member(), trials()        authorities on RedisSecretStore and fault trials (packages/redis/test/faults/)
export {
  SKIP_REASON,
  connectedClient,
  freePort,
  missingTool,
  sharedRedis,
  startRedis,
  type Client,
  type RedisServer,
} from './redis-server.js';
export { startSentinel, SKIP_REASON as SENTINEL_SKIP_REASON, type SentinelDeployment } from './redis-sentinel.js';
export { startSplitSentinel, type SplitSentinel } from './redis-sentinel-split.js';
export { startFailbackSentinel, type FailbackSentinel } from './redis-sentinel-failback.js';
export { startCluster, SKIP_REASON as CLUSTER_SKIP_REASON, type ClusterDeployment } from './redis-cluster.js';
export { startProxy, type Proxy } from './redis-proxy.js';
