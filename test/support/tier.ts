// Which tier runs: `npm test` (every change must pass it, in about three minutes) or `npm run test:deep` (what only
// CI needs: the simulator's wide sweep, every fault trial at its full count). The deep tier sets
// LAUNCHER_AUTH_DEEP=1; a test that runs in both tiers asks `deepOr()` for its count.

export const DEEP = process.env['LAUNCHER_AUTH_DEEP'] === '1';

/** `full` in the deep tier, `quick` in `npm test`. */
export function deepOr(full: number, quick: number): number {
  return DEEP ? full : quick;
}
