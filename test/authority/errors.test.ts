// LauncherAuthError and its guard: the guard checks the name and a known code, not only instanceof, so it
// holds for an error from another copy of the package and for nothing that merely looks like one.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { LauncherAuthError, isLauncherAuthError, type LauncherAuthErrorCode } from 'launcher-auth';

const CODES: LauncherAuthErrorCode[] = [
  'ERR_STORE_CORRUPT',
  'ERR_STORE_PERMISSIONS',
  'ERR_STORE_IO',
  'ERR_STORE_UNAVAILABLE',
  'ERR_INVALID_RECORD',
  'ERR_SAVE_CONFLICT',
  'ERR_SAVE_FAILED',
  'ERR_SAVE_UNCERTAIN',
  'ERR_ROTATION_SUPERSEDED',
  'ERR_STORE_ROLLBACK',
  'ERR_STORE_UNREPLICATED',
  'ERR_CLOSED',
  'ERR_KEY_ROTATED',
];

describe('LauncherAuthError', () => {
  it('carries name, code, message and cause, and is an Error with a stack', () => {
    const cause = new Error('EIO: i/o error, write');
    const error = new LauncherAuthError('ERR_SAVE_FAILED', 'Could not save the new secret.', { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(LauncherAuthError);
    expect(error.name).toBe('LauncherAuthError');
    expect(error.code).toBe('ERR_SAVE_FAILED');
    expect(error.message).toBe('Could not save the new secret.');
    expect(error.cause).toBe(cause);
    expect(error.stack).toMatch(/^LauncherAuthError: Could not save the new secret\./);
    expect(String(error)).toBe('LauncherAuthError: Could not save the new secret.');
  });

  it('has no cause unless given one', () => {
    const error = new LauncherAuthError('ERR_CLOSED', 'closed');
    expect('cause' in error).toBe(false);
  });
});

describe('isLauncherAuthError', () => {
  it.each(CODES)(
    'is true for a LauncherAuthError with %s, with no code or that code, false for another code',
    (code) => {
      const error = new LauncherAuthError(code, 'm');
      expect(isLauncherAuthError(error)).toBe(true);
      expect(isLauncherAuthError(error, code)).toBe(true);
      const other = CODES.find((candidate) => candidate !== code) as LauncherAuthErrorCode;
      expect(isLauncherAuthError(error, other)).toBe(false);
    },
  );

  it('holds for an error from another copy of the package: same name, a known code', () => {
    class CopiedLauncherAuthError extends Error {
      readonly code = 'ERR_CLOSED';
      override readonly name = 'LauncherAuthError';
    }
    const copy = new CopiedLauncherAuthError('closed');
    expect(copy).not.toBeInstanceOf(LauncherAuthError);
    expect(isLauncherAuthError(copy)).toBe(true);
    expect(isLauncherAuthError(copy, 'ERR_CLOSED')).toBe(true);
    expect(isLauncherAuthError(copy, 'ERR_KEY_ROTATED')).toBe(false);
  });

  it.each([
    ['a plain object with a code but no name', { code: 'ERR_CLOSED' }],
    ['a plain object with a code and another name', { name: 'Error', code: 'ERR_CLOSED' }],
    ['an Error with a known code', Object.assign(new Error('x'), { code: 'ERR_CLOSED' })],
    ['a Node system error', Object.assign(new Error('EIO'), { code: 'EIO', errno: -5 })],
    ['the right name with an unknown code', { name: 'LauncherAuthError', code: 'ERR_NOPE' }],
    ['the right name with a lower-case code', { name: 'LauncherAuthError', code: 'err_closed' }],
    ['the right name with a numeric code', { name: 'LauncherAuthError', code: 1 }],
    ['the right name and no code', { name: 'LauncherAuthError' }],
    [
      'the right name with a code named like an Object.prototype member',
      { name: 'LauncherAuthError', code: 'constructor' },
    ],
    ['the right name with __proto__ as code', { name: 'LauncherAuthError', code: '__proto__' }],
    ['null', null],
    ['undefined', undefined],
    ['a string naming the code', 'ERR_CLOSED'],
    ['a number', 42],
    ['a TypeError', new TypeError('`store` must be a SecretStore')],
  ])('is false for %s', (_, value) => {
    expect(isLauncherAuthError(value)).toBe(false);
    expect(isLauncherAuthError(value, 'ERR_CLOSED')).toBe(false);
  });

  it('narrows to the code it was given', () => {
    const value: unknown = new LauncherAuthError('ERR_KEY_ROTATED', 'rotated');
    expect(isLauncherAuthError(value, 'ERR_KEY_ROTATED')).toBe(true);
    if (isLauncherAuthError(value, 'ERR_KEY_ROTATED')) {
      expectTypeOf(value.code).toEqualTypeOf<'ERR_KEY_ROTATED'>();
      expectTypeOf(value).toExtend<LauncherAuthError>();
    } else {
      expect.unreachable('the guard refused a LauncherAuthError');
    }
    const any: unknown = value;
    if (isLauncherAuthError(any)) expectTypeOf(any.code).toEqualTypeOf<LauncherAuthErrorCode>();
  });
});
