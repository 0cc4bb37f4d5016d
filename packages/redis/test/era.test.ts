// When an instance may trust the Redis it talks to (era.ts): the era a read starts, and the quarantine after a
// change of era, on times passed in (no clock read).
import { describe, expect, it } from 'vitest';
import { Era } from '../src/era.js';
import type { Observed } from '../src/reply.js';

const LEASE = 1000;
const DRIFT = 100;

const seen = (serverId: string, ownSeq: number): Observed => ({
  generation: 1,
  id: 'a',
  prev: '',
  serverId,
  epoch: 'epoch',
  ownSeq,
});

describe('Era', () => {
  it('a first renewal on the Redis that open() read from starts nothing new: trust at once', () => {
    const era = new Era(LEASE, DRIFT);
    era.begin(seen('first', 0), 0);
    expect(era.observe(seen('first', 1), 10)).toBe(false);
    expect(era.mayTrust(10)).toBe(true);
  });

  it('a first renewal answered by another Redis than the one open() read from quarantines for a lease', () => {
    const era = new Era(LEASE, DRIFT);
    era.begin(seen('first', 0), 0);
    // Redis came back from an older dump before this instance's first renewal was answered.
    expect(era.observe(seen('restored', 1), 500)).toBe(true);
    expect(era.mayTrust(500 + LEASE + DRIFT - 1)).toBe(false);
    expect(era.mayTrust(500 + LEASE + DRIFT)).toBe(true);
  });

  it('without a read first, the first renewal starts the era with no quarantine', () => {
    const era = new Era(LEASE, DRIFT);
    expect(era.observe(seen('restored', 1), 500)).toBe(true);
    expect(era.mayTrust(500)).toBe(true);
  });

  it('a read taken in after a renewal it was sent before changes nothing, though it shows an older renewal number', () => {
    const era = new Era(LEASE, DRIFT);
    era.begin(seen('first', 0), 0);
    era.observe(seen('first', 3), 10);
    era.confirmed(3);
    era.begin(seen('first', 2), 20);
    expect(era.mayTrust(20)).toBe(true);
    expect(era.same(seen('first', 3))).toBe(true);
    expect(era.completeFrom()).toBe(LEASE + DRIFT);
  });

  it('an answer sent before a renewal Redis confirmed, taken in after it, is not a loss (a read of the acknowledgements)', () => {
    const era = new Era(LEASE, DRIFT);
    era.begin(seen('first', 0), 0);
    era.observe(seen('first', 3), 10);
    era.confirmed(3);
    const atSend = era.confirmedSeq;
    era.observe(seen('first', 4), 20);
    era.confirmed(4);
    // Redis ran the read before renewal 4; its answer shows 3.
    expect(era.observe(seen('first', 3), 21, atSend)).toBe(false);
    expect(era.mayTrust(21)).toBe(true);
    // The same answer judged against the present is a table that lost renewal 4.
    expect(era.observe(seen('first', 3), 22)).toBe(true);
    expect(era.mayTrust(22)).toBe(false);
  });

  it('an answer without the table, sent before any renewal of this instance was confirmed, is not a lost table', () => {
    const era = new Era(LEASE, DRIFT);
    const noTable: Observed = { ...seen('first', 0), epoch: null };
    era.begin(noTable, 0);
    const atSend = era.confirmedSeq;
    // The renewal that creates the table, then a read Redis ran before it, taken in after its answer.
    expect(era.observe(seen('first', 2), 10)).toBe(true);
    era.confirmed(2);
    expect(era.observe(noTable, 10, atSend)).toBe(false);
    expect(era.mayTrust(10)).toBe(true);
    expect(era.same(seen('first', 3))).toBe(true);
    // Sent once that renewal was confirmed, the same answer is a table that was lost.
    expect(era.observe(noTable, 20)).toBe(true);
    expect(era.mayTrust(20)).toBe(false);
  });

  it("an entry removed by a rotation's housekeeping (same Redis, same table) is not a loss; an older renewal number is", () => {
    const era = new Era(LEASE, DRIFT);
    era.begin(seen('first', 0), 0);
    era.observe(seen('first', 5), 10);
    era.confirmed(5);
    expect(era.observe(seen('first', 0), 2000)).toBe(false);
    expect(era.mayTrust(2000)).toBe(true);
    expect(era.observe(seen('first', 2), 2010)).toBe(true);
    expect(era.mayTrust(2010)).toBe(false);
  });

  it('an answer of the server the era left, to a command sent before the one that began the era, changes nothing', () => {
    const era = new Era(LEASE, DRIFT);
    era.begin(seen('first', 0), 0);
    era.observe(seen('first', 1), 10, undefined, 5);
    era.confirmed(1);
    // A save sent at 20 waits for its replicas; the slot moves; a renewal sent at 30 is answered by the new server.
    expect(era.observe(seen('moved', 2), 40, undefined, 30)).toBe(true);
    era.confirmed(2);
    // The save's answer, which the server the slot left sent before the move, is taken in after that renewal's.
    expect(era.observe(seen('first', 1), 50, 1, 20)).toBe(false);
    expect(era.same(seen('moved', 2))).toBe(true);
    expect(era.quarantineUntil).toBe(40 + LEASE + DRIFT);
    // So the next renewal on the new server, after a lease, starts no second quarantine.
    expect(era.observe(seen('moved', 3), 1200, undefined, 1190)).toBe(false);
    expect(era.mayTrust(1200)).toBe(true);
    // An answer of the former server to a command sent after the move was seen is a change of server again.
    expect(era.observe(seen('first', 1), 1300, undefined, 1250)).toBe(true);
    expect(era.mayTrust(1300)).toBe(false);
  });

  it('an answer of another server, to a command sent before the one that began the era, comes from a server left behind', () => {
    const era = new Era(LEASE, DRIFT);
    era.begin(seen('first', 0), 0);
    era.observe(seen('first', 1), 10, undefined, 5);
    // No change of server yet: an answer of another one is the start of one, not a server left behind.
    expect(era.behind(seen('promoted', 0), 15)).toBe(false);
    // A save sent at 20 to the primary; a failover; a renewal sent at 30 is answered by the promoted replica.
    expect(era.observe(seen('promoted', 2), 40, undefined, 30)).toBe(true);
    expect(era.behind(seen('first', 1), 20)).toBe(true);
    // Not the era's own server, and not an answer to a command sent once the change was seen.
    expect(era.behind(seen('promoted', 2), 20)).toBe(false);
    expect(era.behind(seen('first', 1), 30)).toBe(false);
  });

  it('an entry missing from another Redis is a loss', () => {
    const era = new Era(LEASE, DRIFT);
    era.begin(seen('first', 0), 0);
    era.observe(seen('first', 5), 10);
    era.confirmed(5);
    expect(era.observe(seen('restarted', 0), 2000)).toBe(true);
    expect(era.mayTrust(2000)).toBe(false);
  });
});
