// The list of mutants (`npm run mutants`) still fits the code: a refactor that moves a mutated text is noticed here,
// not at the next mutation run. Running the mutants is not part of the tests (it takes many minutes).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MUTANTS } from './mutant-list.js';
import { mutate, occurrences, someFailed, verdictOf } from './mutants.js';

const source = (file: string): string => readFileSync(new URL(`../../../../${file}`, import.meta.url), 'utf8');

describe('the mutants of the Redis protocol', () => {
  it('are at least 25, at least 5 of them in the Lua scripts, with unique ids', () => {
    expect(MUTANTS.length).toBeGreaterThanOrEqual(25);
    expect(MUTANTS.filter((mutant) => mutant.file === 'packages/redis/src/scripts.ts').length).toBeGreaterThanOrEqual(
      5,
    );
    expect(new Set(MUTANTS.map((mutant) => mutant.id)).size).toBe(MUTANTS.length);
  });

  it('each find their text exactly once in their file, and change it', () => {
    const misplaced = MUTANTS.filter((mutant) => occurrences(source(mutant.file), mutant.find) !== 1);
    expect(misplaced.map((mutant) => mutant.id)).toEqual([]);
    const unchanged = MUTANTS.filter((mutant) => mutate(mutant, source(mutant.file)) === source(mutant.file));
    expect(unchanged.map((mutant) => mutant.id)).toEqual([]);
  });

  it('name, where a test catches them instead of the simulator, a test that the named file holds', () => {
    const named = MUTANTS.flatMap((mutant) => (mutant.test === undefined ? [] : [mutant.test]));
    expect(named.length).toBeGreaterThanOrEqual(8);
    const missing = named.filter((test) => !source(test.file).includes(test.name));
    expect(missing).toEqual([]);
  });

  it("read a named test's failure from what vitest printed", () => {
    expect(someFailed(1, ' Tests  1 failed | 11 passed (12)')).toBe(true);
    expect(someFailed(1, ' Tests  \u001b[1m\u001b[31m1 failed\u001b[39m\u001b[22m | 11 passed (12)')).toBe(true);
    expect(someFailed(0, ' Tests  12 passed (12)')).toBe(false);
    // No test ran (a name that matches none), or vitest itself failed: not a failing test.
    expect(someFailed(1, 'No test files found, exiting with code 1')).toBe(false);
    expect(someFailed(1, ' Tests  0 failed | 12 skipped (12)')).toBe(false);
  });

  it('refuse a text that occurs twice, naming the mutant', () => {
    const mutant = { id: 'twice', file: 'x.ts', find: 'a', replace: 'b', what: '' };
    expect(() => mutate(mutant, 'a a')).toThrow('mutant twice: its text occurs 2 times in x.ts, not exactly once');
    expect(() => mutate(mutant, 'c')).toThrow('mutant twice: its text occurs 0 times in x.ts, not exactly once');
  });

  it("read the simulator's verdict from what it printed", () => {
    expect(verdictOf(1, '12 schedules, 9 events in 0.1 s\nseed 12: i1-ab trusts revoked key k1\nreplay: ...')).toEqual({
      kind: 'caught',
      seed: 12,
      violation: 'i1-ab trusts revoked key k1',
      schedules: 12,
    });
    expect(verdictOf(0, '50000 schedules, 9 events in 80.0 s (625 schedules/s)\n')).toEqual({
      kind: 'survived',
      schedules: 50_000,
    });
    expect(verdictOf(1, 'TypeError: boom\n    at x')).toEqual({ kind: 'crashed', message: 'exit 1: TypeError: boom' });
  });
});
