// The README's API outline (examples/readme/api.ts) holds for the real package: same members, same types.
import { expectTypeOf, test } from 'vitest';
import { TokenAuthority, type VerifyResult } from 'launcher-auth';
import type { TokenAuthority as Outline, VerifyResult as OutlineResult } from '../examples/readme/api.js';

test('the real TokenAuthority has every member of the outline, with its type', () => {
  expectTypeOf<TokenAuthority>().toExtend<Outline>();
  expectTypeOf(TokenAuthority.open).parameters.toEqualTypeOf<Parameters<typeof Outline.open>>();
});

test('VerifyResult is the union the outline shows', () => {
  expectTypeOf<VerifyResult>().toExtend<OutlineResult>();
  expectTypeOf<OutlineResult>().toExtend<VerifyResult>();
});
