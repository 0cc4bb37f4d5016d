// The settings helpers' types, as a settings window imports them.
import { expectTypeOf, test } from 'vitest';
import {
  regenerateToken,
  tokenView,
  type RegenerateOutcome,
  type RegenerateResult,
  type TokenAuthority,
  type TokenView,
} from 'launcher-auth';

test('regenerateToken resolves to an outcome, the token or undefined, and a message', () => {
  expectTypeOf(regenerateToken).parameters.toEqualTypeOf<[TokenAuthority]>();
  expectTypeOf(regenerateToken).returns.resolves.toEqualTypeOf<RegenerateResult>();
  expectTypeOf<RegenerateOutcome>().toEqualTypeOf<
    'regenerated' | 'unchanged' | 'regenerated-elsewhere' | 'unconfirmed' | 'stopped'
  >();
  expectTypeOf<RegenerateResult['token']>().toEqualTypeOf<string | undefined>();
  expectTypeOf<RegenerateResult['message']>().toEqualTypeOf<string>();
});

test('tokenView gives the token, its masked form and the key id, all strings, and whether the token is lost', () => {
  expectTypeOf(tokenView).returns.toEqualTypeOf<TokenView>();
  expectTypeOf<TokenView>().toEqualTypeOf<{
    readonly token: string;
    readonly masked: string;
    readonly keyId: string;
    readonly lost: boolean;
  }>();
});
