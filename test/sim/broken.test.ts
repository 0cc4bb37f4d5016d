// The simulator's invariants can fail: a protocol that trusts the instance table after an empty restart is caught.
import { describe, expect, it } from 'vitest';
import { TRUSTS_TABLE_AFTER_RESTART } from './broken.js';
import { explore } from './run.js';

describe('the simulator against a deliberately broken protocol', () => {
  it('finds a schedule where a table trusted after a restart lets a revoked token through, with its seed and trace', () => {
    const result = explore(1, 20_000, TRUSTS_TABLE_AFTER_RESTART);
    expect(result.failure).toBeDefined();
    const report = result.failure?.report ?? '';
    expect(report).toMatch(/^seed \d+: /);
    expect(report).toMatch(/npm run simulate -- --seed \d+/);
    expect(report).toMatch(/restarted empty|restarted from a snapshot|failed over/);
    expect(report).toMatch(/VIOLATION/);
  }, 120_000);
});
