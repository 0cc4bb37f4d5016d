// The lint rules that keep test/README.md's rules (scripts/eslint-test-rules.mjs), run through ESLint's Node API with
// the repository's own config on planted snippets: each violation is reported by its rule, the mended code is not,
// and the same code under test/support/ or the simulator's packages/redis/test/sim/ is left alone.
import { describe, expect, it } from 'vitest';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

// The repository's config, which decides which files each rule applies to, without its type-aware rules: these rules
// need no types, and loading the TypeScript projects would cost the quick tier some twenty seconds.
const eslint = new ESLint({ cwd: process.cwd(), overrideConfig: [tseslint.configs.disableTypeChecked] });
const PLUGIN = 'launcher-auth-tests/';

/** The launcher-auth-tests rules reported on `code`, linted as if it were the file at `path`. */
async function reported(code: string, path: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path });
  return (result?.messages ?? [])
    .map((message) => message.ruleId ?? `fatal: ${message.message}`)
    .filter((rule) => rule.startsWith(PLUGIN) || rule.startsWith('fatal'))
    .map((rule) => rule.replace(PLUGIN, ''));
}

const PLANTED = 'test/lint-rules.test.ts';

describe('the test-suite lint rules', () => {
  it('no-wall-clock-wait: a sleep, a timer and timers/promises in a test are reported; the same in test/support/ is not', async () => {
    const sleep = `export async function slow(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 50));
}
`;
    expect(await reported(sleep, PLANTED)).toEqual(['no-wall-clock-wait']);
    expect(await reported(sleep, 'test/support/poll.ts')).toEqual([]);
    const interval = `export function drip(write: () => void): NodeJS.Timeout {
  return globalThis.setInterval(write, 20);
}
`;
    expect(await reported(interval, PLANTED)).toEqual(['no-wall-clock-wait']);
    const promises = `import { setTimeout as later } from 'node:timers/promises';
export const slow = (): Promise<void> => later(50);
`;
    expect(await reported(promises, PLANTED)).toEqual(['no-wall-clock-wait']);
    // A socket's idle timeout is a method of its own, not a wait.
    const idle = `import type { ClientRequest } from 'node:http';
export const idle = (request: ClientRequest): ClientRequest => request.setTimeout(5_000);
`;
    expect(await reported(idle, PLANTED)).toEqual([]);
    // The simulator's clock is simulated: its files are left out.
    expect(await reported(sleep, 'packages/redis/test/sim/world.ts')).toEqual([]);
  });

  it('no-token-identity: a token compared with === or !== inside expect() is reported; toBeSameToken is not', async () => {
    const planted = `import { expect } from 'vitest';
export function check(authority: { issue(): string }, token: string, view: { token: string }): void {
  expect(authority.issue() === token).toBe(true);
  expect(view.token !== token).toBe(false);
}
`;
    expect(await reported(planted, PLANTED)).toEqual(['no-token-identity', 'no-token-identity']);
    const mended = `import { expect } from 'vitest';
export function check(authority: { issue(): string }, token: string, view: { token: string }): number {
  expect(authority.issue()).toBeSameToken(token);
  expect(view.token).not.toBeSameToken(token);
  expect(token === undefined).toBe(false);
  // A comparison that feeds a tally fails through the count the test asserts, never by printing a token.
  return authority.issue() === token ? 1 : 0;
}
`;
    expect(await reported(mended, PLANTED)).toEqual([]);
  });

  it('no-polling-loop: a loop that awaits and sleeps, or that watches a deadline, is reported; until() is not', async () => {
    const sleeping = `export async function wait(ready: () => boolean): Promise<void> {
  while (!ready()) await new Promise((resolve) => setTimeout(resolve, 5));
}
`;
    expect(await reported(sleeping, PLANTED)).toEqual(['no-polling-loop', 'no-wall-clock-wait']);
    const deadline = `export async function wait(ready: () => Promise<boolean>): Promise<boolean> {
  const end = performance.now() + 1_000;
  while (performance.now() < end) if (await ready()) return true;
  return false;
}
`;
    expect(await reported(deadline, PLANTED)).toEqual(['no-polling-loop']);
    const helper = `import { expect } from 'vitest';
import { until } from './support/poll.js';
export async function wait(ready: () => boolean): Promise<void> {
  expect(await until(ready)).toBe(true);
  for (const step of [1, 2, 3]) await Promise.resolve(step);
}
`;
    expect(await reported(helper, PLANTED)).toEqual([]);
  });

  it('disable-reason: an eslint-disable comment without its reason is reported; one with it is not', async () => {
    const bare = `// eslint-disable-next-line launcher-auth-tests/no-wall-clock-wait
export const slow = (): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, 5));
`;
    expect(await reported(bare, PLANTED)).toEqual(['disable-reason']);
    const reasoned = `// eslint-disable-next-line launcher-auth-tests/no-wall-clock-wait -- a jitter: where the kill lands varies
export const slow = (): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, 5));
`;
    expect(await reported(reasoned, PLANTED)).toEqual([]);
  });
});
