// The one check that a value handed to an adapter or a settings helper is an authority, made at set-up.
import type { TokenAuthority } from './token-authority.js';

/** Checks that `authority` is a TokenAuthority, at set-up: a `TypeError` that names `where` otherwise. */
export function assertAuthority(authority: unknown, where: string): asserts authority is TokenAuthority {
  const candidate = authority as Partial<TokenAuthority> | null;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.issue !== 'function' ||
    typeof candidate.rotate !== 'function'
  ) {
    throw new TypeError(`${where}: \`authority\` must be a TokenAuthority (from TokenAuthority.open()).`);
  }
}
