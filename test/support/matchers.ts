// Matchers of the suite, loaded for every test file by the vitest config (setupFiles). A token never reaches a
// failure message: `expect(a === b).toBe(true)` said nothing of what differed, toEqual would print both tokens.
import { expect } from 'vitest';

/** Where two strings first differ, described without showing either. */
function difference(actual: string, expected: string): string {
  if (actual.length !== expected.length) return `lengths ${actual.length} and ${expected.length}`;
  let at = 0;
  while (at < actual.length && actual[at] === expected[at]) at += 1;
  // A JWT's parts are header.payload.signature: name the part, which tells a key change from a claim change.
  const part = ['header', 'payload', 'signature'][actual.slice(0, at).split('.').length - 1] ?? 'text';
  return `both ${actual.length} characters, first different at character ${at} (in the ${part})`;
}

expect.extend({
  toBeSameToken(received: unknown, expected: unknown) {
    if (typeof received !== 'string' || typeof expected !== 'string') {
      return {
        pass: false,
        message: () => `expected two token strings, got ${typeof received} and ${typeof expected}`,
      };
    }
    const pass = received === expected;
    return {
      pass,
      message: () =>
        pass
          ? 'expected two different tokens, got the same one twice'
          : `expected the same token, got two: ${difference(received, expected)}`,
    };
  },
});

declare module 'vitest' {
  // The type parameter must read exactly as vitest declares it for the declarations to merge.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- vitest declares Matchers<T = any>; merging needs the same default
  interface Matchers<T = any> {
    /** The same token string as `expected`; a failure says where they differ, never what either holds. */
    toBeSameToken(expected: string): T;
  }
}
