// The settings helpers' types, as a settings window imports them.
import { expectTypeOf, test } from 'vitest';
import {
  regenerateToken,
  tokenView,
  type RegenerateOutcome,
  type LauncherAuthError,
  type LauncherAuthErrorCode,
  type RegenerateResult,
  type TokenAuthority,
  type TokenState,
  type TokenView,
} from 'launcher-auth';

test('regenerateToken resolves to an outcome, the state, the token or undefined, a message, and what went wrong', () => {
  expectTypeOf(regenerateToken).parameters.toEqualTypeOf<[TokenAuthority]>();
  expectTypeOf(regenerateToken).returns.resolves.toEqualTypeOf<RegenerateResult>();
  expectTypeOf<RegenerateOutcome>().toEqualTypeOf<
    'regenerated' | 'unchanged' | 'regenerated-elsewhere' | 'unconfirmed' | 'stopped'
  >();
  expectTypeOf<RegenerateResult['token']>().toEqualTypeOf<string | undefined>();
  expectTypeOf<RegenerateResult['message']>().toEqualTypeOf<string>();
  expectTypeOf<RegenerateResult['state']>().toEqualTypeOf<TokenState>();
  expectTypeOf<RegenerateResult['code']>().toEqualTypeOf<LauncherAuthErrorCode | undefined>();
  expectTypeOf<RegenerateResult['cause']>().toEqualTypeOf<LauncherAuthError | undefined>();
});

test('tokenView gives the token, its masked form and the key id, all strings, and whether the token works', () => {
  expectTypeOf(tokenView).returns.toEqualTypeOf<TokenView>();
  expectTypeOf<TokenView>().toEqualTypeOf<{
    readonly token: string;
    readonly masked: string;
    readonly keyId: string;
    readonly state: TokenState;
  }>();
  expectTypeOf<TokenState>().toEqualTypeOf<'ok' | 'suspended' | 'lost' | 'stopped'>();
});
