// The `replicas` option of @launcher-auth/redis, as the type checker sees it.
import { describe, expectTypeOf, it } from 'vitest';
import type { RedisSecretStoreOptions } from '@launcher-auth/redis';

describe('@launcher-auth/redis types', () => {
  it("replicas takes { count: 'majority' | number, timeout? } or false", () => {
    expectTypeOf<RedisSecretStoreOptions['replicas']>().toEqualTypeOf<
      { count: number | 'majority'; timeout?: number } | false | undefined
    >();
    expectTypeOf<{ count: 'majority' }>().toExtend<NonNullable<RedisSecretStoreOptions['replicas']>>();
    expectTypeOf<{ count: 2; timeout: 500 }>().toExtend<NonNullable<RedisSecretStoreOptions['replicas']>>();
    expectTypeOf<'majority'>().not.toExtend<RedisSecretStoreOptions['replicas']>();
    expectTypeOf<true>().not.toExtend<RedisSecretStoreOptions['replicas']>();
  });
});
