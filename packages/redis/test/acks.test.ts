// The rotating instance's side of the Redis protocol (acks.ts), read by read: when a rotation resolves, and when a
// table entry that never acknowledged may be removed (only once the lease behind it is certainly over).
import { describe, expect, it } from 'vitest';
import { AckWait } from '../src/acks.js';
import type { PendingReply } from '../src/reply.js';
import { Era } from '../src/era.js';
import type { Observed } from '../src/reply.js';

const OPTIONS = { leaseMs: 1000, driftMargin: 100, commandTimeout: 500 } as const;
const STALE = OPTIONS.leaseMs + OPTIONS.driftMargin;

const observed = (generation: number, id: string): Observed => ({
  generation,
  id,
  prev: '',
  serverId: 'run',
  epoch: 'epoch',
  ownSeq: 1,
});

function pending(generation: number, id: string, waiting: PendingReply['waiting']): PendingReply {
  return { ...observed(generation, id), waiting };
}

/** A wait for generation 2 ('b'), saved at `savedAt` by an instance that has known this Redis since 0. */
function waitFor(savedAt: number): AckWait {
  const era = new Era(OPTIONS.leaseMs, OPTIONS.driftMargin);
  era.observe(observed(1, 'a'), 0);
  return new AckWait({ generation: 2, id: 'b', savedAt, saveReply: observed(2, 'b'), era, options: OPTIONS });
}

describe('AckWait: entries of instances that never acknowledge', () => {
  it('resolved at the bound: an entry first seen less than a lease ago is removed later, at first sight + the bound', () => {
    const savedAt = 10_000;
    const wait = waitFor(savedAt);
    const dead = [['dead', 7]] as const;
    // First seen 3 ms after the save: the renewal behind it ran before that read.
    expect(wait.read(pending(2, 'b', dead), savedAt + 3, Infinity)).toEqual({ drop: [] });
    // The read that resolves lands 1 ms after the bound: 2 ms too early to remove the entry.
    const step = wait.read(pending(2, 'b', dead), wait.bound + 1, Infinity);
    expect(step.outcome).toBe('resolved');
    expect(step.drop).toEqual([]);
    expect(step.dropAt).toEqual([['dead', 7, savedAt + 3 + STALE]]);
  });

  it('an entry seen unchanged for longer than a lease is removed at once', () => {
    const savedAt = 10_000;
    const wait = waitFor(savedAt);
    wait.read(pending(2, 'b', [['dead', 7]]), savedAt + 3, Infinity);
    const step = wait.read(pending(2, 'b', [['dead', 7]]), savedAt + 3 + STALE, Infinity);
    expect(step).toEqual({ outcome: 'resolved', drop: [['dead', 7]], dropAt: [] });
  });

  it('an entry renewed since it was first seen is timed from the renewal seen last', () => {
    const savedAt = 10_000;
    const wait = waitFor(savedAt);
    wait.read(pending(2, 'b', [['slow', 7]]), savedAt + 3, Infinity);
    // Renewed (on another record, during a rollback) between two reads: a new lease began.
    wait.read(pending(2, 'b', [['slow', 8]]), savedAt + 500, Infinity);
    const step = wait.read(pending(2, 'b', [['slow', 8]]), wait.bound + 1, Infinity);
    expect(step.outcome).toBe('resolved');
    expect(step.drop).toEqual([]);
    expect(step.dropAt).toEqual([['slow', 8, savedAt + 500 + STALE]]);
  });

  it('nothing is left to remove when every instance acknowledged', () => {
    const wait = waitFor(10_000);
    const step = wait.read(pending(2, 'b', []), 10_004, Infinity);
    expect(step).toEqual({ outcome: 'resolved', drop: [] });
  });
});

describe("AckWait: this instance's own lease (a second layer under the store's renewal before resolving)", () => {
  it('never resolves once its own lease is over, before the bound or at it', () => {
    const wait = waitFor(10_000);
    // Every instance acknowledged, on a table known for longer than a lease: only the lease, over at 10_004, stops it.
    expect(wait.read(pending(2, 'b', []), 10_005, 10_004)).toEqual({ drop: [] });
    expect(wait.read(pending(2, 'b', []), wait.bound + 1, wait.bound)).toEqual({ drop: [] });
    // The same reads while the lease lasts resolve.
    expect(waitFor(10_000).read(pending(2, 'b', []), 10_005, 10_006).outcome).toBe('resolved');
    expect(wait.read(pending(2, 'b', []), wait.bound + 1, wait.bound + 2).outcome).toBe('resolved');
  });
});

