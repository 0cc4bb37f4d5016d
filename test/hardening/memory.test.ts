// No cache keyed by attacker input: a million rejected authenticate() calls with distinct forged tokens leave
// the live heap within a few MB of where it started. Measured in a child Node process run with --expose-gc,
// so full collections before each reading show live objects only.
//
// Calls: LAUNCHER_AUTH_MEMORY_CALLS; by default a million in the deep tier and 250,000 in `npm test`, where a cache
// of one entry per forged token would already hold ~50 MB, six times the bound.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, envCount, fixtureCommand, reportFigures, type FixtureCommand } from './fixtures/support.js';
import { budget } from '../support/machine.js';
import { deepOr } from '../support/tier.js';

const CALLS = envCount('LAUNCHER_AUTH_MEMORY_CALLS', deepOr(1_000_000, 250_000));
const MB = 1024 * 1024;
/** "Within a few MB": a cache of one entry per forged token would hold ~200 MB after a million. */
const BOUND = 8 * MB;

let command: FixtureCommand;
beforeAll(async () => {
  command = await fixtureCommand('forged-heap.ts');
});
afterAll(async () => {
  await command?.dispose();
});

interface Report {
  count: number;
  before: number;
  after: number;
  samples: number[];
  accepted: number;
  reasons: Record<string, number>;
  real: boolean;
  ms: number;
}

describe('memory under a flood of forged tokens', () => {
  it(
    `${CALLS} distinct forged tokens, all refused: heap growth under 8 MB at every quarter`,
    async () => {
      const child = spawn(process.execPath, ['--expose-gc', ...command.args, String(CALLS)], {
        cwd: REPO,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => void (out += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => void (err += chunk));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect({ code, err: err.slice(-1_000) }).toEqual({ code: 0, err: '' });
      const report = JSON.parse(out) as Report;
      reportFigures('memory', {
        calls: report.count,
        beforeMB: (report.before / MB).toFixed(2),
        deltaMB: (Math.max(...report.samples) / MB).toFixed(2),
        ms: report.ms,
      });

      expect(report.count).toBe(CALLS);
      expect(report.accepted).toBe(0);
      // Every forgery got as far as the signature check (or the header check that follows it), none further.
      expect(report.reasons).toEqual({ invalid: CALLS });
      expect(report.real).toBe(true);
      for (const growth of report.samples) expect(growth).toBeLessThan(BOUND);
    },
    budget(60_000),
  );
});