describe('AckWait: a record that is no longer there', () => {
  it('replaced by a newer rotation: superseded', () => {
    const wait = waitFor(10_000);
    expect(wait.read(pending(3, 'c', []), 10_004, Infinity)).toEqual({ outcome: 'superseded', drop: [] });
  });

  it('gone back to an older record: lost', () => {
    const wait = waitFor(10_000);
    expect(wait.read(pending(1, 'a', []), 10_004, Infinity)).toEqual({ outcome: 'lost', drop: [] });
  });

  it('gone back to a record of another line, at a higher generation: lost, since that record never replaced this one', () => {
    // Saved on the other side before this one: its line reaches back to generation 1 and names no record of 2 or more
    // but its own side's, so it never replaced 'b'.
    const wait = waitFor(10_000);
    const other = {
      ...pending(5, 'x', []),
      prev: 'w',
      line: {
        floor: 1,
        ids: [
          { id: 'w', generation: 4 },
          { id: 'a', generation: 1 },
        ],
      },
    };
    expect(wait.read(other, 10_004, Infinity)).toEqual({ outcome: 'lost', drop: [] });
  });

  it('replaced by a record of its own line at a higher generation: superseded', () => {
    const wait = waitFor(10_000);
    const newer = {
      ...pending(4, 'd', []),
      prev: 'c',
      line: {
        floor: 1,
        ids: [
          { id: 'c', generation: 3 },
          { id: 'b', generation: 2 },
        ],
      },
    };
    expect(wait.read(newer, 10_004, Infinity)).toEqual({ outcome: 'superseded', drop: [] });
  });

  it('replaced by the rollback marker, even at a higher generation: lost, since no other secret is current', () => {
    const wait = waitFor(10_000);
    expect(wait.read(pending(3, 'rollback:x', []), 10_004, Infinity)).toEqual({ outcome: 'lost', drop: [] });
  });
});

/** An era that takes in its first answer and no other: a change of Redis or table never starts a new wait. */
class MissesChanges extends Era {
  #began = false;

  override observe(...args: Parameters<Era['observe']>): boolean {
    if (this.#began) return false;
    this.#began = true;
    return super.observe(...args);
  }
}

describe("AckWait: a table of another Redis or another table (a second layer under the era's change)", () => {
  it('is never taken as complete, even by an era that missed the change', () => {
    const era = new MissesChanges(OPTIONS.leaseMs, OPTIONS.driftMargin);
    era.observe(observed(1, 'a'), 0);
    const wait = new AckWait({
      generation: 2,
      id: 'b',
      savedAt: 10_000,
      saveReply: observed(2, 'b'),
      era,
      options: OPTIONS,
    });
    // Every instance of these tables acknowledged, long after the era began and before the bound: only whether the
    // table is the era's decides.
    const elsewhere = [
      { ...pending(2, 'b', []), serverId: 'restarted' },
      { ...pending(2, 'b', []), epoch: 'recreated' },
      { ...pending(2, 'b', []), epoch: null },
    ];
    for (const reply of elsewhere) expect(wait.read(reply, 10_005, Infinity)).toEqual({ drop: [] });
    expect(wait.read(pending(2, 'b', []), 10_005, Infinity)).toEqual({ outcome: 'resolved', drop: [] });
  });
});

describe("AckWait: the bound's drift margin (a second layer under the holder's)", () => {
  it("outlasts the trust of a holder that keeps no margin of its own (driftMargin: 0), on a clock slower by less than the rotating instance's margin", () => {
    const savedAt = 10_000;
    const wait = waitFor(savedAt);
    // The holder renewed just before the save; with no margin its trust lasts leaseMs on its own clock, which runs
    // slower than the rotating instance's by driftMargin - 1 ms over a lease: on the rotating instance's clock it
    // trusts until savedAt + leaseMs + driftMargin - 1, and it has not acknowledged.
    const holderTrustsUntil = savedAt + OPTIONS.leaseMs + OPTIONS.driftMargin - 1;
    const step = wait.read(pending(2, 'b', [['holder', 7]]), holderTrustsUntil - 1, Infinity);
    expect(step.outcome).toBeUndefined();
    expect(wait.bound).toBeGreaterThan(holderTrustsUntil);
  });
});
